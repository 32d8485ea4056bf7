#include "cuda/check.hpp"
#include "measure/validation_kernels.hpp"
#include "tune/tolerance.hpp"

namespace cmt {

namespace {

constexpr int k_threads = 256;
constexpr uint32_t k_nan_bits = 0x7fc00000u;  // k_pad_bits of tune/protocol.hpp

__device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + k_threads - 1) / k_threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

#define CMT_GRID_STRIDE(i, count) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (count); i += (int64_t)gridDim.x * blockDim.x)

__global__ void fill_random_kernel(float* p, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                                   uint64_t seed) {
  const int64_t matrix = rows * ld;
  CMT_GRID_STRIDE(i, span) {
    const int64_t r = stride > 0 ? i % stride : i;         // offset within its matrix
    const bool inside = r < matrix && r % ld < cols;
    if (!inside) {
      p[i] = __uint_as_float(k_nan_bits);
    } else {
      // 24 random bits -> [-1, 1)
      const uint32_t x = static_cast<uint32_t>(splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 40);
      p[i] = static_cast<float>(x) * (2.0f / 16777216.0f) - 1.0f;
    }
  }
}

__global__ void fill_bits_kernel(float* p, int64_t count, uint32_t bits) {
  CMT_GRID_STRIDE(i, count) p[i] = __uint_as_float(bits);
}

__global__ void abs_copy_kernel(float* dst, const float* src, int64_t count) {
  CMT_GRID_STRIDE(i, count) dst[i] = fabsf(src[i]);
}

/// Where offset i of a C allocation lies: true and (matrix b, offset r within it) inside a matrix
/// (padding columns included), false in a guard region.
__device__ bool locate(const CWorkLayout& l, int64_t i, int64_t& b, int64_t& r) {
  const int64_t off = i - l.lead;
  if (off < 0) return false;
  if (l.batch > 1) {
    b = off / l.stride;
    r = off - b * l.stride;
    if (b >= l.batch) return false;
  } else {
    b = 0;
    r = off;
  }
  return r < l.m * l.ldc;
}

__global__ void prepare_c_kernel(float* p, CWorkLayout l, int64_t total, uint32_t guard_bits, const float* src,
                                 int64_t src_stride, uint32_t fill) {
  CMT_GRID_STRIDE(i, total) {
    int64_t b = 0, r = 0;
    if (!locate(l, i, b, r))
      p[i] = __uint_as_float(guard_bits);
    else
      p[i] = src ? src[b * src_stride + r] : __uint_as_float(fill);
  }
}

__global__ void reset_stats_kernel(CompareStats* s) {
  s->first_bad = ~0ull;
  s->first_guard = ~0ull;
  s->bad_elements = 0;
  s->max_ratio_bits = 0;
  s->max_abs_err_bits = 0;
  s->guard_violations = 0;
  s->pad_violations = 0;
  s->reserved = 0;
}

__global__ void compare_kernel(const float* c, CWorkLayout l, int64_t total, const float* ref, const float* abs_ab,
                               const float* c0, int64_t ref_stride, int k, float alpha, float beta, uint32_t pad_bits,
                               uint32_t guard_bits, CompareStats* stats) {
  CMT_GRID_STRIDE(i, total) {
    const float value = c[i];
    int64_t b = 0, r = 0;
    if (!locate(l, i, b, r)) {
      if (__float_as_uint(value) != guard_bits) {
        atomicAdd(&stats->guard_violations, 1u);
        atomicMin(&stats->first_guard, static_cast<unsigned long long>(i));
      }
      continue;
    }
    if (r % l.ldc >= l.n) {
      if (__float_as_uint(value) != pad_bits) {
        atomicAdd(&stats->pad_violations, 1u);
        atomicMin(&stats->first_guard, static_cast<unsigned long long>(i));
      }
      continue;
    }
    const int64_t j = b * ref_stride + r;
    const float expected = ref[j];
    const float tol = gemm_tolerance(k, alpha, beta, abs_ab[j], c0 ? fabsf(c0[j]) : 0.0f);
    const float ratio = gemm_error_ratio(value, expected, tol);
    // Non-negative floats order like their bit patterns, so atomicMax on the bits works.
    atomicMax(&stats->max_ratio_bits, __float_as_uint(ratio));
    if (isfinite(value) && isfinite(expected)) atomicMax(&stats->max_abs_err_bits, __float_as_uint(fabsf(value - expected)));
    if (!(ratio < 1.0f)) {
      atomicAdd(&stats->bad_elements, 1u);
      atomicMin(&stats->first_bad, static_cast<unsigned long long>(i));
    }
  }
}

}  // namespace

void fill_random_batch(float* p, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride, uint64_t seed,
                       cudaStream_t stream) {
  if (span <= 0) return;
  fill_random_kernel<<<grid_for(span), k_threads, 0, stream>>>(p, span, rows, cols, ld, stride, seed);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void fill_random_matrix(float* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, cudaStream_t stream) {
  fill_random_batch(p, rows * ld, rows, cols, ld, 0, seed, stream);
}

void fill_bits(float* p, int64_t count, uint32_t bits, cudaStream_t stream) {
  if (count <= 0) return;
  fill_bits_kernel<<<grid_for(count), k_threads, 0, stream>>>(p, count, bits);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void abs_copy(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  abs_copy_kernel<<<grid_for(count), k_threads, 0, stream>>>(dst, src, count);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void prepare_c(float* allocation, const CWorkLayout& layout, uint32_t guard_bits, const float* src, int64_t src_stride,
               uint32_t fill, cudaStream_t stream) {
  const int64_t total = layout.total();
  prepare_c_kernel<<<grid_for(total), k_threads, 0, stream>>>(allocation, layout, total, guard_bits, src, src_stride,
                                                              fill);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void reset_stats(CompareStats* stats, cudaStream_t stream) {
  reset_stats_kernel<<<1, 1, 0, stream>>>(stats);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void compare_gemm(const float* allocation, const CWorkLayout& layout, const float* ref, const float* abs_ab,
                  const float* c0, int64_t ref_stride, int k, float alpha, float beta, uint32_t pad_bits,
                  uint32_t guard_bits, CompareStats* stats, cudaStream_t stream) {
  const int64_t total = layout.total();
  compare_kernel<<<grid_for(total), k_threads, 0, stream>>>(allocation, layout, total, ref, abs_ab, c0, ref_stride, k,
                                                            alpha, beta, pad_bits, guard_bits, stats);
  CMT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cmt
