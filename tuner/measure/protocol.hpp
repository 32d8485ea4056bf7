// The measurement protocol: the layouts candidates are validated and timed in, the alpha/beta cases
// of validation, and the guard values around C. The GPU side (measure/) follows it; the pipeline
// records it (trial keys, baselines), so it lives here, free of CUDA.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

#include "core/types.hpp"

namespace cmt {

/// Leading dimensions and batch strides (elements; 0 for an unbatched problem or a broadcast
/// operand) of one row-major memory layout.
struct Layout {
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

/// Rows and columns of a matrix as stored (row-major).
struct Extent {
  int64_t rows = 0, cols = 0;
};
/// A as stored: M x K, or K x M when transposed.
inline Extent stored_a(const Problem& p) { return p.trans_a ? Extent{p.k, p.m} : Extent{p.m, p.k}; }
/// B as stored: K x N, or N x K when transposed.
inline Extent stored_b(const Problem& p) { return p.trans_b ? Extent{p.n, p.k} : Extent{p.k, p.n}; }
inline Extent stored_c(const Problem& p) { return Extent{p.m, p.n}; }

/// Elements a batch of `batch` matrices of `rows` rows (leading dimension ld) spans when each
/// starts `stride` after the previous one (0: one matrix, shared).
inline int64_t batch_span(int64_t batch, int64_t stride, int64_t rows, int64_t ld) {
  return (stride == 0 ? 0 : (batch - 1) * stride) + rows * ld;
}

/// Timing uses the tight layout: the stored matrices' widths rounded up to a multiple of ld_align
/// (1: packed), and the problem's strides (the packed ones become rows * ld).
Layout timing_layout(const Problem& problem, int64_t ld_align = 1);
/// Validation pads every leading dimension by 8 more (the extra columns hold NaN, or INT32's
/// padding value), which keeps every ld_multiple up to 8 that the timing layout meets. A batch's
/// matrices lie one after another (a stride of 0 stays 0), each starting 256-byte aligned (64
/// elements of any type); consecutive matrices of C have a guard region of c_guard_after(ldc)
/// elements between them.
Layout validation_layout(const Problem& problem, int64_t ld_align = 1);

/// alpha/beta pairs every candidate is validated with, per element type. FP32 and FP64: one with
/// beta != 0, one with beta == 0 and NaN in C. INT32: the same two on small inputs (no sum can
/// overflow), and a third on large inputs whose products and sums overflow, checked against the
/// wrapping reference. Timing uses alpha = 1, beta = 0 in every type.
struct ValidationCase {
  double alpha;                // exact in the element type (whole numbers for i32)
  double beta;
  bool large_inputs = false;   // i32: the overflowing inputs of validation_inputs_large
};
constexpr ValidationCase k_validation_cases[] = {{0.75, -1.25}, {1.25, 0.0}};  // f32 and f64
constexpr ValidationCase k_validation_cases_i32[] = {{3, -2}, {-5, 0}, {7, 3, true}};
/// The cases of one element type, in the order they run.
struct ValidationCases {
  const ValidationCase* first;
  size_t count;
  const ValidationCase* begin() const { return first; }
  const ValidationCase* end() const { return first + count; }
  size_t size() const { return count; }
  const ValidationCase& operator[](size_t i) const { return first[i]; }
};
inline ValidationCases validation_cases(DType dtype) {
  if (dtype == DType::i32) return {k_validation_cases_i32, std::size(k_validation_cases_i32)};
  return {k_validation_cases, std::size(k_validation_cases)};
}
constexpr int k_max_validation_cases = 3;
constexpr float k_timing_alpha = 1.0f;
constexpr float k_timing_beta = 0.0f;

/// Inputs of validation: FP32 and FP64 uniform in [-1, 1); INT32 whole numbers in
/// [-k_i32_small_input, k_i32_small_input], so |alpha op(A) op(B) + beta C| < 2^29 for every K up to
/// 2^20 (the largest dimension) and the cases above: nothing overflows and no correct result comes
/// near the sentinels below. The large inputs of the wrap check are uniform in
/// [-k_i32_large_input, k_i32_large_input): single products already overflow.
constexpr int32_t k_i32_small_input = 8;
constexpr int32_t k_i32_large_input = 1 << 20;

/// How the floating-point inputs of a workspace are drawn: uniform in [-1, 1) (what the tuner
/// validates and times on), or standard normal (mean 0, variance 1; `precision --data normal`).
/// INT32 inputs are whole numbers either way.
enum class InputDistribution : uint8_t { uniform, normal };
/// "uniform" or "normal".
const char* distribution_name(InputDistribution distribution);

/// Bit patterns written around and between rows of C. 32-bit elements (f32, i32) use the 32-bit
/// ones, f64 the 64-bit ones (pad_bits, guard_bits).
constexpr uint32_t k_pad_bits = 0x7fc00000u;    // quiet NaN: padding columns of every matrix
constexpr uint32_t k_guard_bits = 0x7fa5a5a5u;  // before and after C's allocation
constexpr uint64_t k_pad_bits_f64 = 0x7ff8000000000000ull;    // quiet NaN
constexpr uint64_t k_guard_bits_f64 = 0x7ff5a5a5a5a5a5a5ull;  // a signalling NaN, as k_guard_bits is
// INT32 has no NaN. Its padding, poison (beta == 0) and guard values are the same 32-bit patterns
// read as integers: 2143289344 and 2141562277, both above 2^30, which no correct result on the
// small inputs reaches (see k_i32_small_input). An element a kernel leaves unwritten when beta == 0
// therefore still holds the poison and differs from its expected value, as NaN does for floats.
// (A kernel that reads C when beta == 0 multiplies it by 0: for integers that is harmless and not
// detected.) On the large inputs C starts from C0 (beta != 0), never from the poison.
/// The padding and poison pattern of an element type, in its low dtype_bytes bytes.
inline uint64_t pad_bits(DType dtype) { return dtype == DType::f64 ? k_pad_bits_f64 : k_pad_bits; }
/// The guard pattern of an element type.
inline uint64_t guard_bits(DType dtype) { return dtype == DType::f64 ? k_guard_bits_f64 : k_guard_bits; }
constexpr int64_t k_guard_floats = 1024;         // elements before C (4 or 8 KiB: keeps it 256-byte aligned)
/// Guard elements after C: a whole row more than before it, so a write to row M is caught.
inline int64_t c_guard_after(int64_t ldc) { return k_guard_floats + ldc; }

// Whether an element type has a cuBLAS baseline is TypeInfo::cublas_baseline (core/dtype.hpp).
// Without one, a trial's ratio_to_cublas is NULL, a winner's is 0 (printed "n/a"), and winners rank
// by time as always.

/// Why a kernel's requirements rule out a layout of elements of `dtype`, or nullopt when they are
/// met. Workspace buffers come from cudaMalloc (256-byte aligned), so only the leading-dimension
/// multiple and the batch strides (each matrix must keep the alignment) can fail. An element is
/// always aligned to its own size, so align_bytes up to dtype_bytes asks nothing.
std::optional<std::string> unmet_requirements(const Requirements& requirements, const Layout& layout,
                                              DType dtype = DType::f32);

/// The watchdog on one launch when the user gives no --kernel-timeout: 200x cuBLAS on the same
/// problem, and at least 2 s. No kernel worth keeping is 200x slower than cuBLAS; the floor covers
/// small problems, where launch and clock ramp-up dominate. A problem without a cuBLAS baseline
/// (i32) passes the time it would take at the device's peak rate instead.
inline double default_kernel_timeout_ms(double cublas_ms) { return cublas_ms * 200.0 > 2000.0 ? cublas_ms * 200.0 : 2000.0; }

/// Names this protocol in every trial key: a change to it must change the tag.
constexpr const char* k_trial_protocol = "cm-tune-trial-v1;tight-ld;alpha=1,beta=0;validate=0.75/-1.25,1.25/0";

}  // namespace cmt
