// The exported header's own kernels: C = beta*C for calls without a product, and split K's sum;
// and, for a header of kernel sources, the probe that says whether the program's device code was
// built for sm_90a. `cm-tune export` pastes this file into a header of sources (inside the header's
// namespace) and compiles it with NVRTC, with the generic defaults, into a header of machine code (its
// runtime library, export/runtime/image_loader.h). Templates, so that several -rdc translation units
// may include it.

/// beta * c in the element type; for int it wraps modulo 2^32 (the product is taken in unsigned
/// arithmetic, where C++ defines the wrap, and read back as two's complement).
__device__ inline float scale_value(float beta, float c) { return beta * c; }
__device__ inline double scale_value(double beta, double c) { return beta * c; }
__device__ inline int scale_value(int beta, int c) {
  return static_cast<int>(static_cast<unsigned>(beta) * static_cast<unsigned>(c));
}

/// C = beta*C on the M x N blocks of a batch (blockIdx.z: the matrix, stride_c apart) without reading
/// A or B; C is not read when beta == 0, so NaN in C does not survive (BLAS semantics). A template
/// (over the element type), so that several -rdc translation units may include it.
template <class T>
__global__ void __launch_bounds__(256) scale_kernel(int M, int N, T beta, T* __restrict__ C, int ldc,
                                                    long long stride_c) {
  const long long col = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (col >= N) return;
  C += static_cast<long long>(blockIdx.z) * stride_c;
  for (int row = blockIdx.y; row < M; row += gridDim.y) {
    T* p = C + static_cast<long long>(row) * ldc + col;
    *p = beta == T(0) ? T(0) : scale_value(beta, *p);
  }
}

/// a + b in the element type; for int it wraps modulo 2^32, as scale_value.
__device__ inline float add_value(float a, float b) { return a + b; }
__device__ inline double add_value(double a, double b) { return a + b; }
__device__ inline int add_value(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}

/// The sum of split K: C = alpha * (the `splits` M x N slices of `partial`, added in slice order) +
/// beta * C; C is not read when beta == 0. The same order every time: the result does not depend on
/// the launch.
template <class T>
__global__ void __launch_bounds__(256) split_sum_kernel(int M, int N, int splits, T alpha, const T* __restrict__ partial,
                                                        T beta, T* __restrict__ C, int ldc) {
  const long long count = static_cast<long long>(M) * N;
  for (long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * 256) {
    T sum = partial[i];
    for (int s = 1; s < splits; ++s) sum = add_value(sum, partial[static_cast<long long>(s) * count + i]);
    T* c = C + (i / N) * ldc + i % N;
    const T scaled = scale_value(alpha, sum);
    *c = beta == T(0) ? scaled : add_value(scaled, scale_value(beta, *c));
  }
}

/// Writes 1 where the device code that runs was built with sm_90a's features. A template, so that
/// several -rdc translation units may include it.
template <int Unused>
__global__ void tma_probe_kernel(int* built_for_sm90a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *built_for_sm90a = 1;
#else
  *built_for_sm90a = 0;
#endif
}

