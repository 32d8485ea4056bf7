// Thin edges (THIN_EDGE > 0): the interior/thin split of the grid (CmtThinEdges), block origins
// that give the interior tiles to the first blocks, the shared path on which interior or thin-tile
// blocks compute the thin strips in pieces (cmt_thin_edges_share), and the dedicated workers'
// stream of bulk copies (cmt_thin_edges_stream, multistage's THIN_WORKERS). The shared path computes
// floats or ints (T, 4 bytes; int wraps, cmt_elem.cuh); the stream computes floats.
#pragma once

#include "cmt_common.cuh"
#include "cmt_elem.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_smem_elem.cuh"

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
// With INLINE_THIN_ROWS = r > 0, a thin row of at most r rows is multiplied by the blocks of the
// last interior tile row inside their main loop (multistage's CmtInlineRows), above the thin
// column, which then holds the corner.
template <int BM, int BN, int THIN_EDGE, int INLINE_THIN_ROWS = 0>
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
    return INLINE_THIN_ROWS > 0 && thin_m && interior_tiles() > 0 && M - inner_m * BM <= INLINE_THIN_ROWS;
  }
  // 1 when the thin row is a strip of its own (computed like the thin column).
  CMT_DEVICE int row_strip(int M) const { return INLINE_THIN_ROWS > 0 ? thin_m && !rows_inline(M) : thin_m; }
  // The thin column: rows [0, col_rows(M)) of columns [col_first(), N).
  CMT_DEVICE int col_rows(int M) const { return !thin_n ? 0 : row_strip(M) ? inner_m * BM : M; }
  CMT_DEVICE int col_first() const { return inner_n * BN; }
  // The thin row, which holds the corner unless inline: rows [row_first(), M), all columns.
  CMT_DEVICE int row_first() const { return inner_m * BM; }
  // Rows of the thin column plus columns of the thin row left to the strips.
  CMT_DEVICE int lines(int M, int N) const { return col_rows(M) + (row_strip(M) ? N : 0); }
};

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
// the row length. TRANSPOSED: the source holds the block transposed (element (r, c) is
// src[c * src_ld + r], a cols x rows block), and the threads walk it in its own row-major order.
template <int THREADS, int TRANSPOSED = 0, class T>
CMT_DEVICE void cmt_copy_block_async(unsigned dst, int dst_ld, const T* src, int src_ld, int rows, int cols, int tid) {
  static_assert(sizeof(T) == 4, "4-byte elements");
  if (TRANSPOSED) {
    const int t = rows;  // the source's rows are the block's columns
    rows = cols, cols = t;
  }
  const int dr = THREADS / cols, dc = THREADS % cols;
  int r = tid / cols, c = tid % cols;  // of the source
  #pragma unroll 1
  while (r < rows) {
    cmt_cp_async_4_to(dst + (TRANSPOSED ? c * dst_ld + r : r * dst_ld + c) * 4,
                      reinterpret_cast<const float*>(src + cmt_offset(r, c, src_ld)), true);
    r += dr;
    c += dc;
    if (c >= cols) c -= cols, ++r;
  }
}

