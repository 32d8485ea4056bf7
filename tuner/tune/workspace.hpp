// Device buffers for one problem: random inputs, cuBLAS references for validation, and tightly
// packed copies for timing.
#pragma once

#include <cstdint>

#include "core/types.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/gpu.hpp"

namespace cmt {

/// Leading dimensions of one row-major layout.
struct Layout {
  int64_t lda = 0, ldb = 0, ldc = 0;
};

/// alpha/beta pairs every candidate is validated with: one with beta != 0, one with beta == 0 and
/// NaN in C. Timing uses alpha = 1, beta = 0.
struct ValidationCase {
  float alpha;
  float beta;
};
constexpr ValidationCase k_validation_cases[] = {{0.75f, -1.25f}, {1.25f, 0.0f}};
constexpr float k_timing_alpha = 1.0f;
constexpr float k_timing_beta = 0.0f;

/// Bit patterns written around and between rows of C.
constexpr uint32_t k_pad_bits = 0x7fc00000u;     // quiet NaN: padding columns of every matrix
constexpr uint32_t k_guard_bits = 0x7fa5a5a5u;   // before and after C's allocation
constexpr int64_t k_guard_floats = 1024;          // 4 KiB before C (keeps it 256-byte aligned); after C, this plus one row

class ProblemWorkspace {
 public:
  /// Allocates and fills everything, and computes the references with cuBLAS. Leading dimensions
  /// are the matrix widths rounded up to a multiple of ld_align (1: tightly packed).
  ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream, const CublasHandle& cublas,
                   int64_t ld_align = 1);

  /// Device memory a workspace for this problem needs, in bytes.
  static size_t bytes_needed(const Problem& problem, int64_t ld_align = 1);
  /// Leading dimensions used for timing, and for validation (8 more, the extra columns NaN).
  static Layout timing_layout(const Problem& problem, int64_t ld_align = 1);
  static Layout validation_layout(const Problem& problem, int64_t ld_align = 1);

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
  /// Guard floats after C: a whole row more than before it, so a write to row M is caught.
  static int64_t c_guard_after(int64_t ldc) { return k_guard_floats + ldc; }
  int64_t c_guard_after() const { return c_guard_after(m_validation.ldc); }

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

}  // namespace cmt
