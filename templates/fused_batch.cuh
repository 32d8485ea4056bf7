// fused_batch: strided batches of small products, several problems per block. Block z computes its
// BM x BN tile of C for PPB consecutive problems of the launch's batch (problems z*PPB .. z*PPB +
// PPB - 1 below `batch`, the launch's problem count), one after the other, through ONE cp.async
// ring: the block's work is the sequence of (problem, k tile) steps, problem by problem, and the
// ring is filled STAGES - 1 steps ahead along that sequence whether or not a step belongs to the
// next problem. So while the last k tiles of a problem are multiplied and its C tile is stored, the
// first k tiles of the next problem are already in flight: a block pays one pipeline prologue and
// one drain for all its problems, not one per problem as a block per problem does (with K = 64 and
// BK = 32, the prologue is the whole k loop of a problem).
//
// The ring: STAGES stages of As[BK][AS_LD] (op(A) transposed, As[k][m]) then Bs[BK][BS_LD]
// (Bs[k][n]) in the dynamic shared memory. Step s (problem s / KT, k tile s % KT, KT = ceil(K/BK))
// lives in stage s % STAGES. At step s every thread waits for its own copies of step s, the block
// meets at a barrier (step s is visible; everyone is done with step s - 1's stage), the copies of
// step s + STAGES - 1 go into the stage step s - 1 used, and step s is multiplied. After the last k
// tile of a problem the block writes that problem's C tile from the registers and clears them; the
// loads never wait for it. The loading side keeps its own (problem, k tile) position: per-thread
// source pointers of the problem being loaded, moved by stride_a and stride_b when its k tiles are
// all issued (a stride of 0 broadcasts one A or B to every problem).
//
// Threads: (BM/TM) x (BN/TN) = LY x LX; thread (ty, tx) = (tid / LX, tid % LX) owns rows
// i*4*LY + ty*4 + 0..3 (i < TM/4) and columns j*4*LX + tx*4 + 0..3 (j < TN/4) of the tile: groups
// of 4, LY (LX) groups apart. At each k it reads its rows of As and its columns of Bs as float4: the
// 8 lanes of a quarter warp (one shared-memory wavefront of 16-byte reads) read consecutive 16-byte
// words of Bs (8, or 4 twice with LX = 4) and one word of As (two consecutive ones with LX = 4), the
// lanes reading a word alike getting it by broadcast, so no read conflicts; the thread's TM x TN
// outer product then runs from registers.
//
// Copies, per layout, along each operand's contiguous stored dimension:
//  - an operand stored with k contiguous (A in nn and nt, B in nt and tt): 8 lanes copy 8
//    consecutive k of one stored row (one 32-byte sector), the next 8 lanes the next row; 4-byte
//    copies stored transposed into As[k][m] or Bs[k][n], whose rows are then padded to BM + 4 or
//    BN + 4 floats: a warp's 32 copies land at k*(R + 4) + r for 8 k and 4 consecutive r, banks
//    4k + r (R a multiple of 32), all different;
//  - an operand stored with its m or n contiguous (B in nn and tn, A in tn and tt): VEC floats per
//    copy along the stored row k (16-byte cp.async when VEC = 4: aligned inputs, [requires]), lanes
//    on consecutive vectors of a row, into unpadded rows of As or Bs.
// Rows (columns) outside C and k past K are zero-filled by the copies (a source size of 0 from a
// valid address, the kernel's own A or B); k tiles wholly inside K skip the k checks. K = 0 runs one
// tile of zeros, so C = beta * C. C is written with BLAS semantics (beta == 0 never reads it), 16
// bytes at a time where C and ldc allow (always with VEC = 4), checked at the edges of C.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_ring.cuh"

// T when COND is 1, else F (NVRTC has no <type_traits>).
template <int COND, class T, class F>
struct cmt_fused_select {
  typedef F type;
};
template <class T, class F>
struct cmt_fused_select<1, T, F> {
  typedef T type;
};