// C[row0.., col0..] = alpha * A[row0..row0+vm, :] x B[:, col0..col0+vn] + beta * C over all of K, for
// a small block (vm * vn <= CMT_THIN_PIECE * THIN_EDGE). K is taken in chunks staged in shared
// memory (`smem`, smem_floats floats, 16-byte aligned); when the outputs are fewer than the
// threads, groups of threads take interleaved k and their partials are added in group order.
// All THREADS threads call it; it starts and ends with a barrier. TRANS_A, TRANS_B: A and B stand for
// op(A) and op(B) (stored K x M, N x K); their chunks are read along the stored rows. T: float or int
// (4 bytes: `floats` below count 4-byte words).
template <int THREADS, int TRANS_A = 0, int TRANS_B = 0, class T>
CMT_DEVICE void cmt_thin_block(const T* __restrict__ A, int lda, const T* __restrict__ B, int ldb,
                               T* __restrict__ C, int ldc, int K, int row0, int col0, int vm, int vn, T alpha,
                               T beta, void* smem, int smem_floats, int tid) {
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
  for (int i = tid; i < outputs; i += THREADS) cmt_store_shared_elem(sums + i * 4, T(0));
  #pragma unroll 1
  for (int kb = 0; kb < K; kb += kc) {
    const int len = K - kb < kc ? K - kb : kc;
    __syncthreads();  // the previous chunk is consumed
    cmt_copy_block_async<THREADS, TRANS_A>(as, as_ld, A + cmt_offset_op<TRANS_A>(row0, kb, lda), lda, vm, len, tid);
    cmt_copy_block_async<THREADS, TRANS_B>(bs, vn, B + cmt_offset_op<TRANS_B>(kb, col0, ldb), ldb, len, vn, tid);
    cmt_cp_async_commit();
    cmt_cp_async_wait<0>();
    __syncthreads();
    #pragma unroll 1
    for (int i = tid; i < outputs * groups; i += THREADS) {
      const int o = i % outputs, g = i / outputs;
      const int r = o / vn, c = o - r * vn;
      // a + 4*kk holds A[row0 + r][kb + kk]; b + 4*kk*vn holds B[kb + kk][col0 + c].
      const unsigned a = as + r * as_ld * 4, b = bs + c * 4;
      T acc0 = T(0), acc1 = T(0), acc2 = T(0), acc3 = T(0);  // four chains hide the FMA latency
      int kk = g;
      #pragma unroll 1
      for (; kk + 3 * groups < len; kk += 4 * groups) {
        acc0 = cmt_mad(cmt_load_shared_elem<T>(a + kk * 4), cmt_load_shared_elem<T>(b + kk * vn * 4), acc0);
        acc1 = cmt_mad(cmt_load_shared_elem<T>(a + (kk + groups) * 4),
                       cmt_load_shared_elem<T>(b + (kk + groups) * vn * 4), acc1);
        acc2 = cmt_mad(cmt_load_shared_elem<T>(a + (kk + 2 * groups) * 4),
                       cmt_load_shared_elem<T>(b + (kk + 2 * groups) * vn * 4), acc2);
        acc3 = cmt_mad(cmt_load_shared_elem<T>(a + (kk + 3 * groups) * 4),
                       cmt_load_shared_elem<T>(b + (kk + 3 * groups) * vn * 4), acc3);
      }
      #pragma unroll 1
      for (; kk < len; kk += groups)
        acc0 = cmt_mad(cmt_load_shared_elem<T>(a + kk * 4), cmt_load_shared_elem<T>(b + kk * vn * 4), acc0);
      const T acc = cmt_add(cmt_add(acc0, acc1), cmt_add(acc2, acc3));
      if (groups == 1)
        cmt_store_shared_elem(sums + o * 4, cmt_add(cmt_load_shared_elem<T>(sums + o * 4), acc));
      else
        cmt_store_shared_elem(partials + i * 4, acc);
    }
    if (groups > 1) {
      __syncthreads();
      #pragma unroll 1
      for (int o = tid; o < outputs; o += THREADS) {
        T acc = T(0);
        #pragma unroll 1
        for (int g = 0; g < groups; ++g) acc = cmt_add(acc, cmt_load_shared_elem<T>(partials + (g * outputs + o) * 4));
        cmt_store_shared_elem(sums + o * 4, cmt_add(cmt_load_shared_elem<T>(sums + o * 4), acc));
      }
    }
  }
  __syncthreads();
  #pragma unroll 1
  for (int i = tid; i < outputs; i += THREADS) {
    const int r = i / vn, c = i - r * vn;
    cmt_store_c(C, ldc, row0 + r, col0 + c, cmt_load_shared_elem<T>(sums + i * 4), alpha, beta);
  }
}

// The thin strips of C, cut in pieces of at most CMT_THIN_PIECE rows (the thin column) or columns
// (the thin row, which holds the corner); worker w of `workers` computes pieces w, w + workers, ...
// TRANS_A, TRANS_B: the layout, and T the element type, as in cmt_thin_block.
template <int BM, int BN, int THREADS, int THIN_EDGE, int TRANS_A = 0, int TRANS_B = 0, int INLINE_THIN_ROWS, class T>
CMT_DEVICE void cmt_thin_edges_share(const CmtThinEdges<BM, BN, THIN_EDGE, INLINE_THIN_ROWS>& edges, int M, int N,
                                     int K, const T* __restrict__ A, int lda, const T* __restrict__ B, int ldb,
                                     T* __restrict__ C, int ldc, T alpha, T beta, void* smem,
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
      cmt_thin_block<THREADS, TRANS_A, TRANS_B>(A, lda, B, ldb, C, ldc, K, row0, col_first, vm, N - col_first, alpha,
                                                beta, smem, smem_floats, tid);
    } else {
      const int col0 = (p - col_pieces) * piece;
      const int vn = N - col0 < piece ? N - col0 : piece;
      cmt_thin_block<THREADS, TRANS_A, TRANS_B>(A, lda, B, ldb, C, ldc, K, row_first, col0, M - row_first, vn, alpha,
                                                beta, smem, smem_floats, tid);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Dedicated thin workers (THIN_WORKERS > 0): row spans copied in bulk and the streamed thin strips
// (the bulk copies and mbarriers themselves are in cmt_ptx.cuh).
// ---------------------------------------------------------------------------------------------

// Floats between `p` and the 16-byte boundary at or below it.
CMT_DEVICE int cmt_quad_offset(const float* p) { return (int)((reinterpret_cast<unsigned long long>(p) >> 2) & 3); }

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
// warp, when the thin rows and columns do not fit in shared memory, or for a transposed operand
// (TRANS_A, TRANS_B: the panels are no longer rows of the stored matrices), the workers share the
// strips out with cmt_thin_edges_share instead. `smem` is the 32-bit shared address of the dynamic shared
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

template <int BM, int BN, int THREADS, int THIN_EDGE, int TRANS_A = 0, int TRANS_B = 0, int INLINE_THIN_ROWS>
CMT_DEVICE void cmt_thin_edges_stream(const CmtThinEdges<BM, BN, THIN_EDGE, INLINE_THIN_ROWS>& edges, int M, int N,
                                      int K, const float* __restrict__ A, int lda, const float* __restrict__ B, int ldb,
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
  if (TRANS_A || TRANS_B || !CMT_HAS_BULK_COPY || WARPS < 2 || kc_col < 64 || kc_row < 1) {
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(
        edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, cmt_dynamic_smem_floats(), smem_floats, tid, worker,
        workers);
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
