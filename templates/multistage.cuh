// Multistage warp-tiled SGEMM: a STAGES-deep ring of shared-memory tiles filled with cp.async, so
// global loads for later k tiles are in flight while the current one is multiplied. A is copied
// element by element into a transposed, padded tile (no alignment needed); B is copied 16 bytes at
// a time when VEC == 4 (aligned inputs) or 4 bytes otherwise. SPLITK > 1 slices each k tile across
// SPLITK groups of warps in the block and sums their partial tiles through shared memory in a fixed
// order, so results are deterministic.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_thin_edges.cuh"
#include "cmt_warp_tile.cuh"

// The kernel's per-block timing hook: empty unless a diagnostic program included
// cmt_diag_block_times.cuh first (scripts/diag/block_times.cu), so the kernel compiles as if it
// were not there.
#ifndef CMT_DIAG_BLOCK_TIMES
#define CMT_DIAG_BLOCK_TIMES
#endif

// Threads and shared-memory ring of the multistage kernels (floats; A transposed, rows padded).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int SPLITK>
struct CmtMultistageShape {
  static constexpr int TILE_THREADS = (BM / WM) * (BN / WN) * 32;  // the threads of one k slice
  static constexpr int THREADS = TILE_THREADS * SPLITK;
  static constexpr int AS_LD = BM + PAD;
  static constexpr int A_STAGE = BK * AS_LD, B_STAGE = BK * BN, STAGE = A_STAGE + B_STAGE;
  static constexpr int RING_FLOATS = STAGES * STAGE;
};

// INLINE_THIN_ROWS = R: a thin row of at most R rows of C below the last interior tile row is
// multiplied by that tile row's blocks inside their main loop. Each k tile, those blocks also copy
// the thin rows' k into the padding of the A stage (columns BM.. of the transposed tile) and multiply
// them by the B stage already there, so the thin row costs no pass of its own over B. Thread t owns
// the columns 4 * (t % (BN/4)) .. + 3 at the k tile's k = t / (BN/4) + KG * s. It reads its values
// after the tile's main multiply and multiplies them after the next k tile's barrier, which hides
// the reads' latency without holding the values across a main multiply (held across it, they made
// these blocks 9% slower on an H100). store() adds the KG partial sums in order (deterministic).
// Builds with INLINE_THIN_ROWS = 0 name it with R = 1 (its arrays need R >= 1) and never use it.
template <int BN, int BK, int THREADS, int R>
struct CmtInlineRows {
  static constexpr int QUADS = BN / 4, KG = THREADS / QUADS, KS = BK / KG > 0 ? BK / KG : 1;  // k per thread
  int rows;  // thin rows this block multiplies (0: none)
  int quad, k0;
  float acc[R][4];  // [thin row][column of the quad]
  float a[KS][R];   // the current k tile's values: A's thin rows
  float4 b[KS];     // and this thread's 4 columns of B
  float c_old[(R * BN + THREADS - 1) / THREADS];  // C at this thread's outputs, read early (beta != 0)

