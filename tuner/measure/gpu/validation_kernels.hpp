// The kernels validation runs around a candidate (compiled by nvcc into the library): random inputs,
// NaN poison and guards, |x|, the exact INT32 reference GEMM, and the elementwise comparison with
// the tolerance of measure/tolerance.hpp (exact equality for INT32), for one matrix or a strided batch
// of them. Every buffer holds elements of one DType; counts, offsets, leading dimensions and strides
// count those elements.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

#include "core/types.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/protocol.hpp"

namespace cmt {

/// Fills p[0, span) with a strided batch of rows x cols matrices (row stride ld, `stride` elements
/// from one matrix to the next; 0: one matrix): matrix elements get values from a counter-based
/// generator keyed by seed and the element's offset, uniform in [-1, 1) for f32 and f64 (standard
/// normal with InputDistribution::normal), whole numbers uniform in [-i32_bound, i32_bound] for i32;
/// everything else (the padding columns [cols, ld), the gaps between matrices, anything past the
/// last one) gets the type's padding pattern (pad_bits: NaN for the floats), so reads outside the
/// matrices show.
void fill_random_batch(void* p, DType dtype, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                       uint64_t seed, cudaStream_t stream, int32_t i32_bound = k_i32_small_input,
                       InputDistribution distribution = InputDistribution::uniform);
/// One matrix: fill_random_batch over rows * ld.
void fill_random_matrix(void* p, DType dtype, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                        cudaStream_t stream, int32_t i32_bound = k_i32_small_input);
/// Sets count elements to the bit pattern `bits` (its low 32 bits for f32 and i32).
void fill_bits(void* p, DType dtype, int64_t count, uint64_t bits, cudaStream_t stream);
/// dst[i] = |src[i]| for count elements of f32 or f64 (NaN padding stays NaN); dst == src is allowed.
void abs_copy(void* dst, const void* src, DType dtype, int64_t count, cudaStream_t stream);

/// The buffer of C under test: `lead` guard elements, then `batch` matrices of m rows (row stride
/// ldc, of which n columns are C and the rest padding), `stride` elements apart (0 when batch == 1),
/// then `tail` guard elements after the last one. Everything that is not C's M x N block is checked
/// bit for bit.
struct CWorkLayout {
  int64_t lead = 0;
  int64_t m = 0, n = 0, ldc = 0;
  int64_t batch = 1, stride = 0;
  int64_t tail = 0;
  DType dtype = DType::f32;
  /// Elements of one matrix with its padding columns.
  int64_t matrix() const { return m * ldc; }
  /// Elements of the whole allocation.
  int64_t total() const { return lead + (batch > 1 ? (batch - 1) * stride : 0) + matrix() + tail; }
};

/// Resets the C buffer before a launch: guard bits everywhere outside the matrices, and in matrix b
/// (padding columns included) src[b * src_stride + i], or `fill_bits` everywhere when src is null
/// (the poison of beta == 0).
void prepare_c(void* allocation, const CWorkLayout& layout, uint64_t guard_bits, const void* src, int64_t src_stride,
               uint64_t fill_bits, cudaStream_t stream);

/// Aggregate of one comparison; filled on the device. Offsets count elements from the start of the
/// C allocation; ~0 when there is none.
struct CompareStats {
  unsigned long long first_bad;    // lowest offset of a bad element of C
  unsigned long long first_guard;  // lowest offset of a changed guard or padding element
  uint32_t bad_elements;           // error ratio >= 1, NaN or Inf (i32: not equal)
  uint32_t max_ratio_bits;         // float bits of the largest error ratio
  uint32_t max_abs_err_bits;       // float bits of the largest |value - reference| (finite only)
  uint32_t guard_violations;       // guard elements (before, between, after the matrices) that changed
  uint32_t pad_violations;         // padding columns [N, ldc) of a matrix that changed
  uint32_t reserved;
};

/// Sets stats to "nothing found yet" (counts 0, offsets ~0), on the stream.
void reset_stats(CompareStats* stats, cudaStream_t stream);

/// Compares every C of the allocation (laid out as `layout`, of layout.dtype) with ref, matrix b of
/// which starts at b * ref_stride (also that of abs_ab and c0): f32 and f64 with gemm_tolerance
/// (abs_ab = |A||B|, and |c0|; c0 may be null when beta == 0), i32 for exact equality (abs_ab and c0
/// unused, may be null). alpha and beta are the case's, exact in the element type. Checks that
/// padding columns still hold pad_bits and everything outside the matrices guard_bits. Accumulates
/// into stats (device memory, reset by the caller).
/// fp64_reference: the elements are f32 and ref, abs_ab and c0 are FP64 (Reference::fp64), held to
/// the FP32 tolerance.
void compare_gemm(const void* allocation, const CWorkLayout& layout, const void* ref, const void* abs_ab,
                  const void* c0, int64_t ref_stride, int k, double alpha, double beta, uint64_t pad_bits,
                  uint64_t guard_bits, CompareStats* stats, cudaStream_t stream, bool fp64_reference = false);

/// dst[i] = (double)src[i] for count FP32 elements (exact; NaN stays NaN).
void widen(void* dst, const void* src, int64_t count, cudaStream_t stream);

/// The INT32 reference: C = alpha * op(A) op(B) + beta * C over args (every layout and batch, a
/// stride of 0 broadcasting A or B), every multiply and add modulo 2^32 (computed in uint32, read
/// back as two's complement int32), C not read when beta == 0. Exact, so any summation order gives
/// the same result; args.dtype must be i32. Returns the launch status.
cudaError_t reference_gemm_i32(const GemmArgs& args, cudaStream_t stream);

}  // namespace cmt
