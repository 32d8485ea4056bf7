#include "cuda/check.hpp"
#include "measure/validation_kernels.hpp"
#include "tune/tolerance.hpp"

namespace cmt {

namespace {

constexpr int k_threads = 256;

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

__global__ void fill_random_kernel(float* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
  const int64_t total = rows * ld;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t col = i % ld;
    if (col >= cols) {
      p[i] = __int_as_float(0x7fc00000);
    } else {
      // 24 random bits -> [-1, 1)
      const uint32_t r = static_cast<uint32_t>(splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 40);
      p[i] = static_cast<float>(r) * (2.0f / 16777216.0f) - 1.0f;
    }
  }
}

__global__ void fill_bits_kernel(float* p, int64_t count, uint32_t bits) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = __uint_as_float(bits);
}

__global__ void abs_copy_kernel(float* dst, const float* src, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = fabsf(src[i]);
}

__global__ void compare_kernel(const float* c, const float* ref, const float* abs_ab, const float* abs_c0, int m, int n,
                               int ldc, int k, float alpha, float beta, uint32_t pad_bits, CompareStats* stats) {
  const int64_t total = static_cast<int64_t>(m) * ldc;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int row = static_cast<int>(i / ldc);
    const int col = static_cast<int>(i % ldc);
    if (col >= n) {
      if (__float_as_uint(c[i]) != pad_bits) atomicAdd(&stats->guard_violations, 1u);
      continue;
    }
    const float tol = gemm_tolerance(k, alpha, beta, abs_ab[i], abs_c0 ? abs_c0[i] : 0.0f);
    const float ratio = gemm_error_ratio(c[i], ref[i], tol);
    // Non-negative floats order like their bit patterns, so atomicMax on the bits works.
    atomicMax(&stats->max_ratio_bits, __float_as_uint(ratio));
    if (isfinite(c[i]) && isfinite(ref[i])) atomicMax(&stats->max_abs_err_bits, __float_as_uint(fabsf(c[i] - ref[i])));
    if (!(ratio < 1.0f)) {
      if (atomicAdd(&stats->bad_elements, 1u) == 0) {
        stats->first_bad_row = row;
        stats->first_bad_col = col;
      }
    }
  }
}

__global__ void check_bits_kernel(const float* p, int64_t count, uint32_t bits, CompareStats* stats) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    if (__float_as_uint(p[i]) != bits) atomicAdd(&stats->guard_violations, 1u);
}

}  // namespace

void fill_random_matrix(float* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, cudaStream_t stream) {
  fill_random_kernel<<<grid_for(rows * ld), k_threads, 0, stream>>>(p, rows, cols, ld, seed);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void fill_bits(float* p, int64_t count, uint32_t bits, cudaStream_t stream) {
  fill_bits_kernel<<<grid_for(count), k_threads, 0, stream>>>(p, count, bits);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void abs_copy(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  abs_copy_kernel<<<grid_for(count), k_threads, 0, stream>>>(dst, src, count);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void compare_gemm(const float* c, const float* ref, const float* abs_ab, const float* abs_c0, int m, int n, int ldc,
                  int k, float alpha, float beta, uint32_t pad_bits, CompareStats* stats, cudaStream_t stream) {
  compare_kernel<<<grid_for(static_cast<int64_t>(m) * ldc), k_threads, 0, stream>>>(c, ref, abs_ab, abs_c0, m, n, ldc,
                                                                                     k, alpha, beta, pad_bits, stats);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void check_bits(const float* p, int64_t count, uint32_t bits, CompareStats* stats, cudaStream_t stream) {
  check_bits_kernel<<<grid_for(count), k_threads, 0, stream>>>(p, count, bits, stats);
  CMT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cmt
