// dmma: DGEMM on the FP64 tensor cores (mma.sync .f64, "DMMA"). A block computes BM x BN of C with
// (BM/WM) x (BN/WN) warps; each warp a WM x WN tile of MMA_M x 8 fragments, accumulated in double
// registers. k runs through a STAGES-deep ring of shared-memory stages filled with cp.async, so the
// loads of later k tiles are in flight while the current one is multiplied.
//
// MMA picks the instruction: 0 m8n8k4 (sm_80 and later), 1 m16n8k4, 2 m16n8k8, 3 m16n8k16 (sm_90:
// one DMMA.16x8xK each, where m8n8k4 needs 2, 4 or 8 for the same work). Fragment coordinates, with
// lane = 4 g + t:
//   A (MMA_M x MMA_K): register i holds A[g + 8 (i % (MMA_M/8))][t + 4 (i / (MMA_M/8))];
//   B (MMA_K x 8):     register i holds B[t + 4 i][g];
//   C (MMA_M x 8):     register i holds C[g + 8 (i / 2)][2 t + i % 2].
//
// Shared memory keeps each operand in its stored orientation, so every copy is a VEC-double
// (16-byte for VEC = 2) cp.async along the stored rows: an operand whose stored rows run along k
// (A in nn/nt, B in nt/tt) is held [x][BK + PAD], the others [k][X + PAD]. A lane then reads its
// fragment elements one double at a time; PAD = 4 doubles (32 bytes) shifts each row by 8 banks, so
// the 16 lanes of a half-warp (4 values of g by 4 of t) read 16 different bank pairs in either
// orientation.
//
// FRAG_VEC = 2 reads two doubles per shared-memory load (LDS.128) instead, in both orientations:
//   - k order: the k of each 16 are paired with lanes so that lane t holds k = 4 t + u in its u-th
//     sub-step of 4 k (u = 0..3) rather than k = 4 u + t; A and B agree, so the sum is the same.
//     Stored rows running along k then give a lane its consecutive k in pairs; stored rows of k are
//     placed in the ring at row 16 c + 4 u + t, so the lanes of one sub-step read adjacent rows.
//   - x order: an operand stored with rows of k ([k][x]) pairs its fragments instead: fragment
//     row (or column) g of the v-th 8 in a warp tile is element 16 (v / 2) + 2 g + v % 2, so a lane
//     reads fragments v and v + 1 together. C comes out in the same order (for a permuted n, a
//     lane's 2 x 2 values per pair of fragments are 4 adjacent columns).
//   The k-contiguous rows are padded by PAD / 2 (odd row pitch in 16-byte units) and the others by
//   PAD (4 doubles), so each quarter-warp's 16-byte reads hit 8 different bank quads.
// Rows of A or B outside the problem, and k past K, are zero-filled by the copies
// (a source size of 0), so edge tiles take the same path; stores of C are checked.
// Strided batches run on grid z (cmt_batch_offsets).
//
// CLUSTER_K > 1 splits K across the CLUSTER_K blocks of a thread-block cluster (sm_90): each
// multiplies its own run of k tiles, parks its partial tile in its shared memory, and the ranks add
// the partials in rank order (deterministic) through distributed shared memory, each storing its
// share of C. That gives small and mid-sized products (256..1024) enough blocks for every SM. The
// grid is (ceil(N/BN), ceil(M/BM), CLUSTER_K * batch); without clusters (device code for sm_80),
// rank 0 multiplies all of K and the other ranks exit.
#pragma once

#include "cmt_cluster.cuh"
#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_ring.cuh"

// One MMA_M x 8 x MMA_K product accumulated into c.
template <int MMA>
CMT_DEVICE void cmt_dmma(double* c, const double* a, const double* b) {
  if constexpr (MMA == 0) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                 : "+d"(c[0]), "+d"(c[1])
                 : "d"(a[0]), "d"(b[0]));
  } else if constexpr (MMA == 1) {
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%0, %1, %2, %3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                 : "d"(a[0]), "d"(a[1]), "d"(b[0]));
  } else if constexpr (MMA == 2) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  }
}

