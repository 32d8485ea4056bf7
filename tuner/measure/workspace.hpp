// Device buffers for one problem, laid out as tune/protocol.hpp says: random inputs, cuBLAS
// references for validation, and tightly packed copies for timing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "tune/protocol.hpp"

namespace cmt {

class ProblemWorkspace {
 public:
  /// Allocates and fills everything, and computes the references with cuBLAS. Leading dimensions
  /// are the matrix widths rounded up to a multiple of ld_align (1: tightly packed).
  ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream, const CublasHandle& cublas,
                   int64_t ld_align = 1);

  /// Device memory a workspace for this problem needs, in bytes.
  static size_t bytes_needed(const Problem& problem, int64_t ld_align = 1);

  const Problem& problem() const { return m_problem; }
  const Layout& timing() const { return m_timing; }
  const Layout& validation() const { return m_validation; }

  // Validation set (validation_layout).
  const float* a_val() const { return m_a_val.floats(); }
  const float* b_val() const { return m_b_val.floats(); }
  const float* c0_val() const { return m_c0_val.floats(); }
  const float* abs_c0_val() const { return m_abs_c0_val.floats(); }
  const float* abs_ab_val() const { return m_abs_ab_val.floats(); }
  const float* reference(int case_index) const { return m_ref[case_index].floats(); }
  /// C under test, with guards around it: c_work() points past the leading guard.
  float* c_work() const { return m_c_work.floats() + k_guard_floats; }
  float* c_work_allocation() const { return m_c_work.floats(); }
  int64_t c_val_elements() const { return m_problem.m * m_validation.ldc; }
  int64_t c_guard_after() const { return cmt::c_guard_after(m_validation.ldc); }

  /// The arguments of a validation run: alpha and beta of the case, the validation buffers and C
  /// between its guards.
  GemmArgs validation_args(const ValidationCase& vc) const;
  /// The arguments of a timed run: the timing buffers, k_timing_alpha and k_timing_beta.
  GemmArgs timing_args() const;

  // Timing set (timing_layout).
  const float* a_time() const { return m_a_time.floats(); }
  const float* b_time() const { return m_b_time.floats(); }
  float* c_time() const { return m_c_time.floats(); }

 private:
  Problem m_problem;
  Layout m_timing, m_validation;
  DeviceBuffer m_a_val, m_b_val, m_c0_val, m_abs_c0_val, m_abs_ab_val, m_ref[2], m_c_work;
  DeviceBuffer m_a_time, m_b_time, m_c_time;
};

/// Device memory the workspaces of these problems need together, in bytes.
size_t workspace_bytes(const std::vector<Problem>& problems);

}  // namespace cmt
