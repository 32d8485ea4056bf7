// Device buffers for one problem, laid out as measure/protocol.hpp says: random inputs, references for
// validation (cuBLAS for f32 and f64, the exact wrapping kernel of validation_kernels.hpp for i32),
// and copies in the timing layout for timing. Every buffer holds the problem's whole batch, A and B
// in their stored shapes (stored_a, stored_b), as elements of the problem's type; offsets, strides
// and sizes below count those elements.
//
// Validation set (validation_layout): one allocation, the "arena", holding in order
//   A | B | C0 | |A||B| | reference per case | [i32: large A | large B] | [padding tail]
// each part starting 256-byte aligned. A and B lie at the validation strides (a broadcast operand,
// stride 0, is one matrix); C0, |A||B| and the references hold `batch` matrices of M x ldc each,
// ref_stride() apart (no guards: they are only read). INT32 has no |A||B| (it is compared exactly)
// and a third case on large inputs (the wrap check), with its own A and B. Everything in the arena
// that is not a matrix element (padding columns, gaps, the tail) holds the type's padding pattern
// (NaN for the floats). The arena is long enough that a kernel which treats a broadcast operand as
// packed reads only arena memory (later inputs, padding) and fails validation instead of faulting.
// C under test has its own allocation, c_layout(): a guard region of k_guard_floats elements, the
// batch of C at the validation stride_c (c_guard_after(ldc) guard elements or more between
// consecutive matrices), c_guard_after(ldc) guard elements after the last.
//
// Timing set (timing_layout): A, B and C, each the batch at the timing strides.
//
// A type validated against FP64 (Reference::fp64: tf32x3) stores its elements as f32 like f32
// does, and has a second allocation of doubles, laid out like the arena's parts:
//   A | B | C0 | |A||B| | FP64 reference per case
// (A, B and C0 widened exactly, the rest by cuBLAS DGEMM). The arena's reference slots then hold
// the FP32 SIMT reference's results (cuBLAS SGEMM), whose largest error against FP64, simt_ratio(),
// is the bar a candidate's must not exceed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/dtype.hpp"
#include "core/types.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/gpu/validation_kernels.hpp"
#include "measure/protocol.hpp"

namespace cmt {

/// Offsets, in doubles, of the parts of a workspace's FP64 allocation (total 0: none).
struct WideOffsets {
  int64_t a = 0, b = 0, c0 = 0, abs_ab = 0, ref[k_max_validation_cases] = {};
  int64_t total = 0;
};

class ProblemWorkspace {
 public:
  /// Allocates and fills everything on `stream`, and computes the references (cuBLAS, whose handle
  /// should be bound to the same stream, another one costs device synchronizations; or the INT32
  /// reference kernel). Leading dimensions are the stored widths rounded up to a multiple of
  /// ld_align (1: tightly packed). `distribution` draws the floating-point inputs (A, B and C0 of
  /// validation, and the timing buffers): uniform in [-1, 1) as the tuner does, or normal.
  ProblemWorkspace(const Problem& problem, uint64_t seed, cudaStream_t stream, const CublasHandle& cublas,
                   int64_t ld_align = 1, InputDistribution distribution = InputDistribution::uniform);

  /// Device memory a workspace for this problem needs at its peak (construction included), in bytes.
  static size_t bytes_needed(const Problem& problem, int64_t ld_align = 1);

  const Problem& problem() const { return m_problem; }
  /// The type the buffers hold (the problem's storage type).
  DType dtype() const { return storage_of(m_problem.dtype); }
  /// Whether the references are FP64 (Reference::fp64): reference(), abs_ab_val() and c0_ref() then
  /// point at doubles.
  bool fp64_reference() const { return type_info(m_problem.dtype).reference == Reference::fp64; }
  const Layout& timing() const { return m_timing; }
  const Layout& validation() const { return m_validation; }

