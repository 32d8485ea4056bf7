// The warp-tiled register core shared by the warptile and multistage families, and cp.async
// helpers. A block tile BM x BN is split into warp tiles WM x WN; a warp tile into WMITER x WNITER
// sub-tiles; in each sub-tile the 32 lanes form a LANES_M x LANES_N grid and own TM x TN patches.
// Shared memory holds A transposed (As[k][m]) and B as is (Bs[k][n]), so both fragments are read
// with 16-byte loads: lanes sharing a row broadcast, lanes along n read consecutive 16-byte words.
#pragma once

#include "cmt_common.cuh"

template <int BN_, int WM_, int WN_, int WNITER_, int TM_, int TN_>
struct CmtWarpTile {
  static constexpr int TM = TM_, TN = TN_, WM = WM_, WN = WN_, WNITER = WNITER_;
  static constexpr int WARPS_N = BN_ / WN;
  static constexpr int WSUBN = WN / WNITER;
  static constexpr int LANES_N = WSUBN / TN;
  static constexpr int LANES_M = 32 / LANES_N;
  static constexpr int WSUBM = LANES_M * TM;
  static constexpr int WMITER = WM / WSUBM;
  static constexpr int ROWS = WMITER * TM;  // accumulator rows per thread
  static constexpr int COLS = WNITER * TN;  // accumulator columns per thread

  float acc[ROWS][COLS];
  int m0, n0;  // this thread's first row and column inside the block tile

  CMT_DEVICE explicit CmtWarpTile(int tile_tid) {
    const int warp = tile_tid / 32, lane = tile_tid % 32;
    m0 = (warp / WARPS_N) * WM + (lane / LANES_N) * TM;
    n0 = (warp % WARPS_N) * WN + (lane % LANES_N) * TN;
#pragma unroll
    for (int i = 0; i < ROWS; ++i)
#pragma unroll
      for (int j = 0; j < COLS; ++j) acc[i][j] = 0.0f;
  }

  // out[w*T + t] = base[w*SUB + t] for w < ITER, t < T (a lane's sub-tile slices), 16 bytes at a time.
  template <int ITER, int T, int SUB>
  static CMT_DEVICE void load_fragment(const float* base, float* out) {
#pragma unroll
    for (int w = 0; w < ITER; ++w)
#pragma unroll
      for (int t = 0; t < T; t += 4) {
        const float4 v = *reinterpret_cast<const float4*>(base + w * SUB + t);
        out[w * T + t] = v.x, out[w * T + t + 1] = v.y, out[w * T + t + 2] = v.z, out[w * T + t + 3] = v.w;
      }
  }

  // acc += As[k][my rows] x Bs[k][my columns]; as_k and bs_k point at row k of each tile.
  CMT_DEVICE void step(const float* as_k, const float* bs_k) {
    float a[ROWS], b[COLS];
    load_fragment<WMITER, TM, WSUBM>(as_k + m0, a);
    load_fragment<WNITER, TN, WSUBN>(bs_k + n0, b);
#pragma unroll
    for (int i = 0; i < ROWS; ++i)
#pragma unroll
      for (int j = 0; j < COLS; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }

  // Writes alpha*acc + beta*C for the block whose tile starts at (block_m, block_n). `interior`
  // (the whole block tile inside C) skips the bounds checks; `vector_c` (16-byte aligned C and
  // ldc % 4 == 0) then also uses 16-byte accesses.
  CMT_DEVICE void store(float* C, int ldc, int M, int N, int block_m, int block_n, float alpha, float beta,
                        bool interior, bool vector_c) const {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
          for (int j = 0; j < TN; j += 4)
            store_group(C, ldc, M, N, block_m, block_n, wm * TM + i, wn * TN + j, &acc[wm * TM + i][wn * TN + j],
                        alpha, beta, interior, vector_c);
  }

  // Row and column of accumulator acc[r][c] inside the block tile.
  CMT_DEVICE int row_of(int r) const { return m0 + (r / TM) * WSUBM + r % TM; }
  CMT_DEVICE int col_of(int c) const { return n0 + (c / TN) * WSUBN + c % TN; }

  // Writes the four values v[0..3] that belong at acc[r][c..c+3] (c % 4 == 0), as store() does.
  CMT_DEVICE void store_group(float* C, int ldc, int M, int N, int block_m, int block_n, int r, int c, const float* v,
                              float alpha, float beta, bool interior, bool vector_c) const {
    const int row = block_m + row_of(r), col = block_n + col_of(c);
    if (interior && vector_c) {
      float4* p = reinterpret_cast<float4*>(C + cmt_offset(row, col, ldc));
      float4 out = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
      if (beta != 0.0f) {
        const float4 old = *p;
        out.x = fmaf(beta, old.x, out.x), out.y = fmaf(beta, old.y, out.y);
        out.z = fmaf(beta, old.z, out.z), out.w = fmaf(beta, old.w, out.w);
      }
      *p = out;
    } else {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
        if (interior || (row < M && col + jj < N)) cmt_store_c(C, ldc, row, col + jj, v[jj], alpha, beta);
    }
  }
};

// Block rasterization: maps the launch grid (ceil(N/BN), ceil(M/BM)) onto tiles so that consecutive
// blocks walk down groups of SWIZZLE tile rows, column by column. Blocks running at the same time
// then share A row panels and B column panels in L2. SWIZZLE == 1 keeps the launch order.
template <int SWIZZLE>
CMT_DEVICE void cmt_block_tile(int& tile_m, int& tile_n) {
  if (SWIZZLE <= 1) {
    tile_m = blockIdx.y;
    tile_n = blockIdx.x;
    return;
  }
  const int grid_n = gridDim.x, grid_m = gridDim.y;
  const int block = blockIdx.y * grid_n + blockIdx.x;
  const int group = block / (SWIZZLE * grid_n);
  const int first_m = group * SWIZZLE;
  const int rows = grid_m - first_m < SWIZZLE ? grid_m - first_m : SWIZZLE;
  const int in_group = block - group * SWIZZLE * grid_n;
  tile_m = first_m + in_group % rows;
  tile_n = in_group / rows;
}

// Top-left element (block_m, block_n) of this block's BM x BN tile of C, after rasterization.
template <int BM, int BN, int SWIZZLE>
CMT_DEVICE void cmt_block_origin(int& block_m, int& block_n) {
  int tile_m, tile_n;
  cmt_block_tile<SWIZZLE>(tile_m, tile_n);
  block_m = tile_m * BM;
  block_n = tile_n * BN;
}

// The kernel's dynamic shared memory, as floats (16-byte aligned).
CMT_DEVICE float* cmt_dynamic_smem_floats() {
  extern __shared__ float4 cmt_dynamic_smem[];
  return reinterpret_cast<float*>(cmt_dynamic_smem);
}

// cp.async: asynchronous global -> shared copies (sm_80+). A source size below the copy size
// zero-fills the rest, which is how out-of-range elements become zeros without a branch.
CMT_DEVICE unsigned cmt_smem_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

CMT_DEVICE void cmt_cp_async_4(float* dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(cmt_smem_address(dst)), "l"(src),
               "r"(inside ? 4 : 0));
}

