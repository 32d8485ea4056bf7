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

  // load_fragment from a 32-bit shared-memory address (see step_at).
  template <int ITER, int T, int SUB>
  static CMT_DEVICE void load_fragment_at(unsigned base, float* out) {
#pragma unroll
    for (int w = 0; w < ITER; ++w)
#pragma unroll
      for (int t = 0; t < T; t += 4)
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                     : "=f"(out[w * T + t]), "=f"(out[w * T + t + 1]), "=f"(out[w * T + t + 2]), "=f"(out[w * T + t + 3])
                     : "r"(base + (w * SUB + t) * 4));
  }

  // step() with row k of each tile given as a 32-bit shared-memory address: nvcc and NVRTC then
  // compile the same address arithmetic (left to themselves, NVRTC forms 64-bit shared addresses).
  CMT_DEVICE void step_at(unsigned as_k, unsigned bs_k) {
    float a[ROWS], b[COLS];
    load_fragment_at<WMITER, TM, WSUBM>(as_k + m0 * 4, a);
    load_fragment_at<WNITER, TN, WSUBN>(bs_k + n0 * 4, b);
    multiply(a, b);
  }

  // acc += As[k][my rows] x Bs[k][my columns]; as_k and bs_k point at row k of each tile.
  CMT_DEVICE void step(const float* as_k, const float* bs_k) {
    float a[ROWS], b[COLS];
    load_fragment<WMITER, TM, WSUBM>(as_k + m0, a);
    load_fragment<WNITER, TN, WSUBN>(bs_k + n0, b);
    multiply(a, b);
  }

  // acc += a x b (outer product of this thread's fragments).
  CMT_DEVICE void multiply(const float* a, const float* b) {
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
    } else if (interior) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) cmt_store_c(C, ldc, row, col + jj, v[jj], alpha, beta);
    } else {
      // The four C values are read before any is written: read after a predicated write, each
      // waited for the one before (edge tiles with beta != 0 took 6 us longer at 1023^3).
      float prev[4];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
        prev[jj] = beta != 0.0f && row < M && col + jj < N ? C[cmt_offset(row, col + jj, ldc)] : 0.0f;
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
        if (row < M && col + jj < N)
          C[cmt_offset(row, col + jj, ldc)] = beta != 0.0f ? fmaf(beta, prev[jj], alpha * v[jj]) : alpha * v[jj];
    }
  }
};

// Block rasterization: maps block `block` of a (grid_n, grid_m) row-major launch onto tiles so that
// consecutive blocks walk down groups of SWIZZLE tile rows, column by column. Blocks running at the
// same time then share A row panels and B column panels in L2. SWIZZLE == 1 keeps the launch order.
template <int SWIZZLE>
CMT_DEVICE void cmt_swizzle_tile(int block, int grid_n, int grid_m, int& tile_m, int& tile_n) {
  const int group = block / (SWIZZLE * grid_n);
  const int first_m = group * SWIZZLE;
  const int rows = grid_m - first_m < SWIZZLE ? grid_m - first_m : SWIZZLE;
  const int in_group = block - group * SWIZZLE * grid_n;
  tile_m = first_m + in_group % rows;
  tile_n = in_group / rows;
}

template <int SWIZZLE>
CMT_DEVICE void cmt_block_tile(int& tile_m, int& tile_n) {
  if (SWIZZLE <= 1) {
    tile_m = blockIdx.y;
    tile_n = blockIdx.x;
    return;
  }
  cmt_swizzle_tile<SWIZZLE>(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x, gridDim.y, tile_m, tile_n);
}

// Top-left element (block_m, block_n) of this block's BM x BN tile of C, after rasterization.
template <int BM, int BN, int SWIZZLE>
CMT_DEVICE void cmt_block_origin(int& block_m, int& block_n) {
  int tile_m, tile_n;
  cmt_block_tile<SWIZZLE>(tile_m, tile_n);
  block_m = tile_m * BM;
  block_n = tile_n * BN;
}

// The kernel's dynamic shared memory. C linkage keeps its PTX name `cmt_dynamic_smem` inside the
// namespaces an exported header puts these sources in, so cmt_dynamic_smem_address can name it.
extern "C" {
extern __shared__ float4 cmt_dynamic_smem[];
}

// The kernel's dynamic shared memory, as floats (16-byte aligned).
CMT_DEVICE float* cmt_dynamic_smem_floats() { return reinterpret_cast<float*>(cmt_dynamic_smem); }

