#include <algorithm>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "cuda/check.hpp"
#include "measure/gpu/validation_kernels.hpp"
#include "measure/tolerance.hpp"

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

#define CMT_GRID_STRIDE(i, count) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (count); i += (int64_t)gridDim.x * blockDim.x)

// Bit patterns <-> elements: the low 32 bits for float and int32_t, all 64 for double.
template <class T>
__device__ T from_bits(uint64_t bits);
template <>
__device__ float from_bits<float>(uint64_t bits) { return __uint_as_float(static_cast<uint32_t>(bits)); }
template <>
__device__ double from_bits<double>(uint64_t bits) { return __longlong_as_double(static_cast<long long>(bits)); }
template <>
__device__ int32_t from_bits<int32_t>(uint64_t bits) { return static_cast<int32_t>(static_cast<uint32_t>(bits)); }

__device__ uint64_t to_bits(float v) { return __float_as_uint(v); }
__device__ uint64_t to_bits(double v) { return static_cast<uint64_t>(__double_as_longlong(v)); }
__device__ uint64_t to_bits(int32_t v) { return static_cast<uint32_t>(v); }

/// The random value of element i: float and double uniform in [-1, 1), int32_t in [-bound, bound].
template <class T>
__device__ T random_element(uint64_t seed, int64_t i, int32_t bound);
template <>
__device__ float random_element<float>(uint64_t seed, int64_t i, int32_t) {
  // 24 random bits -> [-1, 1)
  const uint32_t x = static_cast<uint32_t>(splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 40);
  return static_cast<float>(x) * (2.0f / 16777216.0f) - 1.0f;
}
template <>
__device__ double random_element<double>(uint64_t seed, int64_t i, int32_t) {
  // 53 random bits -> [-1, 1)
  const uint64_t x = splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 11;
  return static_cast<double>(x) * (2.0 / 9007199254740992.0) - 1.0;
}
template <>
__device__ int32_t random_element<int32_t>(uint64_t seed, int64_t i, int32_t bound) {
  const uint64_t x = splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull)) >> 32;
  const uint64_t values = 2 * static_cast<uint64_t>(bound) + 1;
  return static_cast<int32_t>(static_cast<int64_t>(x % values) - bound);
}