// The block's threads and its shared-memory ring, in floats.
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int TRANS_A, int TRANS_B>
struct CmtFusedShape {
  static constexpr int LX = BN / TN, LY = BM / TM;  // threads along n and along m
  static constexpr int THREADS = LX * LY;
  static constexpr int AS_LD = TRANS_A ? BM : BM + 4;  // rows of As (k-contiguous A is stored transposed)
  static constexpr int BS_LD = TRANS_B ? BN + 4 : BN;  // rows of Bs (k-contiguous B is stored transposed)
  static constexpr int A_STAGE = BK * AS_LD, B_STAGE = BK * BS_LD, STAGE = A_STAGE + B_STAGE;
  static constexpr int RING_FLOATS = STAGES * STAGE;
  // Blocks per SM asked of ptxas (__launch_bounds__): as many as fit in 80 registers a thread with
  // 16 accumulators, 128 with 32, and no bound with 64. Without any, ptxas capped some sm_80 builds at
  // 56 or 64 registers and spilled; with 1 it gave 4 x 4 tiles of 256 threads about 90 (2 blocks).
  static constexpr int REGISTER_BUDGET = TM * TN <= 16 ? 80 : TM * TN <= 32 ? 128 : 255;
  static constexpr int MIN_BLOCKS = 65536 / (THREADS * REGISTER_BUDGET) > 1 ? 65536 / (THREADS * REGISTER_BUDGET) : 1;
  // The tile row of accumulator row i (< TM) of thread row ty, and the tile column of accumulator
  // column j (< TN) of thread column tx: groups of 4, LY (LX) groups apart. (Host too, for tests.)
  static __host__ __device__ constexpr int row_of(int ty, int i) { return (i / 4) * 4 * LY + ty * 4 + i % 4; }
  static __host__ __device__ constexpr int col_of(int tx, int j) { return (j / 4) * 4 * LX + tx * 4 + j % 4; }
};

// Copies of a k tile of an operand stored with k contiguous: its stored rows are the tile's R rows
// (m of A, n of B), R_T of them in the tile, stored transposed into S[k][r] (rows LD = R_T + 4).
// Lane group g = tid / 8 copies k = 8c + tid % 8 of row r; (r, c) walk rows first: a pass of all
// THREADS covers G = THREADS / 8 (row, chunk) pairs. G >= R_T: a thread keeps its row and takes
// every (G / R_T)-th chunk; G < R_T: it takes every G-th row, chunk by chunk.
template <int R_T, int BK, int THREADS, int LD>
struct CmtFusedChunkCopy {
  static constexpr int G = THREADS / 8;
  static constexpr int PASSES = R_T * BK / THREADS;
  static constexpr bool ROW_FIXED = G >= R_T;
  static constexpr int ROW_PASSES = ROW_FIXED ? 1 : R_T / G;  // passes over the rows of one chunk
  static_assert(BK % 8 == 0 && THREADS % 8 == 0 && PASSES * THREADS == R_T * BK,
                "k-contiguous copies: BK a multiple of 8 and R*BK a multiple of the threads");
  static_assert(ROW_FIXED ? G % R_T == 0 : R_T % G == 0, "k-contiguous copies: rows per pass must divide the tile");
  // The row and k of a thread's first copy in a tile, and those of pass i relative to it. (Host
  // too, for tests.)
  static __host__ __device__ constexpr int first_row(int tid) { return ROW_FIXED ? (tid / 8) % R_T : tid / 8; }
  static __host__ __device__ constexpr int first_k(int tid) { return (ROW_FIXED ? (tid / 8) / R_T : 0) * 8 + tid % 8; }
  static __host__ __device__ constexpr int row_of(int i) { return ROW_FIXED ? 0 : (i % ROW_PASSES) * G; }
  static __host__ __device__ constexpr int k_of(int i) { return ROW_FIXED ? i * (G / R_T) * 8 : (i / ROW_PASSES) * 8; }