  CMT_DEVICE CmtInlineRows(int rows_, int tid) : rows(rows_), quad(tid % QUADS), k0(tid / QUADS) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
  }

  // Reads the k tile's values: a_pad is the 32-bit shared address of column BM of the A stage (row
  // stride AS_LD floats), bs that of the B stage (row stride BN).
  template <int AS_LD>
  CMT_DEVICE void load(unsigned a_pad, unsigned bs) {
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int k = k0 + s * KG;
      if (R == 1) {
        a[s][0] = cmt_load_shared(a_pad + k * AS_LD * 4);
      } else {
        const float4 v = cmt_load_shared4(a_pad + k * AS_LD * 4);
        const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int r = 0; r < R; ++r) a[s][r] = w[r];
      }
      b[s] = cmt_load_shared4(bs + (k * BN + 4 * quad) * 4);
    }
  }

  CMT_DEVICE void multiply() {
#pragma unroll
    for (int s = 0; s < KS; ++s)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        acc[r][0] = fmaf(a[s][r], b[s].x, acc[r][0]), acc[r][1] = fmaf(a[s][r], b[s].y, acc[r][1]);
        acc[r][2] = fmaf(a[s][r], b[s].z, acc[r][2]), acc[r][3] = fmaf(a[s][r], b[s].w, acc[r][3]);
      }
  }

  // Reads C at this thread's outputs of rows row0.., columns block_n.. (output o = tid + THREADS * i
  // is row o / BN, column o % BN), so store() need not wait for them.
  CMT_DEVICE void read_c(const float* __restrict__ C, int ldc, int N, int row0, int block_n, float beta, int tid) {
#pragma unroll
    for (int i = 0; i < (R * BN + THREADS - 1) / THREADS; ++i) {
      const int o = tid + THREADS * i, r = o / BN, c = o % BN;
      c_old[i] = beta != 0.0f && r < rows && block_n + c < N ? C[cmt_offset(row0 + r, block_n + c, ldc)] : 0.0f;
    }
  }

  // Adds the partial sums over the k groups in order and writes C = alpha * sum + beta * C at this
  // thread's outputs. `scratch` is the 32-bit shared address of 4 * R * THREADS free floats; all
  // THREADS threads call it, after their last reads of the ring.
  CMT_DEVICE void store(unsigned scratch, int tid, float* __restrict__ C, int ldc, int N, int row0, int block_n,
                        float alpha, float beta) const {
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) cmt_store_shared(scratch + ((k0 * R + r) * BN + 4 * quad + c) * 4, acc[r][c]);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < (R * BN + THREADS - 1) / THREADS; ++i) {
      const int o = tid + THREADS * i, r = o / BN, c = o % BN;
      if (r >= rows || block_n + c >= N) continue;
      float sum = 0.0f;
#pragma unroll
      for (int g = 0; g < KG; ++g) sum += cmt_load_shared(scratch + ((g * R + r) * BN + c) * 4);
      C[cmt_offset(row0 + r, block_n + c, ldc)] = beta != 0.0f ? fmaf(beta, c_old[i], alpha * sum) : alpha * sum;
    }
  }
};