// One operand's stage: X (BM of A or BN of B) by BK, stored [x][BK + PAD] when K_ROWS (its stored
// rows run along k) and [k][X + PAD] otherwise. Copies the k tile at k0 from global memory (stored
// rows of length `row_len` elements are k when K_ROWS, x otherwise; ld between them), zero-filling
// x >= x_left and k >= k_left. PERMUTE_K (FRAG_VEC = 2) places stored row k = 16 c + 4 t + u of a
// [k][x] stage at row 16 c + 4 u + t.
template <int X, int BK, int PAD, int VEC, int THREADS, bool K_ROWS, bool PERMUTE_K>
struct CmtDmmaOperand {
  static constexpr int ROWS = K_ROWS ? X : BK;    // stored rows in the tile
  static constexpr int COLS = K_ROWS ? BK : X;    // contiguous elements per stored row
  static constexpr int LD = COLS + PAD;           // shared row stride, doubles
  static constexpr int FLOATS = ROWS * LD * 2;    // the stage's size in floats (ring units)
  static constexpr int PER_ROW = COLS / VEC;               // copies per stored row
  static constexpr int ROW_STEP = THREADS / PER_ROW;        // stored rows one pass covers
  static constexpr int PASSES = ROWS / ROW_STEP;
  static_assert(COLS % VEC == 0 && THREADS % PER_ROW == 0 && ROWS % ROW_STEP == 0,
                "a stage must be whole passes of the threads' VEC-double copies (the descriptor's constraints)");

  static_assert(!PERMUTE_K || K_ROWS || BK % 16 == 0, "a permuted k needs whole 16s of k");

  // The ring row of stored row r.
  static CMT_DEVICE int slot(int r) {
    return PERMUTE_K && !K_ROWS ? (r & ~15) | ((r & 3) << 2) | ((r >> 2) & 3) : r;
  }
  // Shared byte offset of element (x, k) from the stage's start (k in stored order, PERMUTE_K false).
  static CMT_DEVICE unsigned offset(int x, int k) { return (unsigned)(K_ROWS ? x * LD + k : k * LD + x) * 8u; }
  // Shared byte offset of element x of ring row `row` of a [k][x] stage.
  static CMT_DEVICE unsigned at_row(int row, int x) { return (unsigned)(row * LD + x) * 8u; }

  // src: the tile's first element (x = 0, k = 0) of the stored matrix; rows_left, cols_left: the
  // stored rows and row elements left in the matrix from there. Thread tid copies column
  // (tid % PER_ROW) * VEC of rows tid / PER_ROW + p * ROW_STEP, walking one source pointer.
  static CMT_DEVICE void copy(unsigned stage, const double* src, int ld, int rows_left, int cols_left, int tid,
                              const double* fill) {
    const int c = (tid % PER_ROW) * VEC, r0 = tid / PER_ROW;
    const int left = cols_left - c;  // elements of each row from column c on
    const int bytes = left >= VEC ? VEC * 8 : left > 0 ? left * 8 : 0;
    const double* from = src + cmt_offset(r0, c, ld);
    const cmt_index step = (cmt_index)ROW_STEP * ld;
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
      const int n = r0 + p * ROW_STEP < rows_left ? bytes : 0;
      const unsigned dst = stage + (unsigned)(slot(r0 + p * ROW_STEP) * LD + c) * 8u;
      if (VEC == 2)
        cmt_cp_async_16_to(dst, reinterpret_cast<const float*>(n > 0 ? from : fill), n);
      else
        cmt_cp_async_8_to(dst, n > 0 ? from : fill, n > 0);
      from += step;
    }
  }
};

// Warp-tile row (of A) or column (of B and C) of lane row or column `lane_x` (0..7) in fragment v of
// 8: in order, or PAIRED (fragments v and v ^ 1 interleaved, so a lane's two are adjacent).
template <bool PAIRED>
CMT_DEVICE int cmt_dmma_x(int v, int lane_x) {
  return PAIRED ? 16 * (v / 2) + 2 * lane_x + v % 2 : 8 * v + lane_x;
}

