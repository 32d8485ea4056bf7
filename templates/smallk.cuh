// smallk: C = alpha*A*B + beta*C for a small K (1..64) and a large M x N, where the time goes into
// writing C (M x N floats against (M + N) x K read), plus, towards K = 64, the outer products.
//
// A block computes BM x BN of C; each of its (BM/TM)*(BN/TN) threads a TM x TN register tile. The
// block stages A[BM x KC] (transposed, As[k][m]) and B[KC x BN] in shared memory, one chunk of KC
// k at a time; for K <= KC (the family's usual case) that is a single chunk, so the prologue is one
// round of loads and one barrier. At each k a thread reads its TM rows of A and its TN columns of B
// as float4 (conflict-free: a quarter warp reads consecutive 16-byte words or one broadcast word)
// and adds their outer product. The epilogue writes C straight from the registers.
//
// Mapping (tr = thread row group, tc = thread column group, RT = BM/TM, CT = BN/TN):
//  - row i = 4g+q of a thread is tile row (g*RT + tr)*4 + q (groups of 4 rows, RT groups apart);
//  - column j = 4g+q of a thread is tile column
//      VEC = 4: (g*CT + tc)*4 + q: four consecutive columns, stored with one float4, so at each
//               (row, g) the CT lanes of a row write CT consecutive 16-byte words of C;
//      VEC = 1: tc + j*CT: consecutive lanes write consecutive floats (any alignment, any ldc).
//    Either way the thread's 4g..4g+3 live at Bs[k][(g*CT + tc)*4 ..+3]: VEC = 4 stores B in its
//    own order, VEC = 1 permutes the columns as it stores them (scalar stores, any order is free).
//  - VEC = 4 loads A and B with float4 (16-byte aligned A, B, C, ld % 4 == 0: [requires]);
//    VEC = 1 loads floats and has no requirements.
// Partial chunks (the last k < KC) are zero-filled past K and multiplied in steps of 4 k up to K
// rounded up to 4, so K = 1 costs four steps, not KC. Tiles that cross an edge of C load with zero
// fill and store with checks; interior tiles take unchecked copies of both (decided per block).
// beta == 0 never reads C. STREAM = 1 writes C with evict-first (st.global.cs) stores, and reads it
// with ld.global.cs when beta != 0.
// Layouts: a transposed operand (TRANS_A: A stored K x M; TRANS_B: B stored N x K) is read along its
// stored rows, VEC floats at a time, and lands in the same shared tiles: a transposed A's vectors of
// m go to As[k][m..m+3] whole, a transposed B's vectors of k are stored element by element into
// Bs[k][pos(n)], whose rows are then padded by 4 floats (fewer bank conflicts on those stores).
// Strided batches run on grid z (cmt_batch_offsets).
#pragma once
#include "cmt_common.cuh"

// C accesses, optionally with the streaming (evict-first) cache hint.
template <int STREAM>
CMT_DEVICE void cmt_smallk_st(float* p, float v) {
  if (STREAM) __stcs(p, v); else *p = v;
}
template <int STREAM>
CMT_DEVICE void cmt_smallk_st4(float* p, float4 v) {
  if (STREAM) __stcs(reinterpret_cast<float4*>(p), v); else *reinterpret_cast<float4*>(p) = v;
}
template <int STREAM>
CMT_DEVICE float cmt_smallk_ld(const float* p) {
  return STREAM ? __ldcs(p) : *p;
}
template <int STREAM>
CMT_DEVICE float4 cmt_smallk_ld4(const float* p) {
  return STREAM ? __ldcs(reinterpret_cast<const float4*>(p)) : *reinterpret_cast<const float4*>(p);
}

