// The kernels validation runs around a candidate (compiled by nvcc into the library): random inputs,
// NaN poison and guards, |x|, and the elementwise comparison with the tolerance of
// tune/tolerance.hpp, for one matrix or a strided batch of them.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

namespace cmt {

/// Fills p[0, span) with a strided batch of rows x cols matrices (row stride ld, `stride` floats
/// from one matrix to the next; 0: one matrix): matrix elements get uniform values in [-1, 1) from a
/// counter-based generator keyed by seed and the element's offset; everything else (the padding
/// columns [cols, ld), the gaps between matrices, anything past the last one) gets NaN (k_pad_bits),
/// so reads outside the matrices show.
void fill_random_batch(float* p, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride, uint64_t seed,
                       cudaStream_t stream);
/// One matrix: fill_random_batch over rows * ld.
void fill_random_matrix(float* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, cudaStream_t stream);
/// Sets count floats to the bit pattern `bits` (NaN poison or guard sentinels).
void fill_bits(float* p, int64_t count, uint32_t bits, cudaStream_t stream);
/// dst[i] = |src[i]| for count elements (NaN padding stays NaN); dst == src is allowed.
void abs_copy(float* dst, const float* src, int64_t count, cudaStream_t stream);

/// The buffer of C under test: `lead` guard floats, then `batch` matrices of m rows (row stride
/// ldc, of which n columns are C and the rest padding), `stride` floats apart (0 when batch == 1),
/// then `tail` guard floats after the last one. Everything that is not C's M x N block is checked
/// bit for bit.
struct CWorkLayout {
  int64_t lead = 0;
  int64_t m = 0, n = 0, ldc = 0;
  int64_t batch = 1, stride = 0;
  int64_t tail = 0;
  /// Floats of one matrix with its padding columns.
  int64_t matrix() const { return m * ldc; }
  /// Floats of the whole allocation.
  int64_t total() const { return lead + (batch > 1 ? (batch - 1) * stride : 0) + matrix() + tail; }
};

/// Resets the C buffer before a launch: guard bits everywhere outside the matrices, and in matrix b
/// (padding columns included) src[b * src_stride + i], or `fill_bits` everywhere when src is null
/// (NaN poison for beta == 0).
void prepare_c(float* allocation, const CWorkLayout& layout, uint32_t guard_bits, const float* src, int64_t src_stride,
               uint32_t fill_bits, cudaStream_t stream);

/// Aggregate of one comparison; filled on the device. Offsets count floats from the start of the
/// C allocation; ~0 when there is none.
struct CompareStats {
  unsigned long long first_bad;    // lowest offset of a bad element of C
  unsigned long long first_guard;  // lowest offset of a changed guard or padding float
  uint32_t bad_elements;           // error ratio >= 1, NaN or Inf
  uint32_t max_ratio_bits;         // float bits of the largest error ratio
  uint32_t max_abs_err_bits;       // float bits of the largest |value - reference| (finite only)
  uint32_t guard_violations;       // guard floats (before, between, after the matrices) that changed
  uint32_t pad_violations;         // padding columns [N, ldc) of a matrix that changed
  uint32_t reserved;
};

/// Sets stats to "nothing found yet" (counts 0, offsets ~0), on the stream.
void reset_stats(CompareStats* stats, cudaStream_t stream);

/// Compares every C of the allocation (laid out as `layout`) with ref, matrix b of which starts at
/// b * ref_stride (also that of abs_ab and c0), using gemm_tolerance with abs_ab = |A||B| and |c0|
/// (c0 may be null when beta == 0); checks that padding columns still hold pad_bits and everything
/// outside the matrices guard_bits. Accumulates into stats (device memory, reset by the caller).
void compare_gemm(const float* allocation, const CWorkLayout& layout, const float* ref, const float* abs_ab,
                  const float* c0, int64_t ref_stride, int k, float alpha, float beta, uint32_t pad_bits,
                  uint32_t guard_bits, CompareStats* stats, cudaStream_t stream);

}  // namespace cmt
