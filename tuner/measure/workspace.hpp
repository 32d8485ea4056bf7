// Device buffers for one problem, laid out as tune/protocol.hpp says: random inputs, cuBLAS
// references for validation, and copies in the timing layout for timing. Every buffer holds the
// problem's whole batch, A and B in their stored shapes (stored_a, stored_b).
//
// Validation set (validation_layout): one allocation, the "arena", holding in order
//   A | B | C0 | |A||B| | reference 0 | reference 1 | [NaN tail]
// each part starting 256-byte aligned. A and B lie at the validation strides (a broadcast operand,
// stride 0, is one matrix); C0, |A||B| and the references hold `batch` matrices of M x ldc each,
// ref_stride() apart (no guards: they are only read). Everything in the arena that is not a matrix
// element (padding columns, gaps, the tail) is NaN. The arena is long enough that a kernel which
// treats a broadcast operand as packed reads only arena memory (later inputs, NaN) and fails
// validation instead of faulting. C under test has its own allocation, c_layout(): a guard region
// of k_guard_floats, the batch of C at the validation stride_c (c_guard_after(ldc) guard floats or
// more between consecutive matrices), c_guard_after(ldc) guard floats after the last.
//
// Timing set (timing_layout): A, B and C, each the batch at the timing strides.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/validation_kernels.hpp"
#include "tune/protocol.hpp"

namespace cmt {

class ProblemWorkspace {
 public:
  /// Allocates and fills everything on `stream`, and computes the references with cuBLAS (whose
  /// handle should be bound to the same stream; another one costs device synchronizations).
  /// Leading dimensions are the stored widths rounded up to a multiple of ld_align (1: tightly
  /// packed).
  ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream, const CublasHandle& cublas,
                   int64_t ld_align = 1);

  /// Device memory a workspace for this problem needs at its peak (construction included), in bytes.
  static size_t bytes_needed(const Problem& problem, int64_t ld_align = 1);

  const Problem& problem() const { return m_problem; }
  const Layout& timing() const { return m_timing; }
  const Layout& validation() const { return m_validation; }

  // Validation set (validation_layout).
  const float* a_val() const { return arena(m_off_a); }
  const float* b_val() const { return arena(m_off_b); }
  const float* c0_val() const { return arena(m_off_c0); }
  const float* abs_ab_val() const { return arena(m_off_abs_ab); }
  const float* reference(int case_index) const { return arena(m_off_ref[case_index]); }
  /// Floats from one matrix of C0, |A||B| or a reference to the next (a multiple of 64).
  int64_t ref_stride() const { return m_ref_stride; }
  /// Where the matrices and guards of C under test lie in c_work_allocation().
  const CWorkLayout& c_layout() const { return m_c_layout; }
  /// C under test: the first matrix, past the leading guard.
  float* c_work() const { return c_work_allocation() + m_c_layout.lead; }
  float* c_work_allocation() const { return m_c_work.floats(); }

  /// The arguments of a validation run: alpha and beta of the case, the validation buffers and C
  /// between its guards, the validation strides and the problem's batch and ops.
  GemmArgs validation_args(const ValidationCase& vc) const;
  /// The arguments of a timed run: the timing buffers and strides, k_timing_alpha and k_timing_beta.
  GemmArgs timing_args() const;

  // Timing set (timing_layout).
  const float* a_time() const { return m_a_time.floats(); }
  const float* b_time() const { return m_b_time.floats(); }
  float* c_time() const { return m_c_time.floats(); }

 private:
  float* arena(int64_t offset) const { return m_arena.floats() + offset; }

  Problem m_problem;
  Layout m_timing, m_validation;
  int64_t m_off_a = 0, m_off_b = 0, m_off_c0 = 0, m_off_abs_ab = 0, m_off_ref[2] = {0, 0};
  int64_t m_ref_stride = 0;
  CWorkLayout m_c_layout;
  DeviceBuffer m_arena, m_c_work;
  DeviceBuffer m_a_time, m_b_time, m_c_time;
};

/// Device memory the workspaces of these problems need together, in bytes.
size_t workspace_bytes(const std::vector<Problem>& problems);

}  // namespace cmt