CMT_DEVICE void cmt_cp_async_16(float* dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(cmt_smem_address(dst)), "l"(src),
               "r"(src_bytes));
}

CMT_DEVICE void cmt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
CMT_DEVICE void cmt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// ---------------------------------------------------------------------------------------------
// Thread-block clusters (sm_90+): a cluster's blocks can read each other's shared memory.
// ---------------------------------------------------------------------------------------------

// Compile-time cluster shape (1, 1, n). Device code for older GPUs gets no cluster (see
// CMT_HAS_CLUSTERS); a kernel using it must then stay correct with independent blocks.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define CMT_HAS_CLUSTERS 0
#define CMT_CLUSTER_Z(n)
#else
#define CMT_HAS_CLUSTERS 1
#define CMT_CLUSTER_Z(n) __cluster_dims__(1, 1, n)
#endif

#if CMT_HAS_CLUSTERS
// Every thread of every block in the cluster arrives; shared-memory writes before it are visible
// to the whole cluster after it.
CMT_DEVICE void cmt_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// 16-byte load from the shared memory of the cluster's block `rank`, at the offset `p` has in ours.
CMT_DEVICE float4 cmt_cluster_load4(const float* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(cmt_smem_address(p)), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

// The end of a cluster split-K kernel: the CLUSTER_K blocks of the cluster (one per grid z) hold
// partial sums of the same block tile. Each parks its partial in its own shared memory (BM x BN
// floats at `smem`), then rank r sums the float4 groups g with g % CLUSTER_K == r over ranks 0, 1,
// ... in that order (deterministic) and writes them to C. Every thread of every block must call
// this (it holds cluster barriers); the TILE_THREADS threads below `tid` < TILE_THREADS hold the
// partials. The caller has no shared-memory reads or copies pending.
template <int CLUSTER_K, int TILE_THREADS, class Tile>
CMT_DEVICE void cmt_cluster_reduce_store(const Tile& tile, float* smem, int tid, float* C, int ldc, int M, int N,
                                         int block_m, int block_n, float alpha, float beta, bool interior,
                                         bool vector_c) {
  constexpr int GROUPS = Tile::ROWS * Tile::COLS / 4;  // float4 groups of accumulators per thread
  const int rank = blockIdx.z;  // the cluster spans the grid's z extent, so this is the cluster rank
  __syncthreads();
  float4* parked = reinterpret_cast<float4*>(smem);
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      const float* v = &tile.acc[(4 * g) / Tile::COLS][(4 * g) % Tile::COLS];
      parked[g * TILE_THREADS + tid] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
  cmt_cluster_sync();
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      if (g % CLUSTER_K != rank) continue;
      const float* slot = reinterpret_cast<const float*>(parked + g * TILE_THREADS + tid);
      float4 sum = cmt_cluster_load4(slot, 0);
#pragma unroll
      for (int q = 1; q < CLUSTER_K; ++q) {
        const float4 v = cmt_cluster_load4(slot, q);
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
      const float out[4] = {sum.x, sum.y, sum.z, sum.w};
      tile.store_group(C, ldc, M, N, block_m, block_n, (4 * g) / Tile::COLS, (4 * g) % Tile::COLS, out, alpha, beta,
                       interior, vector_c);
    }
  }
  cmt_cluster_sync();  // no block leaves while another may still read its shared memory
}

// Rank `rank` of a CLUSTER_K-way split of k_tiles k tiles takes [*begin, *end).
template <int CLUSTER_K>
CMT_DEVICE void cmt_cluster_k_range(int k_tiles, int rank, int& begin, int& end) {
  begin = (int)((long long)rank * k_tiles / CLUSTER_K);
  end = (int)((long long)(rank + 1) * k_tiles / CLUSTER_K);
}
#endif
