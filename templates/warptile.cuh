// Warp-tiled SGEMM with register-staged double buffering: while the block multiplies one pair of
// shared-memory tiles, each thread already holds the next k tile in registers (16-byte loads) and
// writes it to the other buffer afterwards, so one barrier per k tile suffices. Blocks whose tile
// lies wholly inside A, B and C take unpredicated vector loads; edge blocks load element by element.
#pragma once

#include "cmt_warp_tile.cuh"

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    cmt_sgemm_warptile(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                       const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN>;
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int AS_LD = BM + PAD;
  constexpr int A_VECS_PER_ROW = BK / 4;
  constexpr int A_ROWS_PER_PASS = THREADS / A_VECS_PER_ROW;
  constexpr int A_LOADS = BM / A_ROWS_PER_PASS;
  constexpr int B_VECS_PER_ROW = BN / 4;
  constexpr int B_ROWS_PER_PASS = THREADS / B_VECS_PER_ROW;
  constexpr int B_LOADS = BK / B_ROWS_PER_PASS;

  __shared__ __align__(16) float as_buf[2][BK * AS_LD];
  __shared__ __align__(16) float bs_buf[2][BK * BN];

  const int tid = threadIdx.x;
  const int block_m = blockIdx.y * BM, block_n = blockIdx.x * BN;
  const int k_tiles = (K + BK - 1) / BK;
  const bool mn_interior = block_m + BM <= M && block_n + BN <= N;
  const int a_k = (tid % A_VECS_PER_ROW) * 4, a_m = tid / A_VECS_PER_ROW;
  const int b_n = (tid % B_VECS_PER_ROW) * 4, b_k = tid / B_VECS_PER_ROW;

  float4 a_reg[A_LOADS], b_reg[B_LOADS];
  auto load_global = [&](int kt) {
    const int k0 = kt * BK;
    if (mn_interior && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i)
        a_reg[i] = __ldg(reinterpret_cast<const float4*>(A + cmt_offset(block_m + a_m + i * A_ROWS_PER_PASS, k0 + a_k, lda)));
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i)
        b_reg[i] = __ldg(reinterpret_cast<const float4*>(B + cmt_offset(k0 + b_k + i * B_ROWS_PER_PASS, block_n + b_n, ldb)));
    } else {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int row = block_m + a_m + i * A_ROWS_PER_PASS, col = k0 + a_k;
        const bool r = row < M;
        const float* p = A + cmt_offset(r ? row : 0, 0, lda);
        a_reg[i] = make_float4(cmt_load_or_zero(p + col, r && col < K), cmt_load_or_zero(p + col + 1, r && col + 1 < K),
                               cmt_load_or_zero(p + col + 2, r && col + 2 < K), cmt_load_or_zero(p + col + 3, r && col + 3 < K));
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int row = k0 + b_k + i * B_ROWS_PER_PASS, col = block_n + b_n;
        const bool r = row < K;
        const float* p = B + cmt_offset(r ? row : 0, 0, ldb);
        b_reg[i] = make_float4(cmt_load_or_zero(p + col, r && col < N), cmt_load_or_zero(p + col + 1, r && col + 1 < N),
                               cmt_load_or_zero(p + col + 2, r && col + 2 < N), cmt_load_or_zero(p + col + 3, r && col + 3 < N));
      }
    }
  };
  auto store_shared = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      float* dst = &as_buf[buf][a_k * AS_LD + a_m + i * A_ROWS_PER_PASS];
      dst[0] = a_reg[i].x, dst[AS_LD] = a_reg[i].y, dst[2 * AS_LD] = a_reg[i].z, dst[3 * AS_LD] = a_reg[i].w;
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i)
      *reinterpret_cast<float4*>(&bs_buf[buf][(b_k + i * B_ROWS_PER_PASS) * BN + b_n]) = b_reg[i];
  };

  Tile tile(tid);
  if (k_tiles > 0) {
    load_global(0);
    store_shared(0);
  }
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int cur = kt & 1;
    if (kt + 1 < k_tiles) load_global(kt + 1);  // in flight during the multiply below
#pragma unroll
    for (int k = 0; k < BK; ++k) tile.step(&as_buf[cur][k * AS_LD], &bs_buf[cur][k * BN]);
    if (kt + 1 < k_tiles) store_shared(cur ^ 1);
    __syncthreads();
  }
  tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, mn_interior, true);
}