// Where element idx = tid + pass*THREADS of a row-major tile COLS wide lies, split into a part
// that depends on the thread only (tr, tc) and one that depends on the pass only (pr, pc), so
// that a thread's source pointer is formed once and every pass adds a constant multiple of the
// leading dimension and a constant column (no per-pass 64-bit index arithmetic).
template <int COLS, int THREADS>
struct CmtSmallkCoords {
  int tr, tc;
  CMT_DEVICE explicit CmtSmallkCoords(unsigned tid) {
    if (THREADS % COLS == 0) {
      tr = static_cast<int>(tid / COLS);
      tc = static_cast<int>(tid % COLS);
    } else if (COLS % THREADS == 0) {
      tr = 0;
      tc = tid;
    } else {
      tr = 0;
      tc = 0;
    }
  }
  // Row and column of the pass's element, relative to (tr, tc); tid is only used in the generic
  // case, where THREADS and COLS do not divide one another.
  CMT_DEVICE static void pass(int tid, int p, int& pr, int& pc) {
    constexpr int ROWS_PER_PASS = THREADS / COLS > 0 ? THREADS / COLS : 1;
    constexpr int PASSES_PER_ROW = COLS / THREADS > 0 ? COLS / THREADS : 1;
    if (THREADS % COLS == 0) {
      pr = p * ROWS_PER_PASS;
      pc = 0;
    } else if (COLS % THREADS == 0) {
      pr = p / PASSES_PER_ROW;
      pc = (p % PASSES_PER_ROW) * THREADS;
    } else {
      pr = static_cast<int>((static_cast<unsigned>(tid) + p * THREADS) / COLS);
      pc = static_cast<int>((static_cast<unsigned>(tid) + p * THREADS) % COLS);
    }
  }
};

// Copies one k chunk into shared memory: As[k*LDA + m] = op(A)[m][k] (a points at op(A)[m0][k0])
// and Bs[k*LDB + pos(n)] = op(B)[k][n] (b points at op(B)[k0][n0]). FULL: the chunk lies inside A
// and B (KC k left, BM rows and BN columns of C left), no checks. Otherwise elements at
// m >= rows_left, n >= cols_left or k >= kc are zeros, and nothing outside is read. Every load of
// the chunk is issued before the first shared store, so their latencies overlap (one round trip per
// chunk). Each operand is read along its stored rows, consecutive threads on consecutive VEC-float
// vectors of a row: A (TRANS_A = 0): rows m, vectors of k, transposed into As with scalar stores;
// A (TRANS_A = 1): rows k, vectors of m, stored whole; B (TRANS_B = 0): rows k, vectors of n;
// B (TRANS_B = 1): rows n, vectors of k, stored element by element.
template <bool FULL, int BM, int BN, int KC, int TN, int VEC, int THREADS, int LDA, int LDB = BN, int TRANS_A = 0,
          int TRANS_B = 0>
