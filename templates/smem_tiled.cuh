// Shared-memory tiled SGEMM: a block computes a TILE x TILE tile of C, one element per thread.
// Per step of TILE along K the block stages a TILE x TILE tile of A and of B in shared memory
// (one element each per thread, coalesced), so each global element is read once per block
// instead of once per thread.
#pragma once
#include "cmt_common.cuh"

template <int TILE>
__global__ void __launch_bounds__(TILE * TILE)
cmt_sgemm_smem_tiled(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                     const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                     int ldc) {
  constexpr int THREADS = TILE * TILE;
  static_assert(THREADS <= 1024, "threads TILE*TILE must be <= 1024");
  __shared__ float As[TILE * TILE];  // As[m][k]
  __shared__ float Bs[TILE * TILE];  // Bs[k][n]

  const int tid = threadIdx.x;
  const int ty = tid / TILE;  // row within the tile
  const int tx = tid % TILE;  // column within the tile: consecutive threads, consecutive columns
  const int m0 = blockIdx.y * TILE;
  const int n0 = blockIdx.x * TILE;
  const int rows_left = M - m0;
  const int cols_left = N - n0;
  const float* a_tile = A + cmt_offset(m0, 0, lda);
  const float* b_tile = B + n0;

  // Threads outside C still help load and reach every barrier; only their store is skipped.
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    cmt_load_tile<TILE, TILE, THREADS, TILE>(As, a_tile + k0, lda, rows_left, K - k0, tid);
    cmt_load_tile<TILE, TILE, THREADS, TILE>(Bs, b_tile + cmt_offset(k0, 0, ldb), ldb, K - k0,
                                             cols_left, tid);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty * TILE + k], Bs[k * TILE + tx], acc);
    __syncthreads();  // the next tile overwrites As/Bs
  }
  if (ty < rows_left && tx < cols_left) cmt_store_c(C, ldc, m0 + ty, n0 + tx, acc, alpha, beta);
}