// Multiplies k tiles [kt_begin, kt_end) of the block tile at (block_m, block_n) into `tile` through
// the cp.async ring at the start of the kernel's dynamic shared memory. With SPLITK > 1, slice 0's
// threads end up holding the sum of all slices' partials, added in slice order. Returns with no
// copies in flight when SPLITK > 1. With SHORT_LAST_TILE, a last k tile at most half full multiplies
// only its k, split evenly over the slices, instead of a whole zero-filled tile (a rolled loop,
// which costs registers in some builds).
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          bool SHORT_LAST_TILE = false, int INLINE_THIN_ROWS = 0, int A_CHUNK = 8>
CMT_DEVICE void cmt_multistage_accumulate(
    CmtWarpTile<BN, WM, WN, WNITER, TM, TN>& tile, int tid, int M, int N, int K, const float* __restrict__ A, int lda,
    const float* __restrict__ B, int ldb, int block_m, int block_n, int kt_begin, int kt_end,
    CmtInlineRows<BN, BK, CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS,
                  (INLINE_THIN_ROWS > 0 ? INLINE_THIN_ROWS : 1)>* inline_rows = nullptr,
    const float* __restrict__ thin_a = nullptr) {
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN>;
  using Shape = CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>;
  constexpr int TILE_THREADS = Shape::TILE_THREADS, THREADS = Shape::THREADS, AS_LD = Shape::AS_LD;
  constexpr int A_STAGE = Shape::A_STAGE, STAGE = Shape::STAGE;
  constexpr int K_PER_SLICE = BK / SPLITK;
  // A is copied in chunks of A_CHUNK consecutive k: A_CHUNK lanes walk along k, the next A_CHUNK take
  // the next row. Stored transposed with rows padded to BM+PAD (PAD = 4), the 32 lanes of a copy of
  // 8-k chunks (one 32-byte sector per row) hit 32 different banks; 16-k chunks read longer runs per
  // row at the cost of 2-way bank conflicts on the store. The descriptors keep k tiles whole chunks (BK
  // is a multiple of 8; multistage's A_CHUNK = 16 needs BK a multiple of 16; clusterk always takes 8).
  static_assert(BK % A_CHUNK == 0, "a k tile must be a whole number of A_CHUNK-k chunks of A");
  constexpr int A_ROWS_PER_PASS = THREADS / A_CHUNK;
  constexpr int A_LOADS = BM * BK / THREADS;
  constexpr int B_VECS_PER_ROW = BN / VEC;
  constexpr int B_ROWS_PER_PASS = THREADS / B_VECS_PER_ROW;
  constexpr int B_LOADS = BK / B_ROWS_PER_PASS;

  const int slice = tid / TILE_THREADS;
  const int k_tiles = kt_end - kt_begin;

  // Copy coordinates are fixed across k tiles; only the k offset moves.
  const int a_kk = tid % A_CHUNK, a_row = tid / A_CHUNK;
  const int b_n = (tid % B_VECS_PER_ROW) * VEC, b_k = tid / B_VECS_PER_ROW;
  const int b_cols_left = N - (block_n + b_n);
  const int b_bytes = b_cols_left >= VEC ? VEC * 4 : (b_cols_left > 0 ? b_cols_left * 4 : 0);

  // Full k tiles are copied from per-thread source pointers set up once: a thread's A copies fall
  // on A_GROUPS rows, A_ROWS_PER_PASS apart, at fixed k offsets, and its B copies on rows
  // B_ROWS_PER_PASS apart, so a copy costs a 64-bit add instead of an address computation and a
  // bounds test. Rows (A) and columns (B) outside C are zero-filled from a valid address, so tiles on
  // the edge of C take the same path as interior ones; only a partial last k tile is checked
  // element by element.
  constexpr bool A_GROUPED = BM % A_ROWS_PER_PASS == 0;
  constexpr int A_GROUPS = A_GROUPED ? BM / A_ROWS_PER_PASS : 1;
  const int a_rows_left = M - (block_m + a_row);
  const int a_groups_in =  // this thread's groups g < a_groups_in hold rows of A
      a_rows_left <= 0 ? 0 : (a_rows_left + A_ROWS_PER_PASS - 1) / A_ROWS_PER_PASS;
  const float* a_src = A + cmt_offset(a_groups_in > 0 ? block_m + a_row : 0, a_kk, lda);
  const cmt_index a_group_step = (cmt_index)A_ROWS_PER_PASS * lda;
  const float* b_src = B + cmt_offset(b_k, b_bytes > 0 ? block_n + b_n : 0, ldb);
  const cmt_index b_pass_step = (cmt_index)B_ROWS_PER_PASS * ldb;
  // Shared-memory addresses are formed in 32 bits from one base, so nvcc and NVRTC agree.
  const unsigned smem_base = cmt_dynamic_smem_address();
  const unsigned a_dst0 = smem_base + (a_kk * AS_LD + a_row) * 4;
  const unsigned b_dst0 = smem_base + (A_STAGE + b_k * BN + b_n) * 4;
  // INLINE_THIN_ROWS: thread t < rows * BK copies A[thin row t / BK][k0 + t % BK] into the A
  // padding.
  const int thin_copies = INLINE_THIN_ROWS > 0 ? inline_rows->rows * BK : 0;
  const int thin_r = tid / BK, thin_k = tid % BK;
  const float* thin_src = INLINE_THIN_ROWS > 0 && tid < thin_copies ? thin_a + cmt_offset(thin_r, thin_k, lda) : A;
  const unsigned thin_dst0 = smem_base + (thin_k * AS_LD + BM + thin_r) * 4;
  const bool thin_rows = INLINE_THIN_ROWS > 0 && thin_copies > 0;  // this block multiplies thin rows

  // Fills ring stage `stage` with k tile kt_begin + t.
  auto load_tile = [&](int stage, int t) {
    const int k0 = (kt_begin + t) * BK;
    if (A_GROUPED && k0 + BK <= K) {
      const unsigned a_dst = a_dst0 + stage * STAGE * 4, b_dst = b_dst0 + stage * STAGE * 4;
      const float* a_k = a_src + k0;
#pragma unroll
      for (int g = 0; g < A_GROUPS; ++g) {
        const bool inside = g < a_groups_in;
        const float* row = inside ? a_k + g * a_group_step : A;  // A: row 0 holds at least BK floats
#pragma unroll
        for (int c = 0; c < BK / A_CHUNK; ++c)
          cmt_cp_async_4_to(a_dst + (c * A_CHUNK * AS_LD + g * A_ROWS_PER_PASS) * 4, row + c * A_CHUNK, inside);
      }
      if (INLINE_THIN_ROWS > 0 && tid < thin_copies)
        cmt_cp_async_4_to(thin_dst0 + stage * STAGE * 4, thin_src + k0, true);
      const float* b_kt = b_src + (cmt_index)k0 * ldb;
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        if (VEC == 4)
          cmt_cp_async_16_to(b_dst + i * B_ROWS_PER_PASS * BN * 4, b_kt + i * b_pass_step, b_bytes);
        else
          cmt_cp_async_4_to(b_dst + i * B_ROWS_PER_PASS * BN * 4, b_kt + i * b_pass_step, b_bytes > 0);
      }
      return;
    }
    const unsigned as = smem_base + stage * STAGE * 4, bs = as + A_STAGE * 4;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int r = a_row + i * A_ROWS_PER_PASS;  // (chunk, row) pairs, rows fastest
      const int m = r % BM, k = (r / BM) * A_CHUNK + a_kk;
      const bool inside = k0 + k < K && block_m + m < M;
      const float* src = inside ? A + cmt_offset(block_m + m, k0 + k, lda) : A;
      cmt_cp_async_4_to(as + (k * AS_LD + m) * 4, src, inside);
    }
    if (INLINE_THIN_ROWS > 0 && tid < thin_copies) {
      const bool inside = k0 + thin_k < K;
      cmt_cp_async_4_to(thin_dst0 + stage * STAGE * 4, inside ? thin_src + k0 : A, inside);
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int k = b_k + i * B_ROWS_PER_PASS;
      const int bytes = k0 + k < K ? b_bytes : 0;
      const float* src = bytes > 0 ? B + cmt_offset(k0 + k, block_n + b_n, ldb) : B;
      if (VEC == 4)
        cmt_cp_async_16_to(bs + (k * BN + b_n) * 4, src, bytes);
      else
        cmt_cp_async_4_to(bs + (k * BN + b_n) * 4, src, bytes > 0);
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_tile(s, s);
    cmt_cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    cmt_cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt is visible to all; everyone is done reading tile kt-1's stage
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_tile(next % STAGES, next);
    cmt_cp_async_commit();
    const unsigned as = smem_base + (kt % STAGES) * STAGE * 4;
    const unsigned bs = as + A_STAGE * 4;
    if (thin_rows && kt > 0) inline_rows->multiply();  // the previous tile's values
    const int k_left = K - (kt_begin + kt) * BK;  // k of C's K from this tile on
    if (SHORT_LAST_TILE && 2 * k_left <= BK) {
      const int per_slice = (k_left + SPLITK - 1) / SPLITK;
      const int k_end = (slice + 1) * per_slice < k_left ? (slice + 1) * per_slice : k_left;
#pragma unroll 1
      for (int k = slice * per_slice; k < k_end; ++k) tile.step_at(as + k * AS_LD * 4, bs + k * BN * 4);
      if (thin_rows) inline_rows->template load<AS_LD>(as + BM * 4, bs);  // zero past K
      continue;
    }
#pragma unroll
    for (int kk = 0; kk < K_PER_SLICE; ++kk) {
      const int k = slice * K_PER_SLICE + kk;
      tile.step_at(as + k * AS_LD * 4, bs + k * BN * 4);
    }
    if (thin_rows) inline_rows->template load<AS_LD>(as + BM * 4, bs);
  }
  if (thin_rows && k_tiles > 0) inline_rows->multiply();

  if (SPLITK > 1) {
    // Slices 1.. park their partial tiles in shared memory; slice 0 adds them in slice order.
    constexpr int ACC = Tile::ROWS * Tile::COLS;
    cmt_cp_async_wait<0>();
    __syncthreads();
    // 32-bit shared addresses, as in the main loop, so nvcc and NVRTC compile the same code.
    const unsigned park = smem_base + (tid % TILE_THREADS) * 4;  // this thread's column of the parked tiles
    constexpr unsigned SLICE_BYTES = ACC * TILE_THREADS * 4, STRIDE = TILE_THREADS * 4;
    if (slice > 0) {
      const unsigned dst = park + (slice - 1) * SLICE_BYTES;
#pragma unroll
      for (int i = 0; i < Tile::ROWS; ++i)
#pragma unroll
        for (int j = 0; j < Tile::COLS; ++j) cmt_store_shared(dst + (i * Tile::COLS + j) * STRIDE, tile.acc[i][j]);
    }
    __syncthreads();
    if (slice == 0) {
      for (int s = 1; s < SPLITK; ++s) {
        const unsigned src = park + (s - 1) * SLICE_BYTES;
#pragma unroll
        for (int i = 0; i < Tile::ROWS; ++i)
#pragma unroll
          for (int j = 0; j < Tile::COLS; ++j) tile.acc[i][j] += cmt_load_shared(src + (i * Tile::COLS + j) * STRIDE);
      }
    }
  }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          int SWIZZLE, int THIN_EDGE, int THIN_WORKERS, int INLINE_THIN_ROWS, int A_CHUNK>
