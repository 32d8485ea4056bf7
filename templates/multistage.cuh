// Multistage warp-tiled SGEMM: a STAGES-deep ring of shared-memory tiles filled with cp.async, so
// global loads for later k tiles are in flight while the current one is multiplied. A is copied
// element by element into a transposed, padded tile (no alignment needed); B is copied 16 bytes at
// a time when VEC == 4 (aligned inputs) or 4 bytes otherwise. SPLITK > 1 slices each k tile across
// SPLITK groups of warps in the block and sums their partial tiles through shared memory in a fixed
// order, so results are deterministic.
//
// Layouts: the tiles in shared memory are always As[k][m] and Bs[k][n]; only the copies change. With
// TRANS_A the stored rows of A are k and m is contiguous, as B's are normally, so A is copied like B
// (VEC floats along m, into As[k][m]); with TRANS_B the stored rows of B are n and k is contiguous, as
// A's are normally, so B is copied like A (8-k chunks of 4-byte copies, stored transposed into
// Bs[k][n], whose rows are then padded to BN + 4 floats so those stores hit 32 different banks).
// The kernel takes strided batches on grid z (cmt_batch_offsets).
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_ring.cuh"
#include "cmt_thin_edges.cuh"
#include "cmt_warp_tile.cuh"

// The kernel's per-block timing hook: empty unless a diagnostic program included
// cmt_diag_block_times.cuh first (scripts/diag/block_times.cu), so the kernel compiles as if it
// were not there.
#ifndef CMT_DIAG_BLOCK_TIMES
#define CMT_DIAG_BLOCK_TIMES
#endif

// Threads and shared-memory ring of the multistage kernels (floats; A transposed, rows padded; B's
// rows padded by 4 with TRANS_B).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int SPLITK, int TRANS_B = 0>
struct CmtMultistageShape {
  static constexpr int TILE_THREADS = (BM / WM) * (BN / WN) * 32;  // the threads of one k slice
  static constexpr int THREADS = TILE_THREADS * SPLITK;
  static constexpr int AS_LD = BM + PAD;
  static constexpr int BS_LD = TRANS_B ? BN + 4 : BN;
  static constexpr int A_STAGE = BK * AS_LD, B_STAGE = BK * BS_LD, STAGE = A_STAGE + B_STAGE;
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
  // stride AS_LD floats), bs that of the B stage (row stride BS_LD).
  template <int AS_LD, int BS_LD = BN>
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
      b[s] = cmt_load_shared4(bs + (k * BS_LD + 4 * quad) * 4);
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

// The copies of one operand's k tile into a ring stage, one type for each way an operand can be
// stored, each serving A and B; cmt_multistage_accumulate sets up the thread's coordinates, source
// pointers and sizes once. Both take a k tile inside K (full: from per-thread source pointers, a
// copy costing a 64-bit add) or any k tile (checked: element by element, k past K zero-filled).
//
// An operand stored with k contiguous (A; B with TRANS_B): X stored rows (BM or BN) of BK, copied in
// chunks of CHUNK consecutive k of a row, the next CHUNK lanes on the next row (ROWS_PER_PASS rows
// a pass of the threads), 4 bytes a copy, stored transposed into rows of LD floats.
template <int X, int BK, int CHUNK, int ROWS_PER_PASS, int GROUPS, int LOADS, int LD>
struct CmtMultistageChunkCopy {
  // The thread's copies fall on GROUPS rows ROWS_PER_PASS apart (groups g < groups_in inside the
  // matrix; group_step elements apart from src + k0, its first row at the tile's k) at k offsets
  // CHUNK apart; dst: the 32-bit shared address of its first copy.
  static CMT_DEVICE void full(unsigned dst, const float* src, int k0, cmt_index group_step, int groups_in,
                              const float* fill) {
    const float* k_src = src + k0;  // (formed here: formed by the caller, it changed the code of some builds)
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      const bool inside = g < groups_in;
      const float* row = inside ? k_src + g * group_step : fill;  // (not read)
#pragma unroll
      for (int c = 0; c < BK / CHUNK; ++c)
        cmt_cp_async_4_to(dst + (c * CHUNK * LD + g * ROWS_PER_PASS) * 4, row + c * CHUNK, inside);
    }
  }

