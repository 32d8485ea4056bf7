// Coalesced SGEMM: still one thread per element of C from global memory, but consecutive
// threads take consecutive columns. A warp then reads one contiguous run of a B row per k
// (coalesced), the A element it needs is shared by the threads of a row (a broadcast), and C is
// written in contiguous runs.
#pragma once
#include "cmt_common.cuh"

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
cmt_sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                    const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                    int ldc) {
  static_assert(BLOCK * BLOCK <= 1024, "threads BLOCK*BLOCK must be <= 1024");
  const int row = blockIdx.y * BLOCK + (int)threadIdx.x / BLOCK;
  const int col = blockIdx.x * BLOCK + (int)threadIdx.x % BLOCK;
  if (row >= M || col >= N) return;  // no shared memory, no barriers: early exit is safe

  const float* a = A + cmt_offset(row, 0, lda);
  const float* b = B + col;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc = fmaf(a[k], *b, acc);
    b += ldb;
  }
  cmt_store_c(C, ldc, row, col, acc, alpha, beta);
}
