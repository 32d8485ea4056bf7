#include "gpu/naive_gemm.hpp"

#include <cstdint>

#include "../templates/cmt_tf32.cuh"

namespace cmt::test {

namespace {

constexpr int k_tile = 16;

/// GemmArgs with typed pointers and scalars (GemmArgs itself is host-side and untyped).
template <class T>
struct NaiveArgs {
  int m, n, k;
  T alpha;
  const T* a;
  int lda;
  const T* b;
  int ldb;
  T beta;
  T* c;
  int ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
  bool trans_a, trans_b;
};

// The arithmetic of each type: FMA for the floats; for int32, products and sums in uint32 (wrapping
// modulo 2^32), or with the saturate_i32 defect in int64, clamped at the end.
__device__ float mad(float a, float b, float acc) { return fmaf(a, b, acc); }
__device__ double mad(double a, double b, double acc) { return fma(a, b, acc); }
__device__ int32_t mad(int32_t a, int32_t b, int32_t acc) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b) + static_cast<uint32_t>(acc));
}
__device__ float scale(float alpha, float acc, float beta, float c, bool read_c) {
  return read_c ? fmaf(beta, c, alpha * acc) : alpha * acc;
}
__device__ double scale(double alpha, double acc, double beta, double c, bool read_c) {
  return read_c ? fma(beta, c, alpha * acc) : alpha * acc;
}
__device__ int32_t scale(int32_t alpha, int32_t acc, int32_t beta, int32_t c, bool read_c) {
  uint32_t v = static_cast<uint32_t>(alpha) * static_cast<uint32_t>(acc);
  if (read_c) v += static_cast<uint32_t>(beta) * static_cast<uint32_t>(c);
  return static_cast<int32_t>(v);
}

template <class T>
__global__ void naive_gemm_kernel(NaiveArgs<T> g, GemmDefect defect) {
  const int j = blockIdx.x * k_tile + threadIdx.x;  // column of C
  const int i = blockIdx.y * k_tile + threadIdx.y;  // row of C
  const long long b = blockIdx.z;
  if (i >= g.m || j >= g.n) return;
  long long stride_a = g.stride_a, stride_b = g.stride_b;
  if (defect == GemmDefect::broadcast_as_packed) {
    if (stride_a == 0) stride_a = static_cast<long long>(g.trans_a ? g.k : g.m) * g.lda;
    if (stride_b == 0) stride_b = static_cast<long long>(g.trans_b ? g.n : g.k) * g.ldb;
  }
  const T* a = g.a + b * stride_a;
  const T* bm = g.b + b * stride_b;
  T* c = g.c + b * g.stride_c;
  if (defect == GemmDefect::skip_first_when_beta0 && g.beta == T(0) && b == 0 && i == 0 && j == 0) return;

  T acc = T(0);
  long long wide = 0;  // saturate_i32's accumulator
  float single = 0.0f;  // fp32_accumulate's, tf32_one_pass's
  for (int kk = 0; kk < g.k; ++kk) {
    // op(A)(i, kk) and op(B)(kk, j) over row-major storage.
    const T av = g.trans_a ? a[static_cast<long long>(kk) * g.lda + i] : a[static_cast<long long>(i) * g.lda + kk];
    const T bv = g.trans_b ? bm[static_cast<long long>(j) * g.ldb + kk] : bm[static_cast<long long>(kk) * g.ldb + j];
    acc = mad(av, bv, acc);
    if (defect == GemmDefect::saturate_i32) wide += static_cast<long long>(av) * static_cast<long long>(bv);
    if (defect == GemmDefect::fp32_accumulate) single = fmaf(static_cast<float>(av), static_cast<float>(bv), single);
    if (defect == GemmDefect::tf32_one_pass)
      single = fmaf(cmt_f32_of_bits(cmt_tf32_rna(static_cast<float>(av))),
                    cmt_f32_of_bits(cmt_tf32_rna(static_cast<float>(bv))), single);
  }
  if (defect == GemmDefect::fp32_accumulate || defect == GemmDefect::tf32_one_pass) acc = static_cast<T>(single);
  T* out = c + static_cast<long long>(i) * g.ldc + j;
  // beta == 0: C is not read (it may hold NaN or the INT32 poison), as BLAS says.
  T value = scale(g.alpha, acc, g.beta, g.beta == T(0) ? T(0) : *out, g.beta != T(0));
  if (defect == GemmDefect::saturate_i32) {
    long long v = static_cast<long long>(g.alpha) * wide + (g.beta == T(0) ? 0 : static_cast<long long>(g.beta) * static_cast<long long>(*out));
    const long long lo = -2147483648ll, hi = 2147483647ll;
    value = static_cast<T>(v < lo ? lo : v > hi ? hi : v);
  }
  if (defect == GemmDefect::wrong_last_element && b == g.batch - 1 && i == g.m / 2 && j == g.n / 2) value += T(1);
  *out = value;
  if (defect == GemmDefect::write_gap && b == 0 && i == 0 && j == 0) c[static_cast<long long>(g.m) * g.ldc] = value;
}

template <class T>
cudaError_t launch_typed(const GemmArgs& args, GemmDefect defect, T alpha, T beta, cudaStream_t stream) {
  const NaiveArgs<T> g{args.m,        args.n,        args.k,        alpha,         args.a_as<T>(), args.lda,
                       args.b_as<T>(), args.ldb,      beta,          args.c_as<T>(), args.ldc,       args.stride_a,
                       args.stride_b, args.stride_c, args.batch,    args.trans_a,  args.trans_b};
  const dim3 block(k_tile, k_tile, 1);
  const dim3 grid(static_cast<unsigned>((args.n + k_tile - 1) / k_tile), static_cast<unsigned>((args.m + k_tile - 1) / k_tile),
                  static_cast<unsigned>(args.batch));
  naive_gemm_kernel<T><<<grid, block, 0, stream>>>(g, defect);
  return cudaGetLastError();
}

}  // namespace

const char* to_string(GemmDefect defect) {
  switch (defect) {
    case GemmDefect::none: return "none";
    case GemmDefect::wrong_last_element: return "wrong_last_element";
    case GemmDefect::write_gap: return "write_gap";
    case GemmDefect::skip_first_when_beta0: return "skip_first_when_beta0";
    case GemmDefect::broadcast_as_packed: return "broadcast_as_packed";
    case GemmDefect::saturate_i32: return "saturate_i32";
    case GemmDefect::fp32_accumulate: return "fp32_accumulate";
    case GemmDefect::tf32_one_pass: return "tf32_one_pass";
  }
  return "?";
}

cudaError_t launch_naive_gemm(const GemmArgs& args, GemmDefect defect, cudaStream_t stream) {
  if (!args.typed_consistently()) return cudaErrorInvalidValue;
  switch (args.dtype) {
    case DType::f64: return launch_typed<double>(args, defect, args.alpha.f64(), args.beta.f64(), stream);
    case DType::i32: return launch_typed<int32_t>(args, defect, args.alpha.i32(), args.beta.i32(), stream);
    case DType::f32:
    case DType::tf32x3: break;
  }
  return launch_typed<float>(args, defect, args.alpha.f32(), args.beta.f32(), stream);
}

}  // namespace cmt::test