// Its 32-bit shared address, taken from the symbol as nvcc does (NVRTC converts a 64-bit address
// instead, which changes the code ptxas makes of the kernel). The unused "l" operand makes both
// compilers declare the symbol.
CMT_DEVICE unsigned cmt_dynamic_smem_address() {
  unsigned a;
  asm("mov.u32 %0, cmt_dynamic_smem;" : "=r"(a) : "l"(cmt_dynamic_smem));
  return a;
}

// The 32-bit shared address of a generic pointer into shared memory.
CMT_DEVICE unsigned cmt_smem_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// One float to / from a 32-bit shared-memory address (NVRTC, left to itself, forms 64-bit ones).
CMT_DEVICE void cmt_store_shared(unsigned addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
CMT_DEVICE float cmt_load_shared(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
CMT_DEVICE float4 cmt_load_shared4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// cp.async: asynchronous global -> shared copies (sm_80+). A source size below the copy size
// zero-fills the rest, which is how out-of-range elements become zeros without a branch.
CMT_DEVICE void cmt_cp_async_4_to(unsigned dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(inside ? 4 : 0));
}

CMT_DEVICE void cmt_cp_async_16_to(unsigned dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

CMT_DEVICE void cmt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
CMT_DEVICE void cmt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// ---------------------------------------------------------------------------------------------
// Thin edges. When M % BM (or N % BN) is 1..THIN_EDGE, the last tile row (column) of C holds only
// that many rows (columns), yet the warp-tiled path would spend a whole tile's time on each of its
// tiles (1025^2 with 128x128 tiles: 64 full tiles and 17 thin ones, 2 waves on 132 SMs). With
// THIN_EDGE > 0 the first blocks of the grid take the interior tiles; the blocks of thin tiles
// exit at once, and the interior blocks, after their own tile, share out the thin strips in
// pieces of up to CMT_THIN_PIECE rows or columns, each computed over all of K by one block
// (deterministic). Only when there is no interior tile do the thin tiles' blocks do this work.
// ---------------------------------------------------------------------------------------------

#define CMT_THIN_PIECE 32

// The interior/thin split of a (grid_n, grid_m) grid of BM x BN tiles over an M x N matrix C.
// With INLINE_ROWS = r > 0, a thin row of at most r rows is multiplied by the blocks of the last
// interior tile row inside their main loop (multistage's CmtInlineRows), above the thin column,
// which then holds the corner.
template <int BM, int BN, int THIN_EDGE, int INLINE_ROWS = 0>
struct CmtThinEdges {
  int thin_m, thin_n;    // 1 when the last tile row (column) is thin
  int inner_m, inner_n;  // the interior grid
  CMT_DEVICE CmtThinEdges(int M, int N, int grid_m, int grid_n) {
    thin_m = THIN_EDGE > 0 && M % BM != 0 && M % BM <= THIN_EDGE;
    thin_n = THIN_EDGE > 0 && N % BN != 0 && N % BN <= THIN_EDGE;
    inner_m = grid_m - thin_m;
    inner_n = grid_n - thin_n;
  }
  CMT_DEVICE int interior_tiles() const { return inner_m * inner_n; }
  // True when the interior blocks multiply the thin row in their main loop.
  CMT_DEVICE bool rows_inline(int M) const {
    return INLINE_ROWS > 0 && thin_m && interior_tiles() > 0 && M - inner_m * BM <= INLINE_ROWS;
  }
  // 1 when the thin row is a strip of its own (computed like the thin column).
  CMT_DEVICE int row_strip(int M) const { return INLINE_ROWS > 0 ? thin_m && !rows_inline(M) : thin_m; }
  // The thin column: rows [0, col_rows(M)) of columns [col_first(), N).
  CMT_DEVICE int col_rows(int M) const { return !thin_n ? 0 : row_strip(M) ? inner_m * BM : M; }
  CMT_DEVICE int col_first() const { return inner_n * BN; }
  // The thin row, which holds the corner unless inline: rows [row_first(), M), all columns.
  CMT_DEVICE int row_first() const { return inner_m * BM; }
  // Rows of the thin column plus columns of the thin row left to the strips.
  CMT_DEVICE int lines(int M, int N) const { return col_rows(M) + (row_strip(M) ? N : 0); }
};

// This block's index in launch order (blockIdx.z not included).
CMT_DEVICE int cmt_linear_block() { return blockIdx.y * gridDim.x + blockIdx.x; }

// cmt_block_origin, with the interior tiles taken by the first blocks when THIN_EDGE > 0 (then
// rasterized over the interior grid); the remaining blocks get the thin tiles.
template <int BM, int BN, int SWIZZLE, int THIN_EDGE>
CMT_DEVICE void cmt_block_origin(int M, int N, int& block_m, int& block_n) {
  if (THIN_EDGE <= 0) {
    cmt_block_origin<BM, BN, SWIZZLE>(block_m, block_n);
    return;
  }
  const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
  const int block = cmt_linear_block();
  int tile_m, tile_n;
  if (block < edges.interior_tiles()) {
    cmt_swizzle_tile<SWIZZLE>(block, edges.inner_n, edges.inner_m, tile_m, tile_n);
  } else {
    const int edge = block - edges.interior_tiles();
    if (edge < edges.thin_n * edges.inner_m) {
      tile_m = edge, tile_n = gridDim.x - 1;
    } else {
      tile_m = gridDim.y - 1, tile_n = edge - edges.thin_n * edges.inner_m;
    }
  }
  block_m = tile_m * BM;
  block_n = tile_n * BN;
}

// True when the tile at (block_m, block_n) is thin.
template <int BM, int BN, int THIN_EDGE>
CMT_DEVICE bool cmt_is_thin_tile(int M, int N, int block_m, int block_n) {
  return THIN_EDGE > 0 && (M - block_m <= THIN_EDGE || N - block_n <= THIN_EDGE);
}

// Starts 4-byte cp.async copies of a rows x cols block (row stride src_ld) to the 32-bit shared
// address dst (row stride dst_ld floats). Thread t copies elements t, t + THREADS, ... of the block
// in row-major order, so a warp's copies cover consecutive elements of one or a few rows whatever
// the row length.
template <int THREADS>
CMT_DEVICE void cmt_copy_block_async(unsigned dst, int dst_ld, const float* src, int src_ld, int rows, int cols, int tid) {
  const int dr = THREADS / cols, dc = THREADS % cols;
  int r = tid / cols, c = tid % cols;
  #pragma unroll 1
  while (r < rows) {
    cmt_cp_async_4_to(dst + (r * dst_ld + c) * 4, src + cmt_offset(r, c, src_ld), true);
    r += dr;
    c += dc;
    if (c >= cols) c -= cols, ++r;
  }
}

// C[row0.., col0..] = alpha * A[row0..row0+vm, :] x B[:, col0..col0+vn] + beta * C over all of K, for
// a small block (vm * vn <= CMT_THIN_PIECE * THIN_EDGE). K is taken in chunks staged in shared
// memory (`smem`, smem_floats floats, 16-byte aligned); when the outputs are fewer than the
// threads, groups of threads take interleaved k and their partials are added in group order.
// All THREADS threads call it; it starts and ends with a barrier.
template <int THREADS>
CMT_DEVICE void cmt_thin_block(const float* __restrict__ A, int lda, const float* __restrict__ B, int ldb,
                               float* __restrict__ C, int ldc, int K, int row0, int col0, int vm, int vn, float alpha,
                               float beta, float* smem, int smem_floats, int tid) {
  const int outputs = vm * vn;
  const int groups = outputs < THREADS ? THREADS / outputs : 1;
  // Floats of `smem`: the sums (outputs), the groups' partials (THREADS), then per chunk of kc k the
  // A rows at as[r*as_ld + kk] (as_ld odd, so lanes on consecutive rows hit different banks) and B
  // at bs[kk*vn + c]. Read and written through 32-bit shared addresses (see cmt_store_shared).
  const int partials_at = (outputs + 3) & ~3, as_at = partials_at + THREADS;
  const int kc = (smem_floats - as_at - vm) / (vm + vn);
  const int as_ld = kc | 1;
  const int bs_at = as_at + vm * as_ld;
  const unsigned sums = cmt_smem_address(smem), partials = sums + partials_at * 4;
  const unsigned as = sums + as_at * 4, bs = sums + bs_at * 4;
  __syncthreads();  // the caller's shared memory is free
  #pragma unroll 1
  for (int i = tid; i < outputs; i += THREADS) cmt_store_shared(sums + i * 4, 0.0f);
  #pragma unroll 1
  for (int kb = 0; kb < K; kb += kc) {
    const int len = K - kb < kc ? K - kb : kc;
    __syncthreads();  // the previous chunk is consumed
    cmt_copy_block_async<THREADS>(as, as_ld, A + cmt_offset(row0, kb, lda), lda, vm, len, tid);
    cmt_copy_block_async<THREADS>(bs, vn, B + cmt_offset(kb, col0, ldb), ldb, len, vn, tid);
    cmt_cp_async_commit();
    cmt_cp_async_wait<0>();
    __syncthreads();
    #pragma unroll 1
    for (int i = tid; i < outputs * groups; i += THREADS) {
      const int o = i % outputs, g = i / outputs;
      const int r = o / vn, c = o - r * vn;
      // a + 4*kk holds A[row0 + r][kb + kk]; b + 4*kk*vn holds B[kb + kk][col0 + c].
      const unsigned a = as + r * as_ld * 4, b = bs + c * 4;
      float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;  // four chains hide the FMA latency
      int kk = g;
      #pragma unroll 1
      for (; kk + 3 * groups < len; kk += 4 * groups) {
        acc0 = fmaf(cmt_load_shared(a + kk * 4), cmt_load_shared(b + kk * vn * 4), acc0);
        acc1 = fmaf(cmt_load_shared(a + (kk + groups) * 4), cmt_load_shared(b + (kk + groups) * vn * 4), acc1);
        acc2 = fmaf(cmt_load_shared(a + (kk + 2 * groups) * 4), cmt_load_shared(b + (kk + 2 * groups) * vn * 4), acc2);
        acc3 = fmaf(cmt_load_shared(a + (kk + 3 * groups) * 4), cmt_load_shared(b + (kk + 3 * groups) * vn * 4), acc3);
      }
      #pragma unroll 1
      for (; kk < len; kk += groups) acc0 = fmaf(cmt_load_shared(a + kk * 4), cmt_load_shared(b + kk * vn * 4), acc0);
      const float acc = (acc0 + acc1) + (acc2 + acc3);
      if (groups == 1)
        cmt_store_shared(sums + o * 4, cmt_load_shared(sums + o * 4) + acc);
      else
        cmt_store_shared(partials + i * 4, acc);
    }
    if (groups > 1) {
      __syncthreads();
      #pragma unroll 1
      for (int o = tid; o < outputs; o += THREADS) {
        float acc = 0.0f;
        #pragma unroll 1
        for (int g = 0; g < groups; ++g) acc += cmt_load_shared(partials + (g * outputs + o) * 4);
        cmt_store_shared(sums + o * 4, cmt_load_shared(sums + o * 4) + acc);
      }
    }
  }
  __syncthreads();
  #pragma unroll 1
  for (int i = tid; i < outputs; i += THREADS) {
    const int r = i / vn, c = i - r * vn;
    cmt_store_c(C, ldc, row0 + r, col0 + c, cmt_load_shared(sums + i * 4), alpha, beta);
  }
}

// The thin strips of C, cut in pieces of at most CMT_THIN_PIECE rows (the thin column) or columns
// (the thin row, which holds the corner); worker w of `workers` computes pieces w, w + workers, ...
template <int BM, int BN, int THREADS, int THIN_EDGE, int INLINE_ROWS>
CMT_DEVICE void cmt_thin_edges_share(const CmtThinEdges<BM, BN, THIN_EDGE, INLINE_ROWS>& edges, int M, int N, int K,
                                     const float* __restrict__ A, int lda, const float* __restrict__ B, int ldb,
                                     float* __restrict__ C, int ldc, float alpha, float beta, float* smem,
                                     int smem_floats, int tid, int worker, int workers) {
  const int col_rows = edges.col_rows(M), col_first = edges.col_first(), row_first = edges.row_first();
  // Pieces as narrow as lets every worker take one (each piece streams a whole panel of A or B
  // through one SM, so narrower pieces on more SMs finish sooner), from 8 to CMT_THIN_PIECE wide.
  int piece = (edges.lines(M, N) + workers - 1) / workers;
  piece = piece < 8 ? 8 : piece > CMT_THIN_PIECE ? CMT_THIN_PIECE : piece;
  const int col_pieces = (col_rows + piece - 1) / piece;
  const int row_pieces = edges.row_strip(M) ? (N + piece - 1) / piece : 0;
  #pragma unroll 1
  for (int p = worker; p < col_pieces + row_pieces; p += workers) {
    if (p < col_pieces) {
      const int row0 = p * piece;
      const int vm = col_rows - row0 < piece ? col_rows - row0 : piece;
      cmt_thin_block<THREADS>(A, lda, B, ldb, C, ldc, K, row0, col_first, vm, N - col_first, alpha, beta, smem,
                              smem_floats, tid);
    } else {
      const int col0 = (p - col_pieces) * piece;
      const int vn = N - col0 < piece ? N - col0 : piece;
      cmt_thin_block<THREADS>(A, lda, B, ldb, C, ldc, K, row_first, col0, M - row_first, vn, alpha, beta, smem,
                              smem_floats, tid);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Dedicated thin workers (THIN_WORKERS > 0): bulk copies, mbarriers and the streamed thin strips.
// ---------------------------------------------------------------------------------------------

// Floats between `p` and the 16-byte boundary at or below it.
CMT_DEVICE int cmt_quad_offset(const float* p) { return (int)((reinterpret_cast<unsigned long long>(p) >> 2) & 3); }

// Bulk (TMA) copies into shared memory, completed on an mbarrier (sm_90+). Shared addresses are
// 32-bit; the mbarrier is 8 bytes, 8-byte aligned.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CMT_HAS_BULK_COPY 1
#else
#define CMT_HAS_BULK_COPY 0
#endif

CMT_DEVICE void cmt_mbarrier_init(unsigned bar, int count) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_init_fence() {
#if CMT_HAS_BULK_COPY
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Arrives once on `bar` and expects `bytes` more from bulk copies before the phase completes.
CMT_DEVICE void cmt_mbarrier_arrive_expect(unsigned bar, unsigned bytes) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_arrive(unsigned bar) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_wait(unsigned bar, unsigned parity) {
#if CMT_HAS_BULK_COPY
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
// Copies `bytes` (a multiple of 16) from 16-byte-aligned global memory to shared memory.
CMT_DEVICE void cmt_bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
#if CMT_HAS_BULK_COPY
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}

// The span of a row: the 16-byte-aligned run of whole quads that holds `cols` floats from `row`.
// A quad that holds an element of the row lies in a mapped page, so reading all of it is safe.
struct CmtSpan {
  const float* from;  // 16-byte aligned
  int lead;           // floats before the row's first element
  int quads;
};
CMT_DEVICE CmtSpan cmt_span(const float* row, int cols) {
  CmtSpan sp;
  sp.lead = cmt_quad_offset(row);
  sp.from = row - sp.lead;
  sp.quads = (sp.lead + cols + 3) / 4;
  return sp;
}

// Bulk-copies the spans of the rows of a rows x cols block (row stride src_ld floats) to the 32-bit
// shared address dst (row stride dst_ld floats, a multiple of 4, at least cols + 6 rounded up to 4):
// element (r, c) lands at dst[r * dst_ld + cmt_quad_offset(src + r * src_ld) + c]. Called by one
// whole warp; lane 0 first arrives on `bar` expecting all the bytes, then the lanes copy a row each
// (sm_90+).
CMT_DEVICE void cmt_copy_spans_warp(unsigned dst, int dst_ld, const float* src, int src_ld, int rows, int cols,
                                    unsigned bar, int lane) {
#if CMT_HAS_BULK_COPY
  unsigned bytes = 0;
  #pragma unroll 1
  for (int r = lane; r < rows; r += 32) bytes += cmt_span(src + cmt_offset(r, 0, src_ld), cols).quads * 16;
  bytes = __reduce_add_sync(0xffffffffu, bytes);
  if (lane == 0) cmt_mbarrier_arrive_expect(bar, bytes);
  __syncwarp();
  #pragma unroll 1
  for (int r = lane; r < rows; r += 32) {
    const CmtSpan sp = cmt_span(src + cmt_offset(r, 0, src_ld), cols);
    cmt_bulk_copy(dst + r * dst_ld * 4, sp.from, sp.quads * 16, bar);
  }
#endif
}

// The thin strips of C computed by `workers` dedicated blocks, the first blocks past the interior
// tiles: on a grid that leaves SMs idle (1025^2 with 64x128 tiles: 128 interior tiles on 132 SMs)
// they run beside the interior tiles instead of after them. The strips' lines (rows of the thin
// column, then columns of the thin row) are dealt out in equal runs, one per worker. The few thin
// columns of B and thin rows of A (K x THIN_EDGE each) are staged in shared memory once. Warp 0 then
// streams the run's panels of A (a row per consumer warp) and B (128 columns per consumer warp)
// through a CMT_THIN_STAGES-deep ring in chunks of k, as bulk copies of 16-byte-aligned row spans,
// and the other warps multiply them; full and empty mbarriers pass the stages between them. A
// consumer warp owns its outputs: on a thin-column row its lanes interleave k (summed by shuffles,
// deterministic); on thin-row columns each lane sums all k of its 4 columns. Before sm_90, with one
// warp, or when the thin rows and columns do not fit in shared memory, the workers share the strips
// out with cmt_thin_edges_share instead. `smem` is the 32-bit shared address of the dynamic shared
// memory, smem_floats floats; all THREADS threads call it.
#define CMT_THIN_STAGES 4
#define CMT_THIN_SMEM_FLOATS 40960  // 160 KiB, what THIN_WORKERS builds ask for (multistage.toml)

// A piece of a dedicated worker's run of thin lines (see cmt_thin_edges_stream).
struct CmtThinPiece {
  int line, lines;  // lines [line, line + lines) of the run
  int row0, col0, vm, vn;
  bool column;
  int kc, chunks;   // k per chunk, chunks over K
};

template <int BM, int BN, int THREADS, int THIN_EDGE, int INLINE_ROWS>
CMT_DEVICE void cmt_thin_edges_stream(const CmtThinEdges<BM, BN, THIN_EDGE, INLINE_ROWS>& edges, int M, int N, int K,
                                      const float* __restrict__ A, int lda, const float* __restrict__ B, int ldb,
                                      float* __restrict__ C, int ldc, float alpha, float beta, unsigned smem,
                                      int smem_floats, int tid, int worker, int workers) {
  constexpr int WARPS = THREADS / 32, STAGES = CMT_THIN_STAGES;
  constexpr int TE4 = THIN_EDGE > 4 ? 8 : 4;         // thin rows or columns (<= 8), padded
  constexpr int CWARPS = WARPS > 1 ? WARPS - 1 : 1;  // consumer warps
  constexpr int COL_PIECE = CWARPS;                  // thin-column rows per piece: one per consumer warp
  constexpr int ROW_PIECE = 128 * CWARPS;            // thin-row columns per piece: 128 per consumer warp
  constexpr int SPAN_LD = (ROW_PIECE + 6 + 3) / 4 * 4;
  // Shared memory: full and empty mbarriers (8 bytes each), B's thin columns and A's thin rows
  // transposed (K x TE4 each; zero past the edge), then STAGES stages: a column piece's A panel
  // (COL_PIECE spans, stride as_ld) or a row piece's B panel (kc_row spans, stride SPAN_LD).
  constexpr int BAR_FLOATS = (STAGES * 4 + 3) / 4 * 4;
  const int small_floats = 2 * K * TE4;
  const int stage_floats = (smem_floats - BAR_FLOATS - small_floats) / STAGES / 4 * 4;
  const int kc_col = stage_floats / COL_PIECE - 6, kc_row = stage_floats / SPAN_LD;
  if (!CMT_HAS_BULK_COPY || WARPS < 2 || kc_col < 64 || kc_row < 1) {
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta,
                                                     cmt_dynamic_smem_floats(), smem_floats, tid, worker, workers);
    return;
  }
  const int warp = tid / 32, lane = tid % 32;
  const int col_rows = edges.col_rows(M), col_first = edges.col_first(), row_first = edges.row_first();
  const int lines = edges.lines(M, N);
  const int first = (int)((long long)lines * worker / workers), end = (int)((long long)lines * (worker + 1) / workers);
  const unsigned full = smem, empty = smem + STAGES * 8;
  const unsigned bt = smem + BAR_FLOATS * 4, at = bt + K * TE4 * 4, ring = at + K * TE4 * 4;
  const int as_ld = (kc_col + 6) / 4 * 4;
  const int chunks_col = K > kc_col ? (K + kc_col - 1) / kc_col : 1;
  const int chunks_row = K > kc_row ? (K + kc_row - 1) / kc_row : 1;
  const int col_lines = (end < col_rows ? end : col_rows) - (first < col_rows ? first : col_rows);
  const int jobs = (col_lines + COL_PIECE - 1) / COL_PIECE * chunks_col +
                   (end - first - col_lines + ROW_PIECE - 1) / ROW_PIECE * chunks_row;

  auto piece_at = [&](int line) {
    CmtThinPiece pc;
    pc.line = line;
    pc.column = line < col_rows;
    if (pc.column) {
      const int last = end < col_rows ? end : col_rows;
      pc.lines = last - line < COL_PIECE ? last - line : COL_PIECE;
      pc.row0 = line, pc.col0 = col_first, pc.vm = pc.lines, pc.vn = N - col_first;
      pc.kc = kc_col, pc.chunks = chunks_col;
    } else {
      pc.lines = end - line < ROW_PIECE ? end - line : ROW_PIECE;
      pc.row0 = row_first, pc.col0 = line - col_rows, pc.vm = M - row_first, pc.vn = pc.lines;
      pc.kc = kc_row, pc.chunks = chunks_row;
    }
    return pc;
  };

  __syncthreads();  // the caller's shared memory is free
  // B's thin columns as bt[k * TE4 + c], A's thin rows as at[k * TE4 + r].
  const int thin_cols = N - col_first, thin_rows = M - row_first;  // <= 0 where that strip is absent
  #pragma unroll 1
  for (int i = tid; i < K * TE4; i += THREADS) {
    const int k = i / TE4, e = i % TE4;
    cmt_cp_async_4_to(bt + i * 4, e < thin_cols ? B + cmt_offset(k, col_first + e, ldb) : B,
                      e < thin_cols && col_lines > 0);
    cmt_cp_async_4_to(at + i * 4, e < thin_rows ? A + cmt_offset(row_first + e, k, lda) : A,
                      e < thin_rows && edges.thin_m && end - first > col_lines);
  }
  cmt_cp_async_commit();
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      cmt_mbarrier_init(full + s * 8, 1);        // the producer's copies
      cmt_mbarrier_init(empty + s * 8, CWARPS);  // each consumer warp done reading
    }
    cmt_mbarrier_init_fence();
  }
  cmt_cp_async_wait<0>();
  __syncthreads();

  // Job j is chunk `chunk` of piece pc.
  CmtThinPiece pc = piece_at(first);
  int chunk = 0;
  if (warp == 0) {  // the producer
    #pragma unroll 1
    for (int j = 0; j < jobs; ++j) {
      const int s = j % STAGES;
      if (j >= STAGES) cmt_mbarrier_wait(empty + s * 8, (j / STAGES - 1) & 1);  // the consumers are done with it
      const int kb = chunk * pc.kc, len = K - kb < pc.kc ? K - kb : pc.kc;
      const unsigned stage = ring + s * stage_floats * 4;
      if (pc.column)
        cmt_copy_spans_warp(stage, as_ld, A + cmt_offset(pc.row0, kb, lda), lda, len > 0 ? pc.vm : 0, len, full + s * 8,
                            lane);
      else
        cmt_copy_spans_warp(stage, SPAN_LD, B + cmt_offset(kb, pc.col0, ldb), ldb, len, pc.vn, full + s * 8, lane);
      if (++chunk == pc.chunks) chunk = 0, pc = piece_at(pc.line + pc.lines);
    }
    return;
  }

  // Consumers. Column piece: acc[0][c] for row cw of the piece and thin column c, over this lane's k.
  // Row piece: acc[u][r] for thin row r and column cw * 128 + lane + 32 * u of the piece, over all k.
  const int cw = warp - 1;
  float acc[4][TE4];
  auto clear = [&]() {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int c = 0; c < TE4; ++c) acc[u][c] = 0.0f;
  };
  clear();
  #pragma unroll 1
  for (int j = 0; j < jobs; ++j) {
    const int s = j % STAGES;
    const int kb = chunk * pc.kc, len = K - kb < pc.kc ? K - kb : pc.kc;
    const unsigned stage = ring + s * stage_floats * 4;
    cmt_mbarrier_wait(full + s * 8, (j / STAGES) & 1);
    if (pc.column) {
      if (cw < pc.vm) {
        const unsigned a_row = stage + (cw * as_ld + cmt_quad_offset(A + cmt_offset(pc.row0 + cw, kb, lda))) * 4;
        const unsigned b_k = bt + kb * TE4 * 4;
        #pragma unroll 4
        for (int kk = lane; kk < len; kk += 32) {
          const float a = cmt_load_shared(a_row + kk * 4);
#pragma unroll
          for (int c = 0; c < TE4; c += 4) {
            const float4 v = cmt_load_shared4(b_k + (kk * TE4 + c) * 4);
            acc[0][c] = fmaf(a, v.x, acc[0][c]);
            acc[0][c + 1] = fmaf(a, v.y, acc[0][c + 1]);
            acc[0][c + 2] = fmaf(a, v.z, acc[0][c + 2]);
            acc[0][c + 3] = fmaf(a, v.w, acc[0][c + 3]);
          }
        }
      }
    } else {
      const int lead0 = cmt_quad_offset(B + cmt_offset(kb, pc.col0, ldb));
      int b_col[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = cw * 128 + lane + 32 * u;
        b_col[u] = c < pc.vn ? c : pc.vn - 1;
      }
      const unsigned a_k = at + kb * TE4 * 4;
      #pragma unroll 2
      for (int kk = 0; kk < len; ++kk) {
        const unsigned b_row = stage + (kk * SPAN_LD + ((lead0 + kk * ldb) & 3)) * 4;
        float av[TE4];
#pragma unroll
        for (int r = 0; r < TE4; r += 4) {
          const float4 v = cmt_load_shared4(a_k + (kk * TE4 + r) * 4);
          av[r] = v.x, av[r + 1] = v.y, av[r + 2] = v.z, av[r + 3] = v.w;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float bv = cmt_load_shared(b_row + b_col[u] * 4);
#pragma unroll
          for (int r = 0; r < TE4; ++r) acc[u][r] = fmaf(av[r], bv, acc[u][r]);
        }
      }
    }
    __syncwarp();
    if (lane == 0) cmt_mbarrier_arrive(empty + s * 8);  // this warp is done with the stage
    if (++chunk < pc.chunks) continue;
    // The piece is done: each consumer warp stores its own outputs.
    if (pc.column) {
#pragma unroll
      for (int c = 0; c < TE4; ++c) {
        float v = acc[0][c];
#pragma unroll
        for (int step = 16; step > 0; step /= 2) v += __shfl_xor_sync(0xffffffffu, v, step);
        if (lane == 0 && cw < pc.vm && c < pc.vn) cmt_store_c(C, ldc, pc.row0 + cw, pc.col0 + c, v, alpha, beta);
      }
    } else {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = cw * 128 + lane + 32 * u;
#pragma unroll
        for (int r = 0; r < TE4; ++r)
          if (r < pc.vm && c < pc.vn) cmt_store_c(C, ldc, pc.row0 + r, pc.col0 + c, acc[u][r], alpha, beta);
      }
    }
    clear();
    chunk = 0;
    pc = piece_at(pc.line + pc.lines);
  }
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

// 16-byte load from the shared memory of the cluster's block `rank`, at the offset the 32-bit
// shared address `local` has in ours.
CMT_DEVICE float4 cmt_cluster_load4(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

// The end of a cluster split-K kernel: the CLUSTER_K blocks of the cluster (one per grid z) hold
// partial sums of the same block tile. Each parks its partial in its own shared memory (BM x BN
// floats at the 32-bit shared address `smem`), then rank r sums the float4 groups g with
// g % CLUSTER_K == r over ranks 0, 1, ... in that order (deterministic) and writes them to C.
// Every thread of every block must call this (it holds cluster barriers); the threads
// tid < TILE_THREADS hold the partials. The caller has no shared-memory reads or copies pending.
template <int CLUSTER_K, int TILE_THREADS, class Tile>
CMT_DEVICE void cmt_cluster_reduce_store(const Tile& tile, unsigned smem, int tid, float* C, int ldc, int M, int N,
                                         int block_m, int block_n, float alpha, float beta, bool interior,
                                         bool vector_c) {
  constexpr int GROUPS = Tile::ROWS * Tile::COLS / 4;  // float4 groups of accumulators per thread
  const int rank = blockIdx.z;  // the cluster spans the grid's z extent, so this is the cluster rank
  __syncthreads();
  const unsigned parked = smem + tid * 16;  // this thread's float4 of group g at parked + g * TILE_THREADS * 16
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      const float* v = &tile.acc[(4 * g) / Tile::COLS][(4 * g) % Tile::COLS];
      asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(parked + g * TILE_THREADS * 16), "f"(v[0]),
                   "f"(v[1]), "f"(v[2]), "f"(v[3])
                   : "memory");
    }
  }
  cmt_cluster_sync();
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      if (g % CLUSTER_K != rank) continue;
      const unsigned slot = parked + g * TILE_THREADS * 16;
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