  int rows_left;       // rows of the operand from the thread's first row on (<= 0: none)
  int k_first;         // k of the thread's first copy in a tile
  unsigned dst;        // shared address of its first copy in stage 0
  cmt_index offset;    // element offset of its first copy in a problem's matrix, k tile 0
  cmt_index row_step;  // elements between the rows of consecutive row passes (G rows)

  // origin: the tile's first stored row; rows: the operand's stored rows (M or N); stage0: shared
  // address of S in stage 0.
  CMT_DEVICE CmtFusedChunkCopy(int tid, int origin, int rows, int ld, unsigned stage0) {
    const int r = first_row(tid);
    k_first = first_k(tid);
    rows_left = rows - (origin + r);
    dst = stage0 + (k_first * LD + r) * 4;
    offset = cmt_offset(rows_left > 0 ? origin + r : 0, k_first, ld);
    row_step = (cmt_index)G * ld;
  }

  // Copies the k tile starting at k0 of a matrix into the stage `stage` bytes after stage 0; src is
  // the thread's first element of the matrix at k = 0 (the matrix + offset), fill any valid address
  // (not read); FULL: the tile lies inside K.
  template <bool FULL>
  CMT_DEVICE void issue(unsigned stage, const float* src, const float* fill, int k0, int K) const {
    // One pointer walks the thread's rows (G apart); the chunks of a row are constant offsets from it,
    // so a copy costs no 64-bit address arithmetic beyond one add per row.
    const float* row = src + k0;
#pragma unroll
    for (int rp = 0; rp < ROW_PASSES; ++rp) {
#pragma unroll
      for (int cp = 0; cp < PASSES / ROW_PASSES; ++cp) {
        const int i = cp * ROW_PASSES + rp;
        const int r = row_of(i), k = k_of(i);
        const bool inside = r < rows_left && (FULL || k0 + k_first + k < K);
        cmt_cp_async_4_to(dst + stage + (k * LD + r) * 4, inside ? row + k : fill, inside);
      }
      if (rp + 1 < ROW_PASSES) row += row_step;
    }
  }
};

// Copies of a k tile of an operand stored with k as its rows: BK stored rows of C_T contiguous
// columns (m of A, n of B) each, VEC floats per copy, into S[k][c] (rows LD = C_T). V = C_T / VEC
// vectors per row; a pass of all THREADS covers THREADS consecutive vectors, rows first. THREADS >=
// V: a thread keeps its column and takes every (THREADS / V)-th row; THREADS < V: it takes every
// THREADS-th vector of a row, row by row.
template <int C_T, int BK, int THREADS, int VEC, int LD>
struct CmtFusedVecCopy {
  static constexpr int V = C_T / VEC;
  static constexpr int PASSES = BK * V / THREADS;
  static constexpr bool COL_FIXED = THREADS >= V;
  static constexpr int COL_PASSES = COL_FIXED ? 1 : V / THREADS;  // passes over one row
  static_assert(C_T % VEC == 0 && PASSES * THREADS == BK * V,
                "contiguous copies: BK * C / VEC must be a multiple of the threads");
  static_assert(COL_FIXED ? THREADS % V == 0 : V % THREADS == 0, "contiguous copies: vectors per pass must divide a row");
  // The stored row (k) and column of a thread's first copy in a tile, and those of pass i relative to
  // it. (Host too, for tests.)
  static __host__ __device__ constexpr int first_k(int tid) { return COL_FIXED ? tid / V : 0; }
  static __host__ __device__ constexpr int first_col(int tid) { return (COL_FIXED ? tid % V : tid) * VEC; }
  static __host__ __device__ constexpr int row_of(int i) { return COL_FIXED ? i * (THREADS / V) : i / COL_PASSES; }
  static __host__ __device__ constexpr int col_of(int i) { return COL_FIXED ? 0 : (i % COL_PASSES) * THREADS * VEC; }

