// Cluster split-K SGEMM (sm_90+): the multistage kernel with K split across the CLUSTER_K blocks of
// a thread-block cluster. The grid is (ceil(N/BN), ceil(M/BM), CLUSTER_K * batch); the blocks of one
// cluster share one BM x BN tile of C, each multiplies its own run of k tiles, and they add their
// partial tiles through distributed shared memory: every block sums its share of the tile's
// accumulators over all ranks in rank order, so results are deterministic and no workspace or
// atomics are needed. This lets problems with few tiles (about 1024^2 and ragged sizes) fill the
// GPU with large, efficient tiles. A cluster is CLUSTER_K consecutive blocks along z: a block's
// rank in its cluster is blockIdx.z % CLUSTER_K (which is the hardware's %cluster_ctarank for
// clusters of (1, 1, CLUSTER_K)) and its problem of a strided batch blockIdx.z / CLUSTER_K. Without
// clusters (device code for sm_80), rank 0 multiplies all of K and the other ranks exit, which is
// correct but slower. Every layout that multistage copies (TRANS_A, TRANS_B) works here too.
#pragma once

#include "cmt_cluster.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_thin_edges.cuh"
#include "cmt_warp_tile.cuh"
#include "multistage.cuh"

// The body of the cluster split-K kernels (clusterk here, clusterk_deep): a __global__ with
// CMT_CLUSTER_Z(CLUSTER_K) and the block size of CmtMultistageShape calls it with its arguments.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          int CLUSTER_K, int SWIZZLE, int THIN_EDGE, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void cmt_clusterk_body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                  int lda, const float* __restrict__ B, int ldb, float beta,
                                                  float* __restrict__ C, int ldc, long long stride_a,
                                                  long long stride_b, long long stride_c) {
  using Shape = CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK, TRANS_B>;
  constexpr int TILE_THREADS = Shape::TILE_THREADS, THREADS = Shape::THREADS, RING_FLOATS = Shape::RING_FLOATS;
  const float* const a_fill = A;  // see cmt_multistage_accumulate
  const float* const b_fill = B;
  cmt_batch_offsets<CLUSTER_K>(A, B, C, stride_a, stride_b, stride_c);
  float* smem = cmt_dynamic_smem_floats();
  const int tid = threadIdx.x;
  const int rank = blockIdx.z % CLUSTER_K;  // in the cluster (see the top of this file)
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE, THIN_EDGE>(M, N, block_m, block_n);
  const int k_tiles = (K + BK - 1) / BK;
  int kt_begin = 0, kt_end = k_tiles;
#if CMT_HAS_CLUSTERS
  cmt_cluster_k_range<CLUSTER_K>(k_tiles, rank, kt_begin, kt_end);
#else
  if (rank != 0) return;
#endif

  // Thin edges (see cmt_thin_edges_share): every block of every cluster is a worker.
  const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
  auto share_thin_edges = [&]() {
    const int ranks = CMT_HAS_CLUSTERS ? CLUSTER_K : 1;
    const int tiles = edges.interior_tiles() > 0 ? edges.interior_tiles() : gridDim.x * gridDim.y;
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha,
                                                                       beta, smem, RING_FLOATS, tid,
                                                                       cmt_linear_block() * ranks + rank, tiles * ranks);
  };
  if (cmt_is_thin_tile<BM, BN, THIN_EDGE>(M, N, block_m, block_n)) {
    if (edges.interior_tiles() == 0) share_thin_edges();
    return;
  }

  CmtWarpTile<BN, WM, WN, WNITER, TM, TN> tile(tid % TILE_THREADS);
  cmt_multistage_accumulate<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK, false, 0, 8, TRANS_A, TRANS_B>(
      tile, tid, M, N, K, A, lda, B, ldb, block_m, block_n, kt_begin, kt_end, a_fill, b_fill);
  const bool interior = block_m + BM <= M && block_n + BN <= N;
#if CMT_HAS_CLUSTERS
  cmt_cp_async_wait<0>();  // the ring (and SPLITK's scratch) is free once every thread is past here
  cmt_cluster_reduce_store<CLUSTER_K, TILE_THREADS>(tile, cmt_dynamic_smem_address(), tid, C, ldc, M, N, block_m,
                                                    block_n, alpha, beta, interior, VEC == 4);
#else
  if (tid < TILE_THREADS) tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, interior, VEC == 4);
#endif
  if (THIN_EDGE > 0) share_thin_edges();
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          int CLUSTER_K, int SWIZZLE, int THIN_EDGE, int TRANS_A, int TRANS_B>
__global__ void __launch_bounds__(CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS,
                                  THIN_EDGE > 0 ? 1 : 0) CMT_CLUSTER_Z(CLUSTER_K)
    cmt_sgemm_clusterk(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                       const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                       long long stride_a, long long stride_b, long long stride_c) {
  cmt_clusterk_body<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK, CLUSTER_K, SWIZZLE, THIN_EDGE, TRANS_A,
                    TRANS_B>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stride_a, stride_b, stride_c);
}