CMT_DEVICE void cmt_smallk_load_chunk(float* As, float* Bs, const float* __restrict__ a, int lda,
                                      const float* __restrict__ b, int ldb, int rows_left,
                                      int cols_left, int kc, int tid) {
  constexpr int CT = BN / TN;
  constexpr int A_COLS = (TRANS_A ? BM : KC) / VEC;  // loads per stored row of the A chunk
  constexpr int A_COUNT = (TRANS_A ? KC : BM) * A_COLS;
  constexpr int A_PASSES = (A_COUNT + THREADS - 1) / THREADS;
  constexpr int B_COLS = (TRANS_B ? KC : BN) / VEC;  // loads per stored row of the B chunk
  constexpr int B_COUNT = (TRANS_B ? BN : KC) * B_COLS;
  constexpr int B_PASSES = (B_COUNT + THREADS - 1) / THREADS;
  typedef CmtSmallkCoords<A_COLS, THREADS> ACoords;
  typedef CmtSmallkCoords<B_COLS, THREADS> BCoords;
  const ACoords ac(tid);
  const BCoords bc(tid);
  const float* a_thr = a + cmt_offset(ac.tr, ac.tc * VEC, lda);
  const float* b_thr = b + cmt_offset(bc.tr, bc.tc * VEC, ldb);

  float4 va[VEC == 4 ? A_PASSES : 1], vb[VEC == 4 ? B_PASSES : 1];
  float sa[VEC == 1 ? A_PASSES : 1], sb[VEC == 1 ? B_PASSES : 1];
#pragma unroll
  for (int p = 0; p < A_PASSES; ++p) {
    if (A_COUNT % THREADS == 0 || tid + p * THREADS < A_COUNT) {
      int pr, pc;
      ACoords::pass(tid, p, pr, pc);
      const int sr = ac.tr + pr, sc = (ac.tc + pc) * VEC;  // stored row and column
      const int m = TRANS_A ? sc : sr, k = TRANS_A ? sr : sc;
      const float* src = a_thr + (cmt_index)pr * lda + pc * VEC;
      if (VEC == 4)
        va[p] = FULL ? __ldg(reinterpret_cast<const float4*>(src))
                     : cmt_load4_or_zero(src, TRANS_A ? (k < kc ? rows_left - m : 0) : (m < rows_left ? kc - k : 0));
      else
        sa[p] = FULL ? __ldg(src) : cmt_load_or_zero(src, m < rows_left && k < kc);
    }
  }
#pragma unroll
  for (int p = 0; p < B_PASSES; ++p) {
    if (B_COUNT % THREADS == 0 || tid + p * THREADS < B_COUNT) {
      int pr, pc;
      BCoords::pass(tid, p, pr, pc);
      const int sr = bc.tr + pr, sc = (bc.tc + pc) * VEC;  // stored row and column
      const int k = TRANS_B ? sc : sr, n = TRANS_B ? sr : sc;
      const float* src = b_thr + (cmt_index)pr * ldb + pc * VEC;
      if (VEC == 4)
        vb[p] = FULL ? __ldg(reinterpret_cast<const float4*>(src))
                     : cmt_load4_or_zero(src, TRANS_B ? (n < cols_left ? kc - k : 0) : (k < kc ? cols_left - n : 0));
      else
        sb[p] = FULL ? __ldg(src) : cmt_load_or_zero(src, k < kc && n < cols_left);
    }
  }
  // Every load above is in flight before the first shared store below.
#pragma unroll
  for (int p = 0; p < A_PASSES; ++p) {
    if (A_COUNT % THREADS == 0 || tid + p * THREADS < A_COUNT) {
      int pr, pc;
      ACoords::pass(tid, p, pr, pc);
      const int sr = ac.tr + pr, sc = (ac.tc + pc) * VEC;
      const int m = TRANS_A ? sc : sr, k = TRANS_A ? sr : sc;
      if (TRANS_A && VEC == 4) {
        *reinterpret_cast<float4*>(As + k * LDA + m) = va[p];
      } else if (VEC == 4) {
        As[(k + 0) * LDA + m] = va[p].x;
        As[(k + 1) * LDA + m] = va[p].y;
        As[(k + 2) * LDA + m] = va[p].z;
        As[(k + 3) * LDA + m] = va[p].w;
      } else {
        As[k * LDA + m] = sa[p];
      }
    }
  }
#pragma unroll
  for (int p = 0; p < B_PASSES; ++p) {
    if (B_COUNT % THREADS == 0 || tid + p * THREADS < B_COUNT) {
      int pr, pc;
      BCoords::pass(tid, p, pr, pc);
      const int sr = bc.tr + pr, sc = (bc.tc + pc) * VEC;
      const int k = TRANS_B ? sc : sr, n = TRANS_B ? sr : sc;
      if (TRANS_B && VEC == 4) {  // four k of column n (VEC = 4 keeps B in its own column order)
        Bs[(k + 0) * LDB + n] = vb[p].x;
        Bs[(k + 1) * LDB + n] = vb[p].y;
        Bs[(k + 2) * LDB + n] = vb[p].z;
        Bs[(k + 3) * LDB + n] = vb[p].w;
      } else if (VEC == 4) {
        *reinterpret_cast<float4*>(Bs + k * LDB + n) = vb[p];
      } else {
        // Column n = tc + j*CT is element j = 4g+q of thread tc: it goes to (g*CT + tc)*4 + q.
        const unsigned j = static_cast<unsigned>(n) / CT;
        Bs[k * LDB + ((j / 4) * CT + static_cast<unsigned>(n) % CT) * 4 + j % 4] = sb[p];
      }
    }
  }
}

