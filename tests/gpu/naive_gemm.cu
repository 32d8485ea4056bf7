#include "gpu/naive_gemm.hpp"

namespace cmt::test {

namespace {

constexpr int k_tile = 16;

__global__ void naive_gemm_kernel(GemmArgs g, GemmDefect defect) {
  const int j = blockIdx.x * k_tile + threadIdx.x;  // column of C
  const int i = blockIdx.y * k_tile + threadIdx.y;  // row of C
  const long long b = blockIdx.z;
  if (i >= g.m || j >= g.n) return;
  long long stride_a = g.stride_a, stride_b = g.stride_b;
  if (defect == GemmDefect::broadcast_as_packed) {
    if (stride_a == 0) stride_a = static_cast<long long>(g.trans_a ? g.k : g.m) * g.lda;
    if (stride_b == 0) stride_b = static_cast<long long>(g.trans_b ? g.n : g.k) * g.ldb;
  }
  const float* a = g.a + b * stride_a;
  const float* bm = g.b + b * stride_b;
  float* c = g.c + b * g.stride_c;
  if (defect == GemmDefect::skip_first_when_beta0 && g.beta == 0.0f && b == 0 && i == 0 && j == 0) return;

  float acc = 0.0f;
  for (int kk = 0; kk < g.k; ++kk) {
    // op(A)(i, kk) and op(B)(kk, j) over row-major storage.
    const float av = g.trans_a ? a[static_cast<long long>(kk) * g.lda + i] : a[static_cast<long long>(i) * g.lda + kk];
    const float bv = g.trans_b ? bm[static_cast<long long>(j) * g.ldb + kk] : bm[static_cast<long long>(kk) * g.ldb + j];
    acc = fmaf(av, bv, acc);
  }
  float* out = c + static_cast<long long>(i) * g.ldc + j;
  // beta == 0: C is not read (it may hold NaN), as BLAS says.
  float value = g.beta == 0.0f ? g.alpha * acc : fmaf(g.beta, *out, g.alpha * acc);
  if (defect == GemmDefect::wrong_last_element && b == g.batch - 1 && i == g.m / 2 && j == g.n / 2) value += 1.0f;
  *out = value;
  if (defect == GemmDefect::write_gap && b == 0 && i == 0 && j == 0) c[static_cast<long long>(g.m) * g.ldc] = value;
}

}  // namespace

const char* to_string(GemmDefect defect) {
  switch (defect) {
    case GemmDefect::none: return "none";
    case GemmDefect::wrong_last_element: return "wrong_last_element";
    case GemmDefect::write_gap: return "write_gap";
    case GemmDefect::skip_first_when_beta0: return "skip_first_when_beta0";
    case GemmDefect::broadcast_as_packed: return "broadcast_as_packed";
  }
  return "?";
}

cudaError_t launch_naive_gemm(const GemmArgs& args, GemmDefect defect, cudaStream_t stream) {
  const dim3 block(k_tile, k_tile, 1);
  const dim3 grid(static_cast<unsigned>((args.n + k_tile - 1) / k_tile), static_cast<unsigned>((args.m + k_tile - 1) / k_tile),
                  static_cast<unsigned>(args.batch));
  naive_gemm_kernel<<<grid, block, 0, stream>>>(args, defect);
  const cudaError_t status = cudaGetLastError();
  return status;
}

}  // namespace cmt::test
