// Cluster split-K SGEMM (sm_90+): the multistage kernel with K split across the CLUSTER_K blocks of
// a thread-block cluster. The grid is (ceil(N/BN), ceil(M/BM), CLUSTER_K); the blocks of one
// cluster share one BM x BN tile of C, each multiplies its own run of k tiles, and they add their
// partial tiles through distributed shared memory: every block sums its share of the tile's
// accumulators over all ranks in rank order, so results are deterministic and no workspace or
// atomics are needed. This lets problems with few tiles (about 1024^2 and ragged sizes) fill the
// GPU with large, efficient tiles. Without clusters (device code for sm_80), block z = 0 multiplies
// all of K and the others exit, which is correct but slower.
#pragma once

#include "multistage.cuh"

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          int CLUSTER_K, int SWIZZLE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32 * SPLITK) CMT_CLUSTER_Z(CLUSTER_K)
    cmt_sgemm_clusterk(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                       const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN>;
  constexpr int TILE_THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int GROUPS = Tile::ROWS * Tile::COLS / 4;  // float4 groups of accumulators per thread
  extern __shared__ float4 cmt_dynamic_smem[];
  float* smem = reinterpret_cast<float*>(cmt_dynamic_smem);

  const int tid = threadIdx.x;
  int tile_m, tile_n;
  cmt_block_tile<SWIZZLE>(tile_m, tile_n);
  const int block_m = tile_m * BM, block_n = tile_n * BN;
  const int k_tiles = (K + BK - 1) / BK;
#if CMT_HAS_CLUSTERS
  const int rank = blockIdx.z;  // the cluster spans the grid's z extent, so this is the cluster rank
  const int kt_begin = (int)((long long)rank * k_tiles / CLUSTER_K);
  const int kt_end = (int)((long long)(rank + 1) * k_tiles / CLUSTER_K);
#else
  if (blockIdx.z != 0) return;
  const int kt_begin = 0, kt_end = k_tiles;
#endif

  Tile tile(tid % TILE_THREADS);
  cmt_multistage_accumulate<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK>(
      tile, smem, tid, M, N, K, A, lda, B, ldb, block_m, block_n, kt_begin, kt_end);
  const bool interior = block_m + BM <= M && block_n + BN <= N;

#if CMT_HAS_CLUSTERS
  // Park this block's partial tile in its shared memory, one float4 group per thread per slot.
  cmt_cp_async_wait<0>();
  __syncthreads();  // the ring (and SPLITK's scratch) is no longer read
  float4* parked = reinterpret_cast<float4*>(smem);
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      const float* v = &tile.acc[(4 * g) / Tile::COLS][(4 * g) % Tile::COLS];
      parked[g * TILE_THREADS + tid] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
  cmt_cluster_sync();
  // Rank r finishes groups g with g % CLUSTER_K == r: the sum over ranks 0.. in order, then C.
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      if (g % CLUSTER_K != rank) continue;
      float4 sum = cmt_cluster_load4(reinterpret_cast<const float*>(parked + g * TILE_THREADS + tid), 0);
#pragma unroll
      for (int q = 1; q < CLUSTER_K; ++q) {
        const float4 v = cmt_cluster_load4(reinterpret_cast<const float*>(parked + g * TILE_THREADS + tid), q);
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
      const float out[4] = {sum.x, sum.y, sum.z, sum.w};
      tile.store_group(C, ldc, M, N, block_m, block_n, (4 * g) / Tile::COLS, (4 * g) % Tile::COLS, out, alpha, beta,
                       interior, VEC == 4);
    }
  }
  cmt_cluster_sync();  // no block leaves while another may still read its shared memory
#else
  if (tid < TILE_THREADS) tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, interior, VEC == 4);
#endif
}