  int cols_left;      // columns of the operand from the thread's first column on (<= 0: none)
  int k_first;        // stored row (k) of the thread's first copy in a tile
  unsigned dst;       // shared address of its first copy in stage 0
  cmt_index offset;   // element offset of its first copy in a problem's matrix, k tile 0
  int ld;

  CMT_DEVICE CmtFusedVecCopy(int tid, int origin, int cols, int ld_, unsigned stage0) : ld(ld_) {
    const int c = first_col(tid);
    k_first = first_k(tid);
    cols_left = cols - (origin + c);
    dst = stage0 + (k_first * LD + c) * 4;
    offset = cmt_offset(k_first, cols_left > 0 ? origin + c : 0, ld);
  }

  // As CmtFusedChunkCopy::issue.
  template <bool FULL>
  CMT_DEVICE void issue(unsigned stage, const float* src, const float* fill, int k0, int K) const {
    // One pointer walks the thread's stored rows (k); the vectors of a row are constant offsets from it.
    const float* row = src + (cmt_index)k0 * ld;
    const cmt_index row_step = (cmt_index)(COL_FIXED ? THREADS / V : 1) * ld;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const int k = row_of(i), c = col_of(i);
      const int left = cols_left - c;
      const int bytes = (FULL || k0 + k_first + k < K) ? (left >= VEC ? VEC * 4 : (left > 0 ? left * 4 : 0)) : 0;
      const float* p = bytes > 0 ? row + c : fill;
      if (VEC == 4)
        cmt_cp_async_16_to(dst + stage + (k * LD + c) * 4, p, bytes);
      else
        cmt_cp_async_4_to(dst + stage + (k * LD + c) * 4, p, bytes > 0);
      if (i + 1 < PASSES && row_of(i + 1) != k) row += row_step;
    }
  }
};

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int PPB, int VEC, int TRANS_A, int TRANS_B>
__global__ void __launch_bounds__(CmtFusedShape<BM, BN, BK, TM, TN, STAGES, TRANS_A, TRANS_B>::THREADS,
                                  CmtFusedShape<BM, BN, BK, TM, TN, STAGES, TRANS_A, TRANS_B>::MIN_BLOCKS)
    cmt_sgemm_fused_batch(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                          const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                          long long stride_a, long long stride_b, long long stride_c, int batch) {
  using Shape = CmtFusedShape<BM, BN, BK, TM, TN, STAGES, TRANS_A, TRANS_B>;
  constexpr int THREADS = Shape::THREADS, LX = Shape::LX;
  constexpr int AS_LD = Shape::AS_LD, BS_LD = Shape::BS_LD, A_STAGE = Shape::A_STAGE, STAGE = Shape::STAGE;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % TM == 0 && BN % TN == 0, "thread tiles are groups of 4 rows and columns");
  static_assert(STAGES >= 2 && PPB >= 1, "at least 2 stages and 1 problem per block");

  // The ring's 32-bit shared address, first: the way it is formed leaves the two front ends' code
  // slightly different, and here that difference stays before everything else.
  const unsigned ring = cmt_dynamic_smem_address();
  // This block's problems: PPB of the launch's batch, fewer in the last group.
  const int first = blockIdx.z * PPB;
  if (first >= batch) return;
  const int problems = batch - first < PPB ? batch - first : PPB;
  const int k_tiles = K > BK ? (K + BK - 1) / BK : 1;  // K <= BK (K = 0 too): one tile, zero-filled past K
  const int steps = problems * k_tiles;

  const int tid = threadIdx.x;
  const int block_m = blockIdx.y * BM, block_n = blockIdx.x * BN;

  // The copies: A (stored M x K, or K x M with TRANS_A) into As, B (K x N, or N x K) into Bs.
  using ACopy = typename cmt_fused_select<TRANS_A, CmtFusedVecCopy<BM, BK, THREADS, VEC, AS_LD>,
                                          CmtFusedChunkCopy<BM, BK, THREADS, AS_LD>>::type;
  using BCopy = typename cmt_fused_select<TRANS_B, CmtFusedChunkCopy<BN, BK, THREADS, BS_LD>,
                                          CmtFusedVecCopy<BN, BK, THREADS, VEC, BS_LD>>::type;
  const ACopy a_copy(tid, block_m, M, lda, ring);
  const BCopy b_copy(tid, block_n, N, ldb, ring + A_STAGE * 4);
  // The thread's first elements of the matrices the next copies read (they move to the next problem
  // once its k tiles are issued).
  const float* a_src = A + ((cmt_index)first * stride_a + a_copy.offset);
  const float* b_src = B + ((cmt_index)first * stride_b + b_copy.offset);
  C += (cmt_index)first * stride_c;
  int load_kt = 0;  // k tile of a_src and b_src the next copies read

  constexpr unsigned STAGE_BYTES = STAGE * 4, RING_BYTES = STAGES * STAGE * 4;
  // Copies step `load_kt` of the problem being loaded into the stage `stage` bytes into the ring, then
  // moves on.
  auto load_step = [&](unsigned stage) {
    const int k0 = load_kt * BK;
    if (k0 + BK <= K) {
      a_copy.template issue<true>(stage, a_src, A, k0, K);
      b_copy.template issue<true>(stage, b_src, B, k0, K);
    } else {
      a_copy.template issue<false>(stage, a_src, A, k0, K);
      b_copy.template issue<false>(stage, b_src, B, k0, K);
    }
    if (++load_kt == k_tiles) {
      load_kt = 0;
      a_src += stride_a;
      b_src += stride_b;
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  const int ty = tid / LX, tx = tid % LX;
  // This thread's first float4 of a stage's As row and of its Bs row (32-bit shared addresses).
  const unsigned a_read = ring + Shape::row_of(ty, 0) * 4, b_read = ring + (A_STAGE + Shape::col_of(tx, 0)) * 4;

  // The prologue: the first STAGES - 1 steps (possibly of several problems).
  using Ring = CmtCpAsyncRing<STAGES>;
  Ring::prologue(steps, [&](int, int step) { load_step(step * STAGE_BYTES); });
  unsigned compute_stage = 0, load_stage = (STAGES - 1) * STAGE_BYTES;  // byte offsets in the ring
  int compute_kt = 0;
  for (int s = 0; s < steps; ++s) {
    // Step s is visible to all; everyone is done with step s - 1's stage, at load_stage. (The ring's
    // stage numbers are not used: the byte offsets rotate without a division. load_stage is
    // captured by value, as the call had it: by reference, the two offsets' updates swapped places.)
    Ring::advance(s, steps, [&, load_stage](int, int) { load_step(load_stage); });
    load_stage = load_stage + STAGE_BYTES == RING_BYTES ? 0 : load_stage + STAGE_BYTES;

    const unsigned as = a_read + compute_stage, bs = b_read + compute_stage;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; ++i) {
        const float4 v = cmt_load_shared4(as + (k * AS_LD + Shape::row_of(0, 4 * i)) * 4);
        a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const float4 v = cmt_load_shared4(bs + (k * BS_LD + Shape::col_of(0, 4 * j)) * 4);
        b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    compute_stage = compute_stage + STAGE_BYTES == RING_BYTES ? 0 : compute_stage + STAGE_BYTES;

    if (++compute_kt < k_tiles) continue;
    // The problem's last k tile: write its C tile while the next problem's first tiles load.
    compute_kt = 0;
    const bool vector_c = VEC == 4 || ((reinterpret_cast<unsigned long long>(C) | ((unsigned long long)ldc << 2)) & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = block_m + Shape::row_of(ty, i);
      if (row >= M) continue;
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const int col = block_n + Shape::col_of(tx, j);
        if (vector_c) {
          const float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
          cmt_store_c4(C, ldc, row, col, N - col, v, alpha, beta);
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (col + c < N) cmt_store_c(C, ldc, row, col + c, acc[i][j + c], alpha, beta);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    C += stride_c;
  }
}