// FRAG_VEC = 2: one 16-byte fragment read of an operand's stage (x0: the warp tile's first row or
// column; k16: the 16 k; u0: the first sub-step of f). PAIRED: sub-step u + e of fragments v, v + 1,
// side by side in ring row k16 + 4 (u0 + u + e) + t. Otherwise sub-steps u, u + 1 of fragment v + e,
// side by side in its k-contiguous row (k = 4 t + sub-step).
template <class Op, bool PAIRED, int U, int V>
CMT_DEVICE void cmt_dmma_read_pair(double (&f)[U][V], unsigned stage, int x0, int k16, int u0, int u, int e, int v, int g,
                                   int t) {
  if constexpr (PAIRED) {
    const double2 d = cmt_load_shared_f64x2(stage + Op::at_row(k16 + 4 * (u0 + u + e) + t, x0 + cmt_dmma_x<true>(v, g)));
    f[u + e][v] = d.x;
    f[u + e][v + 1] = d.y;
  } else {
    const double2 d = cmt_load_shared_f64x2(stage + Op::offset(x0 + cmt_dmma_x<false>(v + e, g), k16 + 4 * t + u0 + u));
    f[u][v + e] = d.x;
    f[u + 1][v + e] = d.y;
  }
}

template <int BM, int BN, int BK, int WM, int WN, int MMA, int STAGES, int VEC, int FRAG_VEC, int PAD, int SWIZZLE,
          int CLUSTER_K, int TRANS_A, int TRANS_B, int DTYPE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1) CMT_CLUSTER_Z(CLUSTER_K)
    cmt_sgemm_dmma(int M, int N, int K, double alpha, const double* __restrict__ A, int lda,
                   const double* __restrict__ B, int ldb, double beta, double* __restrict__ C, int ldc,
                   long long stride_a, long long stride_b, long long stride_c) {
  static_assert(DTYPE == 1, "dmma computes FP64 only");
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int MMA_M = MMA == 0 ? 8 : 16;
  constexpr int MMA_K = MMA <= 1 ? 4 : MMA == 2 ? 8 : 16;
  constexpr int A_REGS = (MMA_M / 8) * (MMA_K / 4), B_REGS = MMA_K / 4, C_REGS = (MMA_M / 8) * 2;
  constexpr int MI = WM / MMA_M, NI = WN / 8;
  static_assert(WM % MMA_M == 0 && WN % 8 == 0 && BK % MMA_K == 0, "warp tile and k tile of whole MMAs");
  constexpr bool PAIRED = FRAG_VEC == 2;
  static_assert(!PAIRED || (BK % 16 == 0 && WM % 16 == 0 && WN % 16 == 0), "16-byte fragment reads: whole 16s");
  // Fragments paired along x: operands stored [k][x] (A in tn/tt, B in nn/tn), when PAIRED.
  constexpr bool PAIR_M = PAIRED && TRANS_A != 0, PAIR_N = PAIRED && TRANS_B == 0;
  using OpA = CmtDmmaOperand<BM, BK, TRANS_A == 0 ? PAD / FRAG_VEC : PAD, VEC, THREADS, TRANS_A == 0, PAIRED>;
  using OpB = CmtDmmaOperand<BN, BK, TRANS_B != 0 ? PAD / FRAG_VEC : PAD, VEC, THREADS, TRANS_B != 0, PAIRED>;
  constexpr unsigned STAGE_BYTES = (unsigned)(OpA::FLOATS + OpB::FLOATS) * 4u;

  const double* a_fill = A;  // any valid address: zero-filling copies name it without reading
  const double* b_fill = B;
  cmt_batch_offsets<CLUSTER_K>(A, B, C, stride_a, stride_b, stride_c);
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE>(block_m, block_n);
  // A cluster's blocks share their tile, so all of them stop here together.
  if (block_m >= M || block_n >= N) return;
  const int rank = CLUSTER_K > 1 ? (int)(blockIdx.z % CLUSTER_K) : 0;
#if !CMT_HAS_CLUSTERS
  if (rank != 0) return;  // no cluster: rank 0 multiplies all of K
#endif

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN;
  const int g = lane / 4, t = lane % 4;
  const unsigned smem = cmt_dynamic_smem_address();

  // The stored tiles' first elements and extents: op(A) rows block_m.., op(B) columns block_n...
  const double* a_tile = A + (TRANS_A ? cmt_offset(0, block_m, lda) : cmt_offset(block_m, 0, lda));
  const double* b_tile = B + (TRANS_B ? cmt_offset(block_n, 0, ldb) : cmt_offset(0, block_n, ldb));
  const int m_left = M - block_m, n_left = N - block_n;
  // This block's k tiles: [kt_begin, kt_begin + k_tiles).
  int kt_begin = 0, k_tiles = (K + BK - 1) / BK;
#if CMT_HAS_CLUSTERS
  if (CLUSTER_K > 1) {
    int kt_end;
    cmt_cluster_k_range<CLUSTER_K>(k_tiles, rank, kt_begin, kt_end);
    k_tiles = kt_end - kt_begin;
  }
#endif

  auto load_tile = [&](int stage, int kt) {
    const int k0 = (kt_begin + kt) * BK, k_left = K - k0;
    const unsigned as = smem + stage * STAGE_BYTES, bs = as + OpA::FLOATS * 4u;
    if (TRANS_A)
      OpA::copy(as, a_tile + cmt_offset(k0, 0, lda), lda, k_left, m_left, tid, a_fill);
    else
      OpA::copy(as, a_tile + k0, lda, m_left, k_left, tid, a_fill);
    if (TRANS_B)
      OpB::copy(bs, b_tile + k0, ldb, n_left, k_left, tid, b_fill);
    else
      OpB::copy(bs, b_tile + cmt_offset(k0, 0, ldb), ldb, k_left, n_left, tid, b_fill);
  };

  double acc[MI][NI][C_REGS];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < C_REGS; ++r) acc[i][j][r] = 0.0;

  // FRAG_VEC = 2: one stage's products, its fragments read 16 bytes at a time. Lane t's sub-step u
  // of each 16 k is k = 4 t + u; U sub-steps are read together (two per 16-byte read of a
  // k-contiguous row, or one m16n8k16 step).
  constexpr int MK4 = MMA_K / 4, U = MK4 > 2 ? MK4 : 2, AV = WM / 8;
  auto multiply_paired = [&](unsigned as, unsigned bs) {
#pragma unroll
    for (int k16 = 0; k16 < BK; k16 += 16)
#pragma unroll
      for (int u0 = 0; u0 < 4; u0 += U) {
        double af[U][AV], bf[U][NI];  // [sub-step][fragment of 8 rows / columns]
#pragma unroll
        for (int u = 0; u < U; u += 2)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
#pragma unroll
            for (int v = 0; v < AV; v += 2)
              cmt_dmma_read_pair<OpA, PAIR_M>(af, as, warp_m, k16, u0, u, e, v, g, t);
#pragma unroll
            for (int j = 0; j < NI; j += 2)
              cmt_dmma_read_pair<OpB, PAIR_N>(bf, bs, warp_n, k16, u0, u, e, j, g, t);
          }
#pragma unroll
        for (int s = 0; s < U / MK4; ++s)  // instruction s takes sub-steps s MK4 .. s MK4 + MK4 - 1
#pragma unroll
          for (int i = 0; i < MI; ++i) {
            double a[A_REGS];
#pragma unroll
            for (int r = 0; r < A_REGS; ++r) a[r] = af[s * MK4 + r / (MMA_M / 8)][i * (MMA_M / 8) + r % (MMA_M / 8)];
#pragma unroll
            for (int j = 0; j < NI; ++j) {
              double b[B_REGS];
#pragma unroll
              for (int r = 0; r < B_REGS; ++r) b[r] = bf[s * MK4 + r][j];
              cmt_dmma<MMA>(acc[i][j], a, b);
            }
          }
      }
  };

  // Prologue: STAGES - 1 k tiles in flight. The top of each step is CmtCpAsyncRing::advance written
  // out: through the helper, ptxas got the loop's invariants in another order (templates/README.md).
  CmtCpAsyncRing<STAGES>::prologue(k_tiles, load_tile);
  for (int kt = 0; kt < k_tiles; ++kt) {
    cmt_cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt has landed for every thread; the stage refilled below is free
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_tile(next % STAGES, next);
    cmt_cp_async_commit();
    const unsigned as = smem + (kt % STAGES) * STAGE_BYTES, bs = as + OpA::FLOATS * 4u;
    if constexpr (PAIRED) {
      multiply_paired(as, bs);
    } else {
#pragma unroll
      for (int kk = 0; kk < BK; kk += MMA_K) {
        double a[MI][A_REGS], b[NI][B_REGS];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int r = 0; r < A_REGS; ++r)
            a[i][r] = cmt_load_shared_f64(
                as + OpA::offset(warp_m + i * MMA_M + g + 8 * (r % (MMA_M / 8)), kk + t + 4 * (r / (MMA_M / 8))));
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int r = 0; r < B_REGS; ++r) b[j][r] = cmt_load_shared_f64(bs + OpB::offset(warp_n + j * 8 + g, kk + t + 4 * r));
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j) cmt_dmma<MMA>(acc[i][j], a[i], b[j]);
      }
    }
  }
  cmt_cp_async_wait<0>();

  // Epilogue: C = alpha * acc + beta * C (C not read when beta == 0), two adjacent columns of a row
  // at a time, stored together when VEC == 2 (16-byte aligned C, ldc even). Pair q of a thread's
  // accumulators (i, h, c): row g + 8 h of fragment row i; columns 2 t, 2 t + 1 of fragment
  // column c (registers 2 h, 2 h + 1), or with a paired n, register 2 h + c % 2 of fragment columns
  // c - c % 2 and c - c % 2 + 1, which are adjacent.
  struct Pair {
    int i, j0, r0, j1, r1, row, col;  // acc[i][j0][r0], acc[i][j1][r1] at (row, col), (row, col + 1)
  };
  auto pair_of = [&](int q) {
    const int i = q / (NI * (C_REGS / 2)), c = (q / (C_REGS / 2)) % NI, h = q % (C_REGS / 2);
    Pair p;
    p.i = i;
    p.row = block_m + warp_m + cmt_dmma_x<PAIR_M>(i * (MMA_M / 8) + h, g);
    if (PAIR_N) {
      p.j0 = c - c % 2, p.j1 = p.j0 + 1, p.r0 = p.r1 = 2 * h + c % 2;
    } else {
      p.j0 = p.j1 = c, p.r0 = 2 * h, p.r1 = 2 * h + 1;
    }
    p.col = block_n + warp_n + cmt_dmma_x<PAIR_N>(p.j0, 2 * t + p.r0 % 2);
    return p;
  };
  auto store_pair = [&](const Pair& pr, double s0, double s1) {
    const int row = pr.row, col = pr.col;
    if (row >= M) return;
    double* p = C + cmt_offset(row, col, ldc);
    double v0 = alpha * s0, v1 = alpha * s1;
    if (VEC == 2 && col + 1 < N) {
      if (beta != 0.0) {
        const double2 old = *reinterpret_cast<const double2*>(p);
        v0 = fma(beta, old.x, v0);
        v1 = fma(beta, old.y, v1);
      }
      *reinterpret_cast<double2*>(p) = make_double2(v0, v1);
    } else {
      if (col < N) p[0] = beta != 0.0 ? fma(beta, p[0], v0) : v0;
      if (col + 1 < N) p[1] = beta != 0.0 ? fma(beta, p[1], v1) : v1;
    }
  };
  constexpr int PAIRS = MI * NI * (C_REGS / 2);  // register pairs per thread
