// The kernels validation runs around a candidate (compiled by nvcc into the library): random inputs,
// NaN poison and guards, |x| copies, and the elementwise comparison with the tolerance of
// tune/tolerance.hpp.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

namespace cmt {

/// Fills a rows x cols matrix (row stride ld) with uniform values in [-1, 1) from a counter-based
/// generator keyed by seed; the padding columns [cols, ld) get NaN so reads outside the matrix show.
void fill_random_matrix(float* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, cudaStream_t stream);
/// Sets count floats to the bit pattern `bits` (NaN poison or guard sentinels).
void fill_bits(float* p, int64_t count, uint32_t bits, cudaStream_t stream);
/// dst[i] = |src[i]| for count elements (NaN padding stays NaN).
void abs_copy(float* dst, const float* src, int64_t count, cudaStream_t stream);

/// Aggregate of one comparison; filled on the device.
struct CompareStats {
  uint32_t bad_elements;      // error ratio >= 1, NaN or Inf
  uint32_t max_ratio_bits;    // float bits of the largest error ratio
  uint32_t max_abs_err_bits;  // float bits of the largest |value - reference| (finite only)
  uint32_t guard_violations;  // guard or padding elements that changed
  uint32_t first_bad_row;     // row and column of one bad element (0xffffffff if none)
  uint32_t first_bad_col;
};

/// Compares the M x N block of c (stride ldc) with ref, using gemm_tolerance with abs_ab = |A||B|
/// and abs_c0 = |C0| (abs_c0 may be null when beta == 0). Also checks that c's padding columns
/// [N, ldc) still hold `pad_bits`. Accumulates into stats (device memory, zeroed by the caller).
void compare_gemm(const float* c, const float* ref, const float* abs_ab, const float* abs_c0, int m, int n, int ldc,
                  int k, float alpha, float beta, uint32_t pad_bits, CompareStats* stats, cudaStream_t stream);
/// Counts elements of p[0, count) whose bits differ from `bits` into stats->guard_violations.
void check_bits(const float* p, int64_t count, uint32_t bits, CompareStats* stats, cudaStream_t stream);

}  // namespace cmt