// acc += A[:, k] (x) B[k, :] for one k: a_k = &As[k*LDA + tr*4], b_k = &Bs[k*BN + tc*4].
template <int TM, int TN, int RT, int CT>
CMT_DEVICE void cmt_smallk_step(float (&acc)[TM][TN], const float* a_k, const float* b_k) {
  float a[TM], b[TN];
#pragma unroll
  for (int g = 0; g < TM / 4; ++g) {
    const float4 v = *reinterpret_cast<const float4*>(a_k + g * RT * 4);
    a[4 * g + 0] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
  }
#pragma unroll
  for (int g = 0; g < TN / 4; ++g) {
    const float4 v = *reinterpret_cast<const float4*>(b_k + g * CT * 4);
    b[4 * g + 0] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Writes the thread's TM x TN results: C[r][c] = alpha*acc + beta*C[r][c] (READ_C), alpha*acc
// otherwise (C not read). c_tile points at C[m0][n0]. FULL: the whole tile lies inside C. With
// READ_C, a row's old values are all read before any of them is written, so the reads of a row
// overlap (the compiler cannot move reads of one row above the writes of another).
template <bool FULL, bool READ_C, int TM, int TN, int RT, int CT, int VEC, int STREAM>
CMT_DEVICE void cmt_smallk_store(float* __restrict__ c_tile, int ldc, const float (&acc)[TM][TN], int tr,
                                 int tc, int rows_left, int cols_left, float alpha, float beta) {
  // The thread's first column; its others are constant offsets from it (immediates in the
  // stores), its rows multiples of ldc.
  const int c0 = tc * VEC;
  float* c_thr = c_tile + c0;
#pragma unroll
  for (int gi = 0; gi < TM / 4; ++gi) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = (gi * RT + tr) * 4 + q;
      if (!FULL && r >= rows_left) continue;
      float* row = c_thr + (cmt_index)r * ldc;
      float out[TN];
#pragma unroll
      for (int j = 0; j < TN; ++j) out[j] = alpha * acc[4 * gi + q][j];
      if (VEC == 4) {
        if (READ_C) {
          float4 old[TN / 4];
#pragma unroll
          for (int gj = 0; gj < TN / 4; ++gj) {
            const int dc = gj * CT * 4;  // column c0 + dc
            if (FULL || c0 + dc + 4 <= cols_left) {
              old[gj] = cmt_smallk_ld4<STREAM>(row + dc);
            } else {  // at most 3 of the 4 columns exist
              old[gj].x = c0 + dc + 0 < cols_left ? cmt_smallk_ld<STREAM>(row + dc + 0) : 0.0f;
              old[gj].y = c0 + dc + 1 < cols_left ? cmt_smallk_ld<STREAM>(row + dc + 1) : 0.0f;
              old[gj].z = c0 + dc + 2 < cols_left ? cmt_smallk_ld<STREAM>(row + dc + 2) : 0.0f;
              old[gj].w = 0.0f;
            }
          }
#pragma unroll
          for (int gj = 0; gj < TN / 4; ++gj) {
            out[4 * gj + 0] = fmaf(beta, old[gj].x, out[4 * gj + 0]);
            out[4 * gj + 1] = fmaf(beta, old[gj].y, out[4 * gj + 1]);
            out[4 * gj + 2] = fmaf(beta, old[gj].z, out[4 * gj + 2]);
            out[4 * gj + 3] = fmaf(beta, old[gj].w, out[4 * gj + 3]);
          }
        }
#pragma unroll
        for (int gj = 0; gj < TN / 4; ++gj) {
          const int dc = gj * CT * 4;
          if (FULL || c0 + dc + 4 <= cols_left) {
            cmt_smallk_st4<STREAM>(row + dc, make_float4(out[4 * gj], out[4 * gj + 1], out[4 * gj + 2], out[4 * gj + 3]));
          } else {
#pragma unroll
            for (int e = 0; e < 3; ++e)
              if (c0 + dc + e < cols_left) cmt_smallk_st<STREAM>(row + dc + e, out[4 * gj + e]);
          }
        }
      } else {
        if (READ_C) {
          float old[TN];
#pragma unroll
          for (int j = 0; j < TN; ++j)
            old[j] = (FULL || c0 + j * CT < cols_left) ? cmt_smallk_ld<STREAM>(row + j * CT) : 0.0f;
#pragma unroll
          for (int j = 0; j < TN; ++j) out[j] = fmaf(beta, old[j], out[j]);
        }
#pragma unroll
        for (int j = 0; j < TN; ++j)
          if (FULL || c0 + j * CT < cols_left) cmt_smallk_st<STREAM>(row + j * CT, out[j]);
      }
    }
  }
}

// Blocks per SM the register allocation must allow: 512 threads' worth (at most 128 registers a
// thread), so that while one block waits for its chunk another multiplies or drains its stores.
#ifndef CMT_SMALLK_MIN_BLOCKS
#define CMT_SMALLK_MIN_BLOCKS(threads) ((threads) >= 512 ? 1 : 512 / (threads))
#endif

