// Warp-tiled SGEMM with register-staged double buffering: while the block multiplies one pair of
// shared-memory tiles, each thread already holds the next k tile in registers and writes it to the
// other buffer afterwards, so one barrier per k tile suffices. VEC == 4 loads 16 bytes at a time
// (aligned inputs); VEC == 1 loads single floats and has no input requirements. Blocks whose tile
// lies wholly inside A, B and C load without bounds checks; edge blocks predicate every element.
#pragma once

#include "cmt_warp_tile.cuh"

// Global -> registers for one operand tile whose element (r, c * VEC + v) is src[row0 + r][col0 +
// c * VEC + v], spread over the threads vector by vector (consecutive threads take consecutive
// addresses). FULL: the tile lies inside the rows x cols operand, loads are unpredicated (16-byte
// when VEC == 4). Otherwise every element is checked and those outside read as zero.
template <bool FULL, int VEC, int VECS_PER_ROW, int VECS, int THREADS, int LOADS>
CMT_DEVICE void cmt_warptile_load(float (&reg)[LOADS][VEC], const float* __restrict__ src, int ld, int row0, int col0,
                                  int rows, int cols, int tid) {
#pragma unroll
  for (int i = 0; i < LOADS; ++i) {
    const int e = tid + i * THREADS;
    if (VECS % THREADS == 0 || e < VECS) {
      int r, c;
      cmt_tile_coords<VECS_PER_ROW, THREADS>(tid, i, r, c);
      if (FULL) {
        const float* p = src + cmt_offset(row0 + r, col0 + c * VEC, ld);
        if (VEC == 4) {
          const float4 v = __ldg(reinterpret_cast<const float4*>(p));
          reg[i][0] = v.x, reg[i][VEC > 1 ? 1 : 0] = v.y, reg[i][VEC > 2 ? 2 : 0] = v.z, reg[i][VEC > 3 ? 3 : 0] = v.w;
        } else {
          reg[i][0] = __ldg(p);
        }
      } else {
        const int row = row0 + r, col = col0 + c * VEC;
        const bool inside = row < rows;
        const float* p = src + cmt_offset(inside ? row : 0, 0, ld);
#pragma unroll
        for (int v = 0; v < VEC; ++v) reg[i][v] = cmt_load_or_zero(p + col + v, inside && col + v < cols);
      }
    }
  }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int VEC, int SWIZZLE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
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
  cmt_block_origin<BM, BN, SWIZZLE>(block_m, block_n);
  const int k_tiles = (K + BK - 1) / BK;
  const bool mn_interior = block_m + BM <= M && block_n + BN <= N;

  float a_reg[A_LOADS][VEC], b_reg[B_LOADS][VEC];
  // One block-uniform branch per k tile: interior tiles take unpredicated loads (16-byte ones when
  // VEC == 4), edge tiles predicate every element.
  auto load_global = [&](int kt) {
    const int k0 = kt * BK;
    if (mn_interior && k0 + BK <= K) {
      cmt_warptile_load<true, VEC, A_VECS_PER_ROW, A_VECS, THREADS>(a_reg, A, lda, block_m, k0, M, K, tid);
      cmt_warptile_load<true, VEC, B_VECS_PER_ROW, B_VECS, THREADS>(b_reg, B, ldb, k0, block_n, K, N, tid);
    } else {
      cmt_warptile_load<false, VEC, A_VECS_PER_ROW, A_VECS, THREADS>(a_reg, A, lda, block_m, k0, M, K, tid);
      cmt_warptile_load<false, VEC, B_VECS_PER_ROW, B_VECS, THREADS>(b_reg, B, ldb, k0, block_n, K, N, tid);
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
}
