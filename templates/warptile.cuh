// Warp-tiled SGEMM with register-staged double buffering: while the block multiplies one pair of
// shared-memory tiles, each thread already holds the next k tile in registers and writes it to the
// other buffer afterwards, so one barrier per k tile suffices. VEC == 4 loads 16 bytes at a time
// (aligned inputs); VEC == 1 loads single floats and has no input requirements. Blocks whose tile
// lies wholly inside A, B and C load without bounds checks; edge blocks predicate every element.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_thin_edges.cuh"
#include "cmt_warp_tile.cuh"

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int VEC, int SWIZZLE, int THIN_EDGE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, THIN_EDGE > 0 ? 1 : 0)
    cmt_sgemm_warptile(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                       const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN>;
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int AS_LD = BM + PAD;
  constexpr int A_STAGE = BK * AS_LD, B_STAGE = BK * BN;
  // Loads are spread over the threads element-vector by element-vector (consecutive threads take
  // consecutive addresses, so loads coalesce); any thread count works, the last pass is guarded.
  constexpr int A_VECS_PER_ROW = BK / VEC, A_VECS = BM * A_VECS_PER_ROW;
  constexpr int B_VECS_PER_ROW = BN / VEC, B_VECS = BK * B_VECS_PER_ROW;
  constexpr int A_LOADS = (A_VECS + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (B_VECS + THREADS - 1) / THREADS;

  // Two stages of (A transposed, B), in dynamic shared memory so BK = 32 tiles fit.
  float* smem = cmt_dynamic_smem_floats();
  const int tid = threadIdx.x;
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE, THIN_EDGE>(M, N, block_m, block_n);
  if (THIN_EDGE > 0) {
    const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
    const bool thin = cmt_is_thin_tile<BM, BN, THIN_EDGE>(M, N, block_m, block_n);
    if (thin || edges.interior_tiles() == 0) {  // see cmt_thin_edges_share
      if (edges.interior_tiles() == 0)
        cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, smem,
                                                         2 * (A_STAGE + B_STAGE), tid, cmt_linear_block(),
                                                         gridDim.x * gridDim.y);
      return;
    }
  }
  const int k_tiles = (K + BK - 1) / BK;
  const bool mn_interior = block_m + BM <= M && block_n + BN <= N;

  float a_reg[A_LOADS][VEC], b_reg[B_LOADS][VEC];
  // One block-uniform branch per k tile: interior tiles take unpredicated loads (16-byte ones when
  // VEC == 4), edge tiles predicate every element.
  auto load_global = [&](int kt) {
    const int k0 = kt * BK;
    if (mn_interior && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (A_VECS % THREADS == 0 || e < A_VECS) {
          int r, c;
          cmt_tile_coords<A_VECS_PER_ROW, THREADS>(tid, i, r, c);
          const float* p = A + cmt_offset(block_m + r, k0 + c * VEC, lda);
          if (VEC == 4) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(p));
            a_reg[i][0] = v.x, a_reg[i][VEC > 1 ? 1 : 0] = v.y, a_reg[i][VEC > 2 ? 2 : 0] = v.z, a_reg[i][VEC > 3 ? 3 : 0] = v.w;
          } else {
            a_reg[i][0] = __ldg(p);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (B_VECS % THREADS == 0 || e < B_VECS) {
          int r, c;
          cmt_tile_coords<B_VECS_PER_ROW, THREADS>(tid, i, r, c);
          const float* p = B + cmt_offset(k0 + r, block_n + c * VEC, ldb);
          if (VEC == 4) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(p));
            b_reg[i][0] = v.x, b_reg[i][VEC > 1 ? 1 : 0] = v.y, b_reg[i][VEC > 2 ? 2 : 0] = v.z, b_reg[i][VEC > 3 ? 3 : 0] = v.w;
          } else {
            b_reg[i][0] = __ldg(p);
          }
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (A_VECS % THREADS == 0 || e < A_VECS) {
          int r, c;
          cmt_tile_coords<A_VECS_PER_ROW, THREADS>(tid, i, r, c);
          const int row = block_m + r, col = k0 + c * VEC;
          const bool inside = row < M;
          const float* p = A + cmt_offset(inside ? row : 0, 0, lda);
#pragma unroll
          for (int v = 0; v < VEC; ++v) a_reg[i][v] = cmt_load_or_zero(p + col + v, inside && col + v < K);
        }
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (B_VECS % THREADS == 0 || e < B_VECS) {
          int r, c;
          cmt_tile_coords<B_VECS_PER_ROW, THREADS>(tid, i, r, c);
          const int row = k0 + r, col = block_n + c * VEC;
          const bool inside = row < K;
          const float* p = B + cmt_offset(inside ? row : 0, 0, ldb);
#pragma unroll
          for (int v = 0; v < VEC; ++v) b_reg[i][v] = cmt_load_or_zero(p + col + v, inside && col + v < N);
        }
      }
    }
  };
  auto store_shared = [&](int buf) {
    float* as = smem + buf * (A_STAGE + B_STAGE);
    float* bs = as + A_STAGE;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int e = tid + i * THREADS;
      if (A_VECS % THREADS == 0 || e < A_VECS) {
        int m, c;
        cmt_tile_coords<A_VECS_PER_ROW, THREADS>(tid, i, m, c);
#pragma unroll
        for (int v = 0; v < VEC; ++v) as[(c * VEC + v) * AS_LD + m] = a_reg[i][v];
      }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int e = tid + i * THREADS;
      if (B_VECS % THREADS == 0 || e < B_VECS) {
        int r, c;
      cmt_tile_coords<B_VECS_PER_ROW, THREADS>(tid, i, r, c);
      float* dst = bs + r * BN + c * VEC;
        if (VEC == 4)
          *reinterpret_cast<float4*>(dst) = make_float4(b_reg[i][0], b_reg[i][VEC > 1 ? 1 : 0], b_reg[i][VEC > 2 ? 2 : 0],
                                                        b_reg[i][VEC > 3 ? 3 : 0]);
        else
          dst[0] = b_reg[i][0];
      }
    }
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
    const float* as = smem + cur * (A_STAGE + B_STAGE);
    const float* bs = as + A_STAGE;
#pragma unroll
    for (int k = 0; k < BK; ++k) tile.step(as + k * AS_LD, bs + k * BN);
    if (kt + 1 < k_tiles) store_shared(cur ^ 1);
    __syncthreads();
  }
  tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, mn_interior, VEC == 4);
  if (THIN_EDGE > 0) {
    const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, smem,
                                                     2 * (A_STAGE + B_STAGE), tid, cmt_linear_block(),
                                                     edges.interior_tiles());
  }
}