  // Validation set (validation_layout).
  const void* a_val() const { return arena(m_off_a); }
  const void* b_val() const { return arena(m_off_b); }
  /// The inputs of a validation case: the large ones for the INT32 wrap check, else a_val, b_val.
  const void* a_of(const ValidationCase& vc) const { return arena(vc.large_inputs ? m_off_a_large : m_off_a); }
  const void* b_of(const ValidationCase& vc) const { return arena(vc.large_inputs ? m_off_b_large : m_off_b); }
  const void* c0_val() const { return arena(m_off_c0); }
  /// |A||B|, which scales the floating-point tolerance; null for i32.
  const void* abs_ab_val() const {
    if (fp64_reference()) return wide(m_wide_off.abs_ab);
    return type_info(m_problem.dtype).exact ? nullptr : arena(m_off_abs_ab);
  }
  /// C0 as the tolerance reads it (|C0| scales it where beta != 0).
  const void* c0_ref() const { return fp64_reference() ? wide(m_wide_off.c0) : c0_val(); }
  const void* reference(int case_index) const {
    return fp64_reference() ? wide(m_wide_off.ref[case_index]) : arena(m_off_ref[case_index]);
  }
  /// Reference::fp64: the FP32 SIMT reference's largest error ratio against FP64 in a case.
  double simt_ratio(int case_index) const { return m_simt_ratio[case_index]; }
  /// Elements from one matrix of C0, |A||B| or a reference to the next (a multiple of 64).
  int64_t ref_stride() const { return m_ref_stride; }
  /// Where the matrices and guards of C under test lie in c_work_allocation().
  const CWorkLayout& c_layout() const { return m_c_layout; }
  /// C under test: the first matrix, past the leading guard.
  void* c_work() const { return element(m_c_work.get(), m_c_layout.lead); }
  void* c_work_allocation() const { return m_c_work.get(); }

  /// The arguments of a validation run: alpha and beta of the case in the problem's type, the
  /// case's inputs and C between its guards, the validation strides and the problem's batch and ops.
  GemmArgs validation_args(const ValidationCase& vc) const;
  /// The arguments of a timed run: the timing buffers and strides, k_timing_alpha and k_timing_beta.
  GemmArgs timing_args() const;

  // Timing set (timing_layout).
  const void* a_time() const { return m_a_time.get(); }
  const void* b_time() const { return m_b_time.get(); }
  void* c_time() const { return m_c_time.get(); }

 private:
  void* element(void* base, int64_t offset) const { return static_cast<char*>(base) + offset * dtype_bytes(dtype()); }
  void* arena(int64_t offset) const { return element(m_arena.get(), offset); }
  void* wide(int64_t offset) const { return static_cast<char*>(m_wide.get()) + offset * int64_t(sizeof(double)); }
  /// Reference::fp64: the FP64 allocation, A, B and C0 widened into it and |A||B| by DGEMM (the
  /// constructor computes each case's FP64 reference beside its SGEMM result).
  void make_fp64_abs_ab(const GemmArgs& ref, int64_t span_a, int64_t span_b, cudaStream_t stream,
                        const CublasHandle& cublas, const std::function<void()>& around_cublas);
  void measure_simt_errors(cudaStream_t stream);

  Problem m_problem;
  Layout m_timing, m_validation;
  int64_t m_off_a = 0, m_off_b = 0, m_off_c0 = 0, m_off_abs_ab = 0;
  int64_t m_off_ref[k_max_validation_cases] = {};
  int64_t m_off_a_large = 0, m_off_b_large = 0;
  int64_t m_ref_stride = 0;
  CWorkLayout m_c_layout;
  WideOffsets m_wide_off;
  double m_simt_ratio[k_max_validation_cases] = {};
  DeviceBuffer m_arena, m_c_work, m_wide;
  DeviceBuffer m_a_time, m_b_time, m_c_time;
};

/// Device memory the workspaces of these problems need together, in bytes.
size_t workspace_bytes(const std::vector<Problem>& problems);

}  // namespace cmt