template <int BM, int BN, int KC, int TM, int TN, int VEC, int STREAM, int TRANS_A, int TRANS_B>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), CMT_SMALLK_MIN_BLOCKS((BM / TM) * (BN / TN)))
cmt_sgemm_smallk(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                 const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                 long long stride_a, long long stride_b, long long stride_c) {
  static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4");
  static_assert(BM % TM == 0 && BN % TN == 0, "BM and BN must be multiples of TM and TN");
  static_assert(KC % 4 == 0, "KC must be a multiple of 4");
  static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
  constexpr int RT = BM / TM;
  constexpr int CT = BN / TN;
  constexpr int THREADS = RT * CT;
  static_assert(THREADS <= 1024, "threads (BM/TM)*(BN/TN) must be <= 1024");
  // 4 floats of padding per k row of As keep its float4 reads aligned and spread the transposed
  // stores of neighbouring k over the banks.
  constexpr int LDA = BM + 4;
  constexpr int LDB = TRANS_B ? BN + 4 : BN;
  __shared__ __align__(16) float As[KC * LDA];  // As[k][m]
  __shared__ __align__(16) float Bs[KC * LDB];  // Bs[k][pos(n)]

  cmt_batch_offsets<1>(A, B, C, stride_a, stride_b, stride_c);
  const int tid = threadIdx.x;
  const int tr = threadIdx.x / CT;
  const int tc = threadIdx.x % CT;
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int rows_left = M - m0;
  const int cols_left = N - n0;
  const bool inside_mn = rows_left >= BM && cols_left >= BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  const float* a_k = As + tr * 4;
  const float* b_k = Bs + tc * 4;
  // k0 + kc <= K: the loop cannot overflow for any K.
  int kc;
#pragma unroll 1
  for (int k0 = 0; k0 < K; k0 += kc) {
    kc = min(KC, K - k0);
    // Opaque copies of the thread index and the leading dimensions: the compiler would otherwise
    // hoist every per-pass source offset and shared-memory address of the loaders out of this
    // loop and hold them across the outer products, where the accumulators need the registers
    // (it spilled). Recomputing them per chunk costs a few integer instructions.
    int tid_c = tid, lda_c = lda, ldb_c = ldb;
    asm volatile("" : "+r"(tid_c), "+r"(lda_c), "+r"(ldb_c));
    const float* a = A + cmt_offset_op<TRANS_A>(m0, k0, lda_c);
    const float* b = B + cmt_offset_op<TRANS_B>(k0, n0, ldb_c);
    if (inside_mn && kc == KC)
      cmt_smallk_load_chunk<true, BM, BN, KC, TN, VEC, THREADS, LDA, LDB, TRANS_A, TRANS_B>(
          As, Bs, a, lda_c, b, ldb_c, rows_left, cols_left, kc, tid_c);
    else
      cmt_smallk_load_chunk<false, BM, BN, KC, TN, VEC, THREADS, LDA, LDB, TRANS_A, TRANS_B>(
          As, Bs, a, lda_c, b, ldb_c, rows_left, cols_left, kc, tid_c);
    __syncthreads();
    if (kc == KC) {
#pragma unroll
      for (int k = 0; k < KC; ++k) cmt_smallk_step<TM, TN, RT, CT>(acc, a_k + k * LDA, b_k + k * LDB);
    } else {
      // The chunk is zero past kc, so whole steps of 4 (kc rounded up <= KC) add nothing extra.
#pragma unroll 1
      for (int k = 0; k < kc; k += 4) {
#pragma unroll
        for (int u = 0; u < 4; ++u) cmt_smallk_step<TM, TN, RT, CT>(acc, a_k + (k + u) * LDA, b_k + (k + u) * LDB);
      }
    }
    if (K - k0 > KC) __syncthreads();  // the next chunk overwrites As and Bs
  }

  float* c_tile = C + cmt_offset(m0, n0, ldc);
  if (beta == 0.0f) {
    if (inside_mn)
      cmt_smallk_store<true, false, TM, TN, RT, CT, VEC, STREAM>(c_tile, ldc, acc, tr, tc, rows_left, cols_left,
                                                               alpha, beta);
    else
      cmt_smallk_store<false, false, TM, TN, RT, CT, VEC, STREAM>(c_tile, ldc, acc, tr, tc, rows_left, cols_left,
                                                                alpha, beta);
  } else {
    if (inside_mn)
      cmt_smallk_store<true, true, TM, TN, RT, CT, VEC, STREAM>(c_tile, ldc, acc, tr, tc, rows_left, cols_left,
                                                              alpha, beta);
    else
      cmt_smallk_store<false, true, TM, TN, RT, CT, VEC, STREAM>(c_tile, ldc, acc, tr, tc, rows_left, cols_left,
                                                               alpha, beta);
  }
}
