// The consumer harness's device code (checks.cuh).
#include "checks.cuh"

namespace {

constexpr int k_threads = 256;
constexpr int k_blocks = 1024;

// ---------------------------------------------------------------------------------------------
// Device helpers
// ---------------------------------------------------------------------------------------------

__device__ uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Random values in +-[0.25, 1]: never zero, so a dropped or doubled term always shows.
__global__ void fill_random_kernel(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t r = mix(seed * 0x9e3779b97f4a7c15ULL + i);
    const float magnitude = 0.25f + 0.75f * static_cast<float>(r >> 8) * (1.0f / 16777216.0f);
    p[i] = (r & 1u) ? magnitude : -magnitude;
  }
}

__global__ void abs_copy_kernel(const float* src, float* dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = fabsf(src[i]);
}

// The exact result of C = beta*C0 (no product): what alpha == 0 or K == 0 must give.
__global__ void scale_reference_kernel(const float* c0, float* ref, size_t n, float beta) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    ref[i] = beta == 0.0f ? 0.0f : beta * c0[i];
}


// Allowed |ours - ref| per element, as in cm-tune's tuner/measure/tolerance.hpp:
//   2 (K + 4) 2^-24 (|alpha| (|A||B|)_ij + |beta| |C0_ij|) + 1e-30
__device__ float tolerance(int k, float alpha, float beta, float abs_ab, float c0) {
  const float c_term = beta == 0.0f ? 0.0f : fabsf(beta) * fabsf(c0);   // C0 may be NaN when beta == 0
  return 2.0f * static_cast<float>(k + 4) * 5.9604645e-08f * (fabsf(alpha) * abs_ab + c_term) + 1e-30f;
}

// Walks the whole C allocation: inside the M x N block ours must be within tolerance of the
// reference; everywhere else (ldc padding, the offset, the guard after C) it must be untouched.
// A batch: `batch` matrices of C, stride_c floats apart (the gaps between them count as outside).
__global__ void compare_kernel(const float* ours, const float* ref, const float* c0, const float* abs_ab, size_t total,
                        size_t offset, int M, int N, int K, int ldc, float alpha, float beta, CompareResult* out,
                        int batch, size_t stride_c) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    bool inside = false;
    size_t row = 0, col = 0, b = 0;
    if (i >= offset) {
      const size_t j = i - offset;
      b = stride_c > 0 ? j / stride_c : 0;
      const size_t in_matrix = stride_c > 0 ? j % stride_c : j;
      row = in_matrix / static_cast<size_t>(ldc);
      col = in_matrix % static_cast<size_t>(ldc);
      inside = b < static_cast<size_t>(batch) && row < static_cast<size_t>(M) && col < static_cast<size_t>(N);
    }
    if (inside) {
      const float tol =
          tolerance(K, alpha, beta, abs_ab ? abs_ab[(b * static_cast<size_t>(M) + row) * N + col] : 0.0f, c0[i]);
      const float v = ours[i], r = ref[i];
      const float ratio = (isfinite(v) && isfinite(r)) ? fabsf(v - r) / tol : INFINITY;
      if (!(ratio <= 1.0f)) atomicAdd(&out->bad, 1ULL);
      atomicMax(&out->max_ratio_bits, __float_as_uint(ratio == ratio ? ratio : INFINITY));
    } else if (__float_as_uint(ours[i]) != __float_as_uint(c0[i])) {
      atomicAdd(&out->outside_written, 1ULL);
    }
  }
}

}  // namespace

void fill_random(float* p, size_t n, uint64_t seed) { fill_random_kernel<<<k_blocks, k_threads>>>(p, n, seed); }

void abs_copy(const float* src, float* dst, size_t n) { abs_copy_kernel<<<k_blocks, k_threads>>>(src, dst, n); }

void scale_reference(const float* c0, float* ref, size_t n, float beta) {
  scale_reference_kernel<<<64, k_threads>>>(c0, ref, n, beta);
}

void compare(const float* ours, const float* ref, const float* c0, const float* abs_ab, size_t total, size_t offset,
             int M, int N, int K, int ldc, float alpha, float beta, CompareResult* out, int batch, size_t stride_c) {
  compare_kernel<<<k_blocks, k_threads>>>(ours, ref, c0, abs_ab, total, offset, M, N, K, ldc, alpha, beta, out, batch,
                                          stride_c);
}