  // The thread walks (chunk, row) pairs, rows fastest, from row `row` and k `kk` of the tile at k0:
  // stored rows origin.. of src, `extent` of them in the matrix (the others zero-filled). stage: the
  // 32-bit shared address of the tile.
  static CMT_DEVICE void checked(unsigned stage, const float* src, int ld, int origin, int extent, int row, int kk,
                                 int k0, int K, const float* fill) {
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int r = row + i * ROWS_PER_PASS;  // (chunk, row) pairs, rows fastest
      const int x = r % X, k = (r / X) * CHUNK + kk;
      const bool inside = k0 + k < K && origin + x < extent;
      const float* from = inside ? src + cmt_offset(origin + x, k0 + k, ld) : fill;
      cmt_cp_async_4_to(stage + (k * LD + x) * 4, from, inside);
    }
  }
};

// An operand stored with its m or n contiguous (B; A with TRANS_A): VEC floats a copy (16 bytes when
// VEC = 4) at a fixed column x of stored rows k ROWS_PER_PASS apart, LOADS copies a thread, into
// rows of LD floats. x_bytes: the size of the thread's copies inside the matrix (0: zero-filled,
// not read).
template <int LOADS, int VEC, int ROWS_PER_PASS, int LD>
struct CmtMultistageVecCopy {
  // kt_src: the thread's first element of the tile; pass_step: the elements between its rows; dst:
  // the 32-bit shared address of its first copy.
  static CMT_DEVICE void full(unsigned dst, const float* kt_src, cmt_index pass_step, int x_bytes) {
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      if (VEC == 4)
        cmt_cp_async_16_to(dst + i * ROWS_PER_PASS * LD * 4, kt_src + i * pass_step, x_bytes);
      else
        cmt_cp_async_4_to(dst + i * ROWS_PER_PASS * LD * 4, kt_src + i * pass_step, x_bytes > 0);
    }
  }

  // The thread's copies are at column x of rows k_first + i * ROWS_PER_PASS of the tile at k0
  // (columns origin + x.. of src). stage: the 32-bit shared address of the tile.
  static CMT_DEVICE void checked(unsigned stage, const float* src, int ld, int origin, int x, int k_first, int x_bytes,
                                 int k0, int K, const float* fill) {
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int k = k_first + i * ROWS_PER_PASS;
      const int bytes = k0 + k < K ? x_bytes : 0;
      const float* from = bytes > 0 ? src + cmt_offset(k0 + k, origin + x, ld) : fill;
      if (VEC == 4)
        cmt_cp_async_16_to(stage + (k * LD + x) * 4, from, bytes);
      else
        cmt_cp_async_4_to(stage + (k * LD + x) * 4, from, bytes > 0);
    }
  }
};