/// A standard normal value for element i: Box-Muller on two 53-bit uniforms drawn from the element's
/// hash, in double (a float rounds it).
__device__ double normal_element(uint64_t seed, int64_t i) {
  const uint64_t h1 = splitmix64(seed ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull));
  const uint64_t h2 = splitmix64(h1 ^ 0x6a09e667f3bcc909ull);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]: log is finite
  const double u2 = static_cast<double>(h2 >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
  return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

/// Element i of an input: random_element, or for the floats a standard normal value when `normal`.
template <class T>
__device__ T input_element(uint64_t seed, int64_t i, int32_t bound, bool normal) {
  if constexpr (!std::is_same_v<T, int32_t>) {
    if (normal) return static_cast<T>(normal_element(seed, i));
  }
  return random_element<T>(seed, i, bound);
}

template <class T>
__global__ void fill_random_kernel(T* p, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                                   uint64_t seed, int32_t bound, uint64_t pad, bool normal) {
  const int64_t matrix = rows * ld;
  CMT_GRID_STRIDE(i, span) {
    const int64_t r = stride > 0 ? i % stride : i;         // offset within its matrix
    const bool inside = r < matrix && r % ld < cols;
    p[i] = inside ? input_element<T>(seed, i, bound, normal) : from_bits<T>(pad);
  }
}

template <class T>
__global__ void fill_bits_kernel(T* p, int64_t count, uint64_t bits) {
  CMT_GRID_STRIDE(i, count) p[i] = from_bits<T>(bits);
}

template <class T>
__global__ void abs_copy_kernel(T* dst, const T* src, int64_t count) {
  CMT_GRID_STRIDE(i, count) dst[i] = fabs(src[i]);
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

template <class T>
__global__ void prepare_c_kernel(T* p, CWorkLayout l, int64_t total, uint64_t guard_bits, const T* src,
                                 int64_t src_stride, uint64_t fill) {
  CMT_GRID_STRIDE(i, total) {
    int64_t b = 0, r = 0;
    if (!locate(l, i, b, r))
      p[i] = from_bits<T>(guard_bits);
    else
      p[i] = src ? src[b * src_stride + r] : from_bits<T>(fill);
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

/// The error ratio (>= 1: bad) and |value - expected| (negative: not finite) of one element.
struct ElementError {
  float ratio;
  float abs_err;
};

/// Floating point: the tolerance of measure/tolerance.hpp for elements of T, taken in R (T; or double
/// for FP32 values against an FP64 reference, Reference::fp64, from the FP64 |A||B| and |C0|).
template <class T, class R = T>
__device__ ElementError element_error(T value, R expected, int k, R alpha, R beta, const R* abs_ab, const R* c0,
                                      int64_t j) {
  const R tol = gemm_tolerance<R, T>(k, alpha, beta, abs_ab[j], c0 ? fabs(c0[j]) : R(0));
  const R ratio = gemm_error_ratio<R>(value, expected, tol);
  const bool finite = isfinite(value) && isfinite(expected);
  return {static_cast<float>(ratio), finite ? static_cast<float>(fabs(static_cast<R>(value) - expected)) : -1.0f};
}

/// INT32: exact.
template <>
__device__ ElementError element_error<int32_t, int32_t>(int32_t value, int32_t expected, int, int32_t, int32_t,
                                                        const int32_t*, const int32_t*, int64_t) {
  const long long diff = static_cast<long long>(value) - static_cast<long long>(expected);
  return {gemm_error_ratio_exact(value, expected), static_cast<float>(diff < 0 ? -diff : diff)};
}

/// T: the elements of C under test; R: those of the reference, |A||B| and C0 (T, or double for FP32
/// values checked against FP64).
template <class T, class R = T>
__global__ void compare_kernel(const T* c, CWorkLayout l, int64_t total, const R* ref, const R* abs_ab, const R* c0,
                               int64_t ref_stride, int k, R alpha, R beta, uint64_t pad_bits, uint64_t guard_bits,
                               CompareStats* stats) {
  CMT_GRID_STRIDE(i, total) {
    const T value = c[i];
    int64_t b = 0, r = 0;
    if (!locate(l, i, b, r)) {
      if (to_bits(value) != guard_bits) {
        atomicAdd(&stats->guard_violations, 1u);
        atomicMin(&stats->first_guard, static_cast<unsigned long long>(i));
      }
      continue;
    }
    if (r % l.ldc >= l.n) {
      if (to_bits(value) != pad_bits) {
        atomicAdd(&stats->pad_violations, 1u);
        atomicMin(&stats->first_guard, static_cast<unsigned long long>(i));
      }
      continue;
    }
    const int64_t j = b * ref_stride + r;
    const ElementError e = element_error<T, R>(value, ref[j], k, alpha, beta, abs_ab, c0, j);
    // Non-negative floats order like their bit patterns, so atomicMax on the bits works.
    atomicMax(&stats->max_ratio_bits, __float_as_uint(e.ratio));
    if (e.abs_err >= 0.0f) atomicMax(&stats->max_abs_err_bits, __float_as_uint(e.abs_err));
    if (!(e.ratio < 1.0f)) {
      atomicAdd(&stats->bad_elements, 1u);
      atomicMin(&stats->first_bad, static_cast<unsigned long long>(i));
    }
  }
}

/// The INT32 reference, tiled through shared memory: each block computes a k_ref_tile square of C
/// of one matrix of the batch (blockIdx.z + z_first). Products and sums are taken in uint32, whose
/// arithmetic is defined modulo 2^32: the two's complement wrap of the INT32 semantics.
constexpr int k_ref_tile = 16;

struct RefGemmI32 {
  int m, n, k;
  uint32_t alpha, beta;
  const int32_t* a;
  int lda;
  const int32_t* b;
  int ldb;
  int32_t* c;
  int ldc;
  long long stride_a, stride_b, stride_c;
  bool trans_a, trans_b;
};

__global__ void reference_gemm_i32_kernel(RefGemmI32 g, int z_first) {
  __shared__ uint32_t as[k_ref_tile][k_ref_tile + 1];  // as[m][k]
  __shared__ uint32_t bs[k_ref_tile][k_ref_tile + 1];  // bs[k][n]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * k_ref_tile, n0 = blockIdx.x * k_ref_tile;
  const long long z = static_cast<long long>(blockIdx.z) + z_first;
  const int32_t* a = g.a + z * g.stride_a;
  const int32_t* b = g.b + z * g.stride_b;
  int32_t* c = g.c + z * g.stride_c;
  uint32_t acc = 0;
  for (int k0 = 0; k0 < g.k; k0 += k_ref_tile) {
    // Consecutive threads (tx) read consecutive addresses of the stored matrix in every layout.
    if (g.trans_a) {  // stored K x M: element (m0 + tx, k0 + ty) is a[(k0 + ty) * lda + m0 + tx]
      const int row = m0 + tx, kk = k0 + ty;
      as[tx][ty] = row < g.m && kk < g.k ? static_cast<uint32_t>(a[static_cast<long long>(kk) * g.lda + row]) : 0u;
    } else {
      const int row = m0 + ty, kk = k0 + tx;
      as[ty][tx] = row < g.m && kk < g.k ? static_cast<uint32_t>(a[static_cast<long long>(row) * g.lda + kk]) : 0u;
    }
    if (g.trans_b) {  // stored N x K: element (k0 + tx, n0 + ty) is b[(n0 + ty) * ldb + k0 + tx]
      const int col = n0 + ty, kk = k0 + tx;
      bs[tx][ty] = col < g.n && kk < g.k ? static_cast<uint32_t>(b[static_cast<long long>(col) * g.ldb + kk]) : 0u;
    } else {
      const int col = n0 + tx, kk = k0 + ty;
      bs[ty][tx] = col < g.n && kk < g.k ? static_cast<uint32_t>(b[static_cast<long long>(kk) * g.ldb + col]) : 0u;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < k_ref_tile; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  const int row = m0 + ty, col = n0 + tx;
  if (row >= g.m || col >= g.n) return;
  int32_t* out = c + static_cast<long long>(row) * g.ldc + col;
  uint32_t value = g.alpha * acc;
  if (g.beta != 0u) value += g.beta * static_cast<uint32_t>(*out);  // beta == 0: C is not read
  *out = static_cast<int32_t>(value);
}


__global__ void widen_kernel(double* dst, const float* src, int64_t count) {
  CMT_GRID_STRIDE(i, count) dst[i] = static_cast<double>(src[i]);
}

}  // namespace

void fill_random_batch(void* p, DType dtype, int64_t span, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                       uint64_t seed, cudaStream_t stream, int32_t i32_bound, InputDistribution distribution) {
  if (span <= 0) return;
  const bool normal = distribution == InputDistribution::normal;
  visit_storage_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    fill_random_kernel<T><<<grid_for(span), k_threads, 0, stream>>>(static_cast<T*>(p), span, rows, cols, ld, stride,
                                                                     seed, i32_bound, pad_bits(dtype), normal);
  });
  CMT_CUDA_CHECK(cudaGetLastError());
}

void fill_random_matrix(void* p, DType dtype, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                        cudaStream_t stream, int32_t i32_bound) {
  fill_random_batch(p, dtype, rows * ld, rows, cols, ld, 0, seed, stream, i32_bound);
}

void fill_bits(void* p, DType dtype, int64_t count, uint64_t bits, cudaStream_t stream) {
  if (count <= 0) return;
  visit_storage_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    fill_bits_kernel<T><<<grid_for(count), k_threads, 0, stream>>>(static_cast<T*>(p), count, bits);
  });
  CMT_CUDA_CHECK(cudaGetLastError());
}

void abs_copy(void* dst, const void* src, DType dtype, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  if (dtype == DType::f64)
    abs_copy_kernel<double><<<grid_for(count), k_threads, 0, stream>>>(static_cast<double*>(dst),
                                                                       static_cast<const double*>(src), count);
  else if (dtype == DType::f32)
    abs_copy_kernel<float><<<grid_for(count), k_threads, 0, stream>>>(static_cast<float*>(dst),
                                                                      static_cast<const float*>(src), count);
  else
    throw InfraError("cm-tune", "abs_copy", "|x| of INT32 elements is never needed", __FILE__, __LINE__);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void prepare_c(void* allocation, const CWorkLayout& layout, uint64_t guard_bits, const void* src, int64_t src_stride,
               uint64_t fill, cudaStream_t stream) {
  const int64_t total = layout.total();
  visit_storage_type(layout.dtype, [&](auto zero) {
    using T = decltype(zero);
    prepare_c_kernel<T><<<grid_for(total), k_threads, 0, stream>>>(static_cast<T*>(allocation), layout, total,
                                                                    guard_bits, static_cast<const T*>(src), src_stride,
                                                                    fill);
  });
  CMT_CUDA_CHECK(cudaGetLastError());
}

void reset_stats(CompareStats* stats, cudaStream_t stream) {
  reset_stats_kernel<<<1, 1, 0, stream>>>(stats);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void widen(void* dst, const void* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  widen_kernel<<<grid_for(count), k_threads, 0, stream>>>(static_cast<double*>(dst), static_cast<const float*>(src),
                                                          count);
  CMT_CUDA_CHECK(cudaGetLastError());
}

void compare_gemm(const void* allocation, const CWorkLayout& layout, const void* ref, const void* abs_ab,
                  const void* c0, int64_t ref_stride, int k, double alpha, double beta, uint64_t pad_bits,
                  uint64_t guard_bits, CompareStats* stats, cudaStream_t stream, bool fp64_reference) {
  const int64_t total = layout.total();
  if (fp64_reference) {
    if (layout.dtype != DType::f32)
      throw InfraError("cm-tune", "compare_gemm", "an FP64 reference checks FP32 elements only", __FILE__, __LINE__);
    compare_kernel<float, double><<<grid_for(total), k_threads, 0, stream>>>(
        static_cast<const float*>(allocation), layout, total, static_cast<const double*>(ref),
        static_cast<const double*>(abs_ab), static_cast<const double*>(c0), ref_stride, k, alpha, beta, pad_bits,
        guard_bits, stats);
    CMT_CUDA_CHECK(cudaGetLastError());
    return;
  }
  visit_storage_type(layout.dtype, [&](auto zero) {
    using T = decltype(zero);
    // alpha and beta are exact in T (the validation cases are chosen so).
    compare_kernel<T><<<grid_for(total), k_threads, 0, stream>>>(
        static_cast<const T*>(allocation), layout, total, static_cast<const T*>(ref), static_cast<const T*>(abs_ab),
        static_cast<const T*>(c0), ref_stride, k, static_cast<T>(alpha), static_cast<T>(beta), pad_bits, guard_bits,
        stats);
  });
  CMT_CUDA_CHECK(cudaGetLastError());
}

cudaError_t reference_gemm_i32(const GemmArgs& args, cudaStream_t stream) {
  if (args.dtype != DType::i32 || !args.typed_consistently()) return cudaErrorInvalidValue;
  RefGemmI32 g{args.m,
               args.n,
               args.k,
               static_cast<uint32_t>(args.alpha.i32()),
               static_cast<uint32_t>(args.beta.i32()),
               args.a_as<int32_t>(),
               args.lda,
               args.b_as<int32_t>(),
               args.ldb,
               args.c_as<int32_t>(),
               args.ldc,
               args.stride_a,
               args.stride_b,
               args.stride_c,
               args.trans_a,
               args.trans_b};
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return cudaSuccess;
  const dim3 block(k_ref_tile, k_ref_tile, 1);
  const auto tiles = [](int extent) { return static_cast<unsigned>((extent + k_ref_tile - 1) / k_ref_tile); };
  // Grid z holds at most 65535 matrices: a larger batch takes several launches.
  for (int first = 0; first < args.batch; first += 65535) {
    const dim3 grid(tiles(args.n), tiles(args.m), static_cast<unsigned>(std::min(65535, args.batch - first)));
    reference_gemm_i32_kernel<<<grid, block, 0, stream>>>(g, first);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace cmt