#if CMT_HAS_CLUSTERS
  if (CLUSTER_K > 1) {
    // Park the partial tile (pair q of thread tid at smem + (q * THREADS + tid) * 16), then rank r
    // adds pairs q with q % CLUSTER_K == r over ranks 0, 1, ... and stores them.
    __syncthreads();  // every warp is done reading the ring
#pragma unroll
    for (int q = 0; q < PAIRS; ++q) {
      const Pair pr = pair_of(q);
      cmt_store_shared_f64x2(smem + (unsigned)(q * THREADS + tid) * 16u, acc[pr.i][pr.j0][pr.r0],
                             acc[pr.i][pr.j1][pr.r1]);
    }
    cmt_cluster_sync();
#pragma unroll
    for (int q = 0; q < PAIRS; ++q) {
      if (q % CLUSTER_K != rank) continue;
      const unsigned slot = smem + (unsigned)(q * THREADS + tid) * 16u;
      double2 sum = cmt_cluster_load_f64x2(slot, 0);
#pragma unroll
      for (int r = 1; r < CLUSTER_K; ++r) {
        const double2 v = cmt_cluster_load_f64x2(slot, r);
        sum.x += v.x;
        sum.y += v.y;
      }
      store_pair(pair_of(q), sum.x, sum.y);
    }
    cmt_cluster_sync();  // no block leaves while another may still read its shared memory
    return;
  }
#endif
#pragma unroll
  for (int q = 0; q < PAIRS; ++q) {
    const Pair pr = pair_of(q);
    store_pair(pr, acc[pr.i][pr.j0][pr.r0], acc[pr.i][pr.j1][pr.r1]);
  }
}