__global__ void __launch_bounds__(CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS,
                                  THIN_EDGE > 0 ? 1 : 0)
    cmt_sgemm_multistage(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                         const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  CMT_DIAG_BLOCK_TIMES;  // diagnostics only; empty in the tuner's and exported builds
  using Shape = CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>;
  constexpr int TILE_THREADS = Shape::TILE_THREADS, THREADS = Shape::THREADS, RING_FLOATS = Shape::RING_FLOATS;
  const int tid = threadIdx.x;
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE, THIN_EDGE>(M, N, block_m, block_n);
  // The descriptor keeps INLINE_THIN_ROWS <= THIN_EDGE, so builds without thin edges have no inline rows.
  static_assert(INLINE_THIN_ROWS >= 0 && INLINE_THIN_ROWS <= THIN_EDGE, "INLINE_THIN_ROWS must be 0 to THIN_EDGE");
  const CmtThinEdges<BM, BN, THIN_EDGE, INLINE_THIN_ROWS> edges(M, N, gridDim.y, gridDim.x);
  const bool thin = cmt_is_thin_tile<BM, BN, THIN_EDGE>(M, N, block_m, block_n);
  if (INLINE_THIN_ROWS > 0 && !thin) {
    // As below, plus the thin rows when this block's tile row is the last interior one. (Sending the
    // other blocks down the path below instead made these blocks' identical main loop 20% slower on
    // an H100.)
    CmtWarpTile<BN, WM, WN, WNITER, TM, TN> tile(tid % TILE_THREADS);
    const int row_first = edges.row_first();
    CmtInlineRows<BN, BK, THREADS, (INLINE_THIN_ROWS > 0 ? INLINE_THIN_ROWS : 1)> rows(
        edges.rows_inline(M) && block_m + BM == row_first ? M - row_first : 0, tid);
    if (rows.rows > 0) rows.read_c(C, ldc, N, row_first, block_n, beta, tid);
    cmt_multistage_accumulate<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK, true, INLINE_THIN_ROWS,
                              A_CHUNK>(
        tile, tid, M, N, K, A, lda, B, ldb, block_m, block_n, 0, (K + BK - 1) / BK, &rows,
        A + cmt_offset(row_first, 0, lda));
    if (tid < TILE_THREADS) {  // slice 0
      const bool interior = block_m + BM <= M && block_n + BN <= N;
      tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, interior, VEC == 4);
    }
    if (rows.rows > 0) {
      // The scratch follows SPLITK's parked partials, which slice 0 may still be reading.
      cmt_cp_async_wait<0>();
      rows.store(cmt_dynamic_smem_address() + (SPLITK - 1) * BM * BN * 4, tid, C, ldc, N, row_first, block_n, alpha,
                 beta);
    }
  } else if (!thin) {
    CmtWarpTile<BN, WM, WN, WNITER, TM, TN> tile(tid % TILE_THREADS);
    cmt_multistage_accumulate<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK, (THIN_EDGE > 0), 0,
                              A_CHUNK>(
        tile, tid, M, N, K, A, lda, B, ldb, block_m, block_n, 0, (K + BK - 1) / BK);
    if (tid < TILE_THREADS) {  // slice 0
      const bool interior = block_m + BM <= M && block_n + BN <= N;
      tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, interior, VEC == 4);
    }
  }
  if (THIN_EDGE <= 0) return;
  if (INLINE_THIN_ROWS > 0 && edges.lines(M, N) == 0) return;  // no strips left
  // Thin workers get at least CMT_THIN_SMEM_FLOATS of shared memory (the launch's dynamic_smem).
  constexpr int THIN_FLOATS =
      THIN_WORKERS > 0 && RING_FLOATS < CMT_THIN_SMEM_FLOATS ? CMT_THIN_SMEM_FLOATS : RING_FLOATS;
  const int interior_tiles = edges.interior_tiles();
  if (THIN_WORKERS > 0 && interior_tiles > 0) {
    // The first THIN_WORKERS thin-tile blocks compute the strips beside the interior tiles.
    const int thin_blocks = gridDim.x * gridDim.y - interior_tiles;
    const int workers = thin_blocks < THIN_WORKERS ? thin_blocks : THIN_WORKERS;
    const int worker = cmt_linear_block() - interior_tiles;
    if (thin && worker < workers)
      cmt_thin_edges_stream<BM, BN, THREADS, THIN_EDGE>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta,
                                                        cmt_dynamic_smem_address(), THIN_FLOATS, tid, worker, workers);
  } else if (!thin || interior_tiles == 0) {
    // The interior blocks share the strips out after their tiles (all blocks when none is interior).
    const int workers = interior_tiles > 0 ? interior_tiles : gridDim.x * gridDim.y;
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta,
                                                     cmt_dynamic_smem_floats(), RING_FLOATS, tid, cmt_linear_block(),
                                                     workers);
  }
}