// Multiplies k tiles [kt_begin, kt_end) of the block tile at (block_m, block_n) into `tile` through
// the cp.async ring at the start of the kernel's dynamic shared memory. With SPLITK > 1, slice 0's
// threads end up holding the sum of all slices' partials, added in slice order. Returns with no
// copies in flight when SPLITK > 1. With SHORT_LAST_TILE, a last k tile at most half full multiplies
// only its k, split evenly over the slices, instead of a whole zero-filled tile (a rolled loop,
// which costs registers in some builds). TRANS_A, TRANS_B: A is stored K x M, B N x K (row-major);
// thin_a then points at op(A)'s first thin row, A + row_first. a_fill and b_fill are any valid
// addresses of A's and B's memory, which the zero-filling copies name without reading: the kernel
// passes its own parameters (the first problem of a batch), which cost no registers where A and B,
// moved to the block's problem, would be held across the main loop.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          bool SHORT_LAST_TILE = false, int INLINE_THIN_ROWS = 0, int A_CHUNK = 8, int TRANS_A = 0, int TRANS_B = 0>
CMT_DEVICE void cmt_multistage_accumulate(
    CmtWarpTile<BN, WM, WN, WNITER, TM, TN>& tile, int tid, int M, int N, int K, const float* __restrict__ A, int lda,
    const float* __restrict__ B, int ldb, int block_m, int block_n, int kt_begin, int kt_end, const float* a_fill,
    const float* b_fill,
    CmtInlineRows<BN, BK, CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS,
                  (INLINE_THIN_ROWS > 0 ? INLINE_THIN_ROWS : 1)>* inline_rows = nullptr,
    const float* __restrict__ thin_a = nullptr) {
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN>;
  using Shape = CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK, TRANS_B>;
  constexpr int TILE_THREADS = Shape::TILE_THREADS, THREADS = Shape::THREADS, AS_LD = Shape::AS_LD;
  constexpr int BS_LD = Shape::BS_LD;
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
  constexpr int B_ROWS_PER_PASS = TRANS_B ? 1 : THREADS / B_VECS_PER_ROW;  // (unused with TRANS_B)
  constexpr int B_LOADS = BK / B_ROWS_PER_PASS;
  // TRANS_A: A copied like B above, VEC floats along m of each stored row k of A.
  constexpr int TA_VECS_PER_ROW = BM / VEC;
  constexpr int TA_ROWS_PER_PASS = TRANS_A && THREADS >= TA_VECS_PER_ROW ? THREADS / TA_VECS_PER_ROW : 1;
  static_assert(!TRANS_A || (THREADS % TA_VECS_PER_ROW == 0 && BK % TA_ROWS_PER_PASS == 0),
                "TRANS_A: threads must be a multiple of BM/VEC, and BK a multiple of threads/(BM/VEC)");
  constexpr int TA_LOADS = BK / TA_ROWS_PER_PASS;
  // TRANS_B: B copied like A above, in chunks of TB_CHUNK consecutive k of each stored row n of B.
  constexpr int TB_CHUNK = 8;
  static_assert(!TRANS_B || (BK % TB_CHUNK == 0 && (BN * BK) % THREADS == 0),
                "TRANS_B: BK must be a multiple of 8 and BN*BK a multiple of the threads");
  constexpr int TB_ROWS_PER_PASS = THREADS / TB_CHUNK;
  constexpr int TB_LOADS = BN * BK / THREADS;

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
  // TRANS_A, as B above: thread copies VEC floats at m = ta_m of stored rows k = ta_k + i * TA_ROWS_PER_PASS;
  // the columns past M are zero-filled from column 0 of the row.
  const int ta_m = (tid % TA_VECS_PER_ROW) * VEC, ta_k = tid / TA_VECS_PER_ROW;
  const int ta_rows_left = M - (block_m + ta_m);
  const int ta_bytes = ta_rows_left >= VEC ? VEC * 4 : (ta_rows_left > 0 ? ta_rows_left * 4 : 0);
  const float* ta_src = A + cmt_offset(ta_k, ta_bytes > 0 ? block_m + ta_m : 0, lda);
  const cmt_index ta_pass_step = (cmt_index)TA_ROWS_PER_PASS * lda;
  // TRANS_B, as A above: TB_CHUNK lanes walk along k of one stored row n, on rows TB_ROWS_PER_PASS
  // apart (groups); the rows past N are zero-filled.
  constexpr bool TB_GROUPED = BN % TB_ROWS_PER_PASS == 0;
  constexpr int TB_GROUPS = TB_GROUPED ? BN / TB_ROWS_PER_PASS : 1;
  const int tb_kk = tid % TB_CHUNK, tb_row = tid / TB_CHUNK;
  const int tb_cols_left = N - (block_n + tb_row);
  const int tb_groups_in = tb_cols_left <= 0 ? 0 : (tb_cols_left + TB_ROWS_PER_PASS - 1) / TB_ROWS_PER_PASS;
  const float* tb_src = B + cmt_offset(tb_groups_in > 0 ? block_n + tb_row : 0, tb_kk, ldb);
  const cmt_index tb_group_step = (cmt_index)TB_ROWS_PER_PASS * ldb;
  // The copies of each operand, by how it is stored (one type each for k contiguous and m or n
  // contiguous; see CmtMultistageChunkCopy and CmtMultistageVecCopy).
  using ACopy = CmtMultistageChunkCopy<BM, BK, A_CHUNK, A_ROWS_PER_PASS, A_GROUPS, A_LOADS, AS_LD>;
  using TACopy = CmtMultistageVecCopy<TA_LOADS, VEC, TA_ROWS_PER_PASS, AS_LD>;
  using BCopy = CmtMultistageVecCopy<B_LOADS, VEC, B_ROWS_PER_PASS, BN>;
  using TBCopy = CmtMultistageChunkCopy<BN, BK, TB_CHUNK, TB_ROWS_PER_PASS, TB_GROUPS, TB_LOADS, BS_LD>;
  // Full k tiles take the unchecked path when every thread's copies fall on whole groups.
  constexpr bool FULL_COPIES = (TRANS_A || A_GROUPED) && (!TRANS_B || TB_GROUPED);
  // Shared-memory addresses are formed in 32 bits from one base, so nvcc and NVRTC agree.
  const unsigned smem_base = cmt_dynamic_smem_address();
  const unsigned a_dst0 = TRANS_A ? smem_base + (ta_k * AS_LD + ta_m) * 4 : smem_base + (a_kk * AS_LD + a_row) * 4;
  const unsigned b_dst0 =
      TRANS_B ? smem_base + (A_STAGE + tb_kk * BS_LD + tb_row) * 4 : smem_base + (A_STAGE + b_k * BN + b_n) * 4;
  // INLINE_THIN_ROWS: thread t < rows * BK copies op(A)[thin row t / BK][k0 + t % BK] into the A
  // padding.
  const int thin_copies = INLINE_THIN_ROWS > 0 ? inline_rows->rows * BK : 0;
  const int thin_r = tid / BK, thin_k = tid % BK;
  const float* thin_src =
      INLINE_THIN_ROWS > 0 && tid < thin_copies ? thin_a + cmt_offset_op<TRANS_A>(thin_r, thin_k, lda) : a_fill;
  const unsigned thin_dst0 = smem_base + (thin_k * AS_LD + BM + thin_r) * 4;
  const bool thin_rows = INLINE_THIN_ROWS > 0 && thin_copies > 0;  // this block multiplies thin rows

  // Fills ring stage `stage` with k tile kt_begin + t.
  auto load_tile = [&](int stage, int t) {
    const int k0 = (kt_begin + t) * BK;
    if (FULL_COPIES && k0 + BK <= K) {
      const unsigned a_dst = a_dst0 + stage * STAGE * 4, b_dst = b_dst0 + stage * STAGE * 4;
      if (TRANS_A) {
        TACopy::full(a_dst, ta_src + (cmt_index)k0 * lda, ta_pass_step, ta_bytes);
      } else {
        ACopy::full(a_dst, a_src, k0, a_group_step, a_groups_in, a_fill);
      }
      if (INLINE_THIN_ROWS > 0 && tid < thin_copies)
        cmt_cp_async_4_to(thin_dst0 + stage * STAGE * 4, TRANS_A ? thin_src + (cmt_index)k0 * lda : thin_src + k0,
                          true);
      if (TRANS_B) {
        TBCopy::full(b_dst, tb_src, k0, tb_group_step, tb_groups_in, b_fill);
      } else {
        BCopy::full(b_dst, b_src + (cmt_index)k0 * ldb, b_pass_step, b_bytes);
      }
      return;
    }
    const unsigned as = smem_base + stage * STAGE * 4, bs = as + A_STAGE * 4;
    if (TRANS_A) {
      TACopy::checked(as, A, lda, block_m, ta_m, ta_k, ta_bytes, k0, K, a_fill);
    } else {
      ACopy::checked(as, A, lda, block_m, M, a_row, a_kk, k0, K, a_fill);
    }
    if (INLINE_THIN_ROWS > 0 && tid < thin_copies) {
      const bool inside = k0 + thin_k < K;
      cmt_cp_async_4_to(thin_dst0 + stage * STAGE * 4,
                        inside ? (TRANS_A ? thin_src + (cmt_index)k0 * lda : thin_src + k0) : a_fill, inside);
    }
    if (TRANS_B && TB_GROUPED) {
      // As on the full path, with k checked element by element. (Walking (chunk, row) pairs, as the
      // copies of an untransposed A above do, had ptxas hold their addresses across the main loop:
      // 255 registers and spills on 64x128 and 128x128 tiles, where this takes 168 to 229.)
      const float* b_k = tb_src + k0;
#pragma unroll
      for (int g = 0; g < TB_GROUPS; ++g) {
        const float* row = g < tb_groups_in ? b_k + g * tb_group_step : b_fill;
#pragma unroll
        for (int c = 0; c < BK / TB_CHUNK; ++c) {
          const bool inside = g < tb_groups_in && k0 + c * TB_CHUNK + tb_kk < K;
          cmt_cp_async_4_to(bs + ((c * TB_CHUNK + tb_kk) * BS_LD + tb_row + g * TB_ROWS_PER_PASS) * 4,
                            inside ? row + c * TB_CHUNK : b_fill, inside);
        }
      }
    } else if (TRANS_B) {
      TBCopy::checked(bs, B, ldb, block_n, N, tb_row, tb_kk, k0, K, b_fill);
    } else {
      BCopy::checked(bs, B, ldb, block_n, b_n, b_k, b_bytes, k0, K, b_fill);
    }
  };

  CmtCpAsyncRing<STAGES>::prologue(k_tiles, load_tile);
  for (int kt = 0; kt < k_tiles; ++kt) {
    CmtCpAsyncRing<STAGES>::advance(kt, k_tiles, load_tile);  // tile kt is visible to all
    const unsigned as = smem_base + (kt % STAGES) * STAGE * 4;
    const unsigned bs = as + A_STAGE * 4;
    if (thin_rows && kt > 0) inline_rows->multiply();  // the previous tile's values
    const int k_left = K - (kt_begin + kt) * BK;  // k of C's K from this tile on
    if (SHORT_LAST_TILE && 2 * k_left <= BK) {
      const int per_slice = (k_left + SPLITK - 1) / SPLITK;
      const int k_end = (slice + 1) * per_slice < k_left ? (slice + 1) * per_slice : k_left;
#pragma unroll 1
      for (int k = slice * per_slice; k < k_end; ++k) tile.step_at(as + k * AS_LD * 4, bs + k * BS_LD * 4);
      if (thin_rows) inline_rows->template load<AS_LD, BS_LD>(as + BM * 4, bs);  // zero past K
      continue;
    }
#pragma unroll
    for (int kk = 0; kk < K_PER_SLICE; ++kk) {
      const int k = slice * K_PER_SLICE + kk;
      tile.step_at(as + k * AS_LD * 4, bs + k * BS_LD * 4);
    }
    if (thin_rows) inline_rows->template load<AS_LD, BS_LD>(as + BM * 4, bs);
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
          int SWIZZLE, int THIN_EDGE, int THIN_WORKERS, int INLINE_THIN_ROWS, int A_CHUNK, int TRANS_A, int TRANS_B>
__global__ void __launch_bounds__(CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS,
                                  THIN_EDGE > 0 ? 1 : 0)
    cmt_sgemm_multistage(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                         const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                         long long stride_a, long long stride_b, long long stride_c) {
  CMT_DIAG_BLOCK_TIMES;  // diagnostics only; empty in the tuner's and exported builds
  const float* const a_fill = A;  // see cmt_multistage_accumulate
  const float* const b_fill = B;
  cmt_batch_offsets<1>(A, B, C, stride_a, stride_b, stride_c);
  using Shape = CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK, TRANS_B>;
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
                              A_CHUNK, TRANS_A, TRANS_B>(
        tile, tid, M, N, K, A, lda, B, ldb, block_m, block_n, 0, (K + BK - 1) / BK, a_fill, b_fill, &rows,
        A + cmt_offset_op<TRANS_A>(row_first, 0, lda));
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
                              A_CHUNK, TRANS_A, TRANS_B>(
        tile, tid, M, N, K, A, lda, B, ldb, block_m, block_n, 0, (K + BK - 1) / BK, a_fill, b_fill);
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
      cmt_thin_edges_stream<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(
          edges, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta, cmt_dynamic_smem_address(), THIN_FLOATS, tid, worker,
          workers);
  } else if (!thin || interior_tiles == 0) {
    // The interior blocks share the strips out after their tiles (all blocks when none is interior).
    const int workers = interior_tiles > 0 ? interior_tiles : gridDim.x * gridDim.y;
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha,
                                                                       beta, cmt_dynamic_smem_floats(), RING_FLOATS, tid,
                                                                       cmt_linear_block(), workers);
  }
}
