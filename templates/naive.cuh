// Naive SGEMM: one thread per element of C, operands read straight from global memory.
// The baseline of the ladder. Consecutive threads walk DOWN a column of C, so at each k a warp
// reads A from BLOCK different rows and writes C with a stride of ldc: deliberately uncoalesced.
#pragma once
#include "cmt_common.cuh"

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
cmt_sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  static_assert(BLOCK * BLOCK <= 1024, "threads BLOCK*BLOCK must be <= 1024");
  const int row = blockIdx.y * BLOCK + (int)threadIdx.x % BLOCK;
  const int col = blockIdx.x * BLOCK + (int)threadIdx.x / BLOCK;
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
