#include "measure/gpu/seed_bmm.hpp"

#include <algorithm>
#include <cstdint>

#include "core/dtype.hpp"

namespace cmt {

namespace {

/// The product's arithmetic: the floats as they are, int32 in unsigned (wrapping) arithmetic.
template <class T>
struct Arith {
  using U = T;
};
template <>
struct Arith<int32_t> {
  using U = uint32_t;
};

template <class T>
struct SeedArgs {
  int m, n, k;
  T alpha, beta;
  const T* a;
  int lda;
  const T* b;
  int ldb;
  T* c;
  int ldc;
  long long stride_a, stride_b, stride_c;
  bool trans_a, trans_b;
};

template <class T>
__device__ T seed_a(const SeedArgs<T>& g, const T* a, int row, int kk) {
  return g.trans_a ? a[static_cast<long long>(kk) * g.lda + row] : a[static_cast<long long>(row) * g.lda + kk];
}
template <class T>
__device__ T seed_b(const SeedArgs<T>& g, const T* b, int kk, int col) {
  return g.trans_b ? b[static_cast<long long>(col) * g.ldb + kk] : b[static_cast<long long>(kk) * g.ldb + col];
}

template <class T>
__device__ void seed_store(const SeedArgs<T>& g, T* c, int row, int col, typename Arith<T>::U acc) {
  using U = typename Arith<T>::U;
  T* out = c + static_cast<long long>(row) * g.ldc + col;
  U value = static_cast<U>(g.alpha) * acc;
  if (g.beta != T(0)) value += static_cast<U>(g.beta) * static_cast<U>(*out);
  *out = static_cast<T>(value);
}

/// The seed's per-element kernel: thread (x, y) of the grid computes C[y][x] of matrix blockIdx.z.
template <class T>
__global__ void seed_naive_kernel(SeedArgs<T> g, int z_first) {
  using U = typename Arith<T>::U;
  const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= g.m || col >= g.n) return;
  const long long z = static_cast<long long>(blockIdx.z) + z_first;
  const T* a = g.a + z * g.stride_a;
  const T* b = g.b + z * g.stride_b;
  U acc = 0;
  for (int kk = 0; kk < g.k; ++kk) acc += static_cast<U>(seed_a(g, a, row, kk)) * static_cast<U>(seed_b(g, b, kk, col));
  seed_store(g, g.c + z * g.stride_c, row, col, acc);
}

/// The seed's tiled kernel: BLOCK_DIM x BLOCK_DIM tiles of A and B staged in shared memory.
template <class T, int BLOCK_DIM>
__global__ void seed_tiled_kernel(SeedArgs<T> g, int z_first) {
  using U = typename Arith<T>::U;
  __shared__ T as[BLOCK_DIM][BLOCK_DIM];
  __shared__ T bs[BLOCK_DIM][BLOCK_DIM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * BLOCK_DIM + ty, col = blockIdx.x * BLOCK_DIM + tx;
  const long long z = static_cast<long long>(blockIdx.z) + z_first;
  const T* a = g.a + z * g.stride_a;
  const T* b = g.b + z * g.stride_b;
  U acc = 0;
  for (int k0 = 0; k0 < g.k; k0 += BLOCK_DIM) {
    as[ty][tx] = row < g.m && k0 + tx < g.k ? seed_a(g, a, row, k0 + tx) : T(0);
    bs[ty][tx] = k0 + ty < g.k && col < g.n ? seed_b(g, b, k0 + ty, col) : T(0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BLOCK_DIM; ++kk) acc += static_cast<U>(as[ty][kk]) * static_cast<U>(bs[kk][tx]);
    __syncthreads();
  }
  if (row < g.m && col < g.n) seed_store(g, g.c + z * g.stride_c, row, col, acc);
}

template <class T>
SeedArgs<T> seed_args(const GemmArgs& x, T alpha, T beta) {
  return {x.m,        x.n,     x.k,       alpha,       beta,        x.a_as<T>(), x.lda,      x.b_as<T>(),
          x.ldb,      x.c_as<T>(), x.ldc, x.stride_a, x.stride_b, x.stride_c, x.trans_a, x.trans_b};
}

/// Launches `kernel` over the batch, 65535 matrices per launch at most (grid z's limit).
template <class T, class Kernel>
cudaError_t launch_batches(Kernel kernel, const SeedArgs<T>& g, int batch, int block_dim, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0 || batch <= 0) return cudaSuccess;
  const dim3 block(static_cast<unsigned>(block_dim), static_cast<unsigned>(block_dim), 1);
  const auto blocks = [block_dim](int extent) { return static_cast<unsigned>((extent + block_dim - 1) / block_dim); };
  for (int first = 0; first < batch; first += 65535) {
    const dim3 grid(blocks(g.n), blocks(g.m), static_cast<unsigned>(std::min(65535, batch - first)));
    kernel<<<grid, block, 0, stream>>>(g, first);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

/// variant 0: per element, 16 x 16 blocks; 1: tiles of 16; 2: tiles of 32.
template <class T>
cudaError_t run_seed(int variant, const SeedArgs<T>& g, int batch, cudaStream_t stream) {
  if (variant == 0) return launch_batches(seed_naive_kernel<T>, g, batch, 16, stream);
  if (variant == 1) return launch_batches(seed_tiled_kernel<T, 16>, g, batch, 16, stream);
  return launch_batches(seed_tiled_kernel<T, 32>, g, batch, 32, stream);
}

cudaError_t seed_gemm(int variant, const GemmArgs& x, cudaStream_t stream) {
  if (!x.typed_consistently()) return cudaErrorInvalidValue;
  if (type_info(x.dtype).opt_in) return cudaErrorInvalidValue;  // the seed's kernels are IEEE arithmetic alone
  return visit_storage_type(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    return run_seed(variant, seed_args<T>(x, x.alpha.as<T>(), x.beta.as<T>()), x.batch, stream);
  });
}

}  // namespace

std::vector<SeedBmmVariant> seed_bmm_variants(cudaStream_t stream) {
  std::vector<SeedBmmVariant> out;
  const char* names[] = {"per-element 16x16", "tiled 16x16", "tiled 32x32"};
  for (int v = 0; v < 3; ++v)
    out.push_back({names[v], [v, stream](const GemmArgs& a) { return seed_gemm(v, a, stream); }});
  return out;
}

}  // namespace cmt
