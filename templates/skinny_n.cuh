// Skinny N: C has few columns (N up to ~16) while M and K are large, bound by reading A (M x K,
// rows contiguous along k) once from memory.
//
// A block owns NT columns of C and WARPS*(32/LK)*ROWS rows. The lanes of a warp form 32/LK groups
// of LK lanes; a group owns ROWS consecutive rows of C, and its lanes stride along k, VEC floats
// each, so a group reads LK*VEC consecutive floats of a row of A per load (whole 128-byte lines).
// Per step a lane loads UNROLL such pieces of each of its ROWS rows, all before they are used, and
// multiplies them by the matching rows of B, NT values per k, which it reads from shared memory.
//
// B's rows k .. k+KC-1 (NT columns) are staged in shared memory for the whole block, one chunk
// ahead with cp.async into the other of two buffers; one barrier per chunk. The layout gives the
// lanes of a group, which read different k at once, different banks: columns in groups of 4 (or NT
// when NT < 4) read as one vector, and with VEC = 4 the k of a chunk stored as 4 planes by k % 4,
// each padded by 8 floats, so copies (one thread per k) are conflict-free as well. A step's loads of
// A are issued before the barrier that opens a chunk, so they stay in flight across it.
//
// At the end each group sums its lanes' ROWS x NT partial sums with shuffles in a fixed order,
// halving the values at each level (a lane keeps one half, its partner the other), so the work is
// about ROWS*NT shuffles per lane, not log2(LK) times that; each lane then stores the sums it holds.
// The result is deterministic.
//
// Rows past M and k past K are read as zero (never loaded), and columns past N are zero-filled in
// shared memory; only a step that crosses K or a warp that crosses M is predicated.
#pragma once
#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_ring.cuh"

// The shared-memory layout of one chunk of B (KC rows of k, NT columns), in floats. Columns come
// in NG groups of NTV (a vector read); within a group, k is split into VEC planes by k % VEC, each
// plane (KC/VEC) vectors long plus PAD floats. Element (k, n) lives at
//   ((n / NTV) * VEC + k % VEC) * PLANE + (k / VEC) * NTV + n % NTV.
template <int NT, int KC, int VEC>
struct CmtSknLayout {
  static constexpr int NTV = NT < 4 ? NT : 4;
  static constexpr int NG = NT / NTV;
  static constexpr int PAD = VEC == 4 ? 8 : 0;
  static constexpr int PLANE = (KC / VEC) * NTV + PAD;
  static constexpr int FLOATS = NG * VEC * PLANE;
};

// Copies rows kc .. kc + kneed - 1 of B's columns n0 .. n0 + NT - 1 into the chunk buffer at dst
// (the rest of the chunk is left as it was: no lane reads it), zero-filling k >= K and columns
// >= N. Thread t copies rows t, t + THREADS, ...: consecutive threads write consecutive vectors of
// a plane. VEC = 4: one copy per column group (B 16-byte aligned and ldb % 4 == 0, so the group's
// address is aligned); otherwise one 4-byte copy per column. The copies are cached in L1
// (cmt_cp_async_ca_to): neighbouring copies share the sectors of B.
template <int NT, int KC, int VEC, int THREADS>
CMT_DEVICE void cmt_skn_copy_b(unsigned dst, const float* B, int ldb, int kc, int kneed, int K,
                               int n0, int N, int tid) {
  typedef CmtSknLayout<NT, KC, VEC> L;
  constexpr int W = VEC == 4 ? L::NTV : 1;  // floats per copy
#pragma unroll
  for (int i = 0; i < (KC + THREADS - 1) / THREADS; ++i) {
    const int k = tid + i * THREADS;
    if (k < kneed) {
      const bool k_inside = kc + k < K;
      const float* row = B + cmt_offset(kc + k, n0, ldb);
      const unsigned d = dst + (unsigned)(((k % VEC) * L::PLANE) + (k / VEC) * L::NTV) * 4u;
#pragma unroll
      for (int c = 0; c < NT; c += W) {
        int valid = k_inside ? N - (n0 + c) : 0;
        valid = valid < 0 ? 0 : (valid > W ? W : valid);
        const unsigned dc = d + (unsigned)((c / L::NTV) * VEC * L::PLANE + c % L::NTV) * 4u;
        cmt_cp_async_ca_to<W * 4>(dc, valid > 0 ? row + c : B, valid * 4);
      }
    }
  }
}

// Loads a step of A: for each of the lane's ROWS rows (a_lane: its first row at its first k), the
// UNROLL pieces of VEC floats at k = k_lane + u*LK*VEC. CHECK: rows at or past rows_left and k at
// or past K read as zero, unread.
template <bool CHECK, int ROWS, int UNROLL, int VEC, int LK>
CMT_DEVICE void cmt_skn_load_a(float (&a)[ROWS][UNROLL][VEC], const float* a_lane, int lda,
                               int k_lane, int K, int rows_left) {
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float* p = a_lane + cmt_offset(r, u * LK * VEC, lda);
      const int k = k_lane + u * LK * VEC;
      if (VEC == 4) {
        float4 v;
        if (CHECK)
          v = cmt_load4_or_zero(p, r < rows_left ? K - k : 0);
        else
          v = __ldg(reinterpret_cast<const float4*>(p));
        a[r][u][0] = v.x;
        a[r][u][VEC > 1 ? 1 : 0] = v.y;
        a[r][u][VEC > 2 ? 2 : 0] = v.z;
        a[r][u][VEC > 3 ? 3 : 0] = v.w;
      } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          a[r][u][v] = CHECK ? cmt_load_or_zero(p + v, r < rows_left && k + v < K) : __ldg(p + v);
      }
    }
  }
}

// Multiplies a step of A by B's rows in shared memory (b_lane: the lane's first vector of this
// step in the chunk buffer).
template <int NT, int ROWS, int UNROLL, int VEC, int LK, int KC>
CMT_DEVICE void cmt_skn_fma(float (&acc)[ROWS][NT], const float (&a)[ROWS][UNROLL][VEC],
                            unsigned b_lane) {
  typedef CmtSknLayout<NT, KC, VEC> L;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
#pragma unroll
      for (int g = 0; g < L::NG; ++g) {
        float b[L::NTV];
        cmt_load_shared_vec<L::NTV>(
            b_lane + (unsigned)((g * VEC + v) * L::PLANE + u * LK * L::NTV) * 4u, b);
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int t = 0; t < L::NTV; ++t)
            acc[r][g * L::NTV + t] = fmaf(a[r][u][v], b[t], acc[r][g * L::NTV + t]);
      }
    }
  }
}

// Sums PER values over the lanes of a group, one level per partner distance O = LK/2, LK/4, .. 1:
// while a lane holds more than one value, it and its partner (lane ^ O) split them: the one with
// bit O clear keeps the lower half, the other the upper half, each adding the partner's copy of its
// half. Once one value is left, partners add their values (both get the same sum). The order of the
// additions is fixed, so the result is deterministic. Indexes are compile-time, so the values stay
// in registers.
template <int PER, int O>
struct CmtSknHalve {
  static CMT_DEVICE void run(float* vals, int lane) {
    if (PER > 1) {
      constexpr int HALF = PER / 2;
      const bool upper = (lane & O) != 0;
#pragma unroll
      for (int i = 0; i < HALF; ++i) {
        const float lo = vals[i];
        const float hi = vals[i + HALF];
        const float other = __shfl_xor_sync(0xffffffffu, upper ? lo : hi, O);
        vals[i] = (upper ? hi : lo) + other;
      }
    } else {
      vals[0] += __shfl_xor_sync(0xffffffffu, vals[0], O);
    }
    CmtSknHalve<(PER > 1 ? PER / 2 : 1), O / 2>::run(vals, lane);
  }
};
template <int PER>
struct CmtSknHalve<PER, 0> {
  static CMT_DEVICE void run(float*, int) {}
};

template <int NT, int ROWS, int WARPS, int LK, int UNROLL, int KC, int VEC>
__global__ void __launch_bounds__(WARPS * 32, 1)
cmt_sgemm_skinny_n(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                   const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                   int ldc) {
  typedef CmtSknLayout<NT, KC, VEC> L;
  constexpr int THREADS = WARPS * 32;
  constexpr int GROUPS = 32 / LK;                // row groups per warp
  constexpr int WARP_ROWS = GROUPS * ROWS;
  constexpr int TILE_M = WARPS * WARP_ROWS;
  constexpr int STEP_K = LK * VEC * UNROLL;      // k per step
  constexpr int V = ROWS * NT;                   // partial sums per lane
  static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
  static_assert(NT == 1 || NT == 2 || NT % 4 == 0, "NT must be 1, 2 or a multiple of 4");
  static_assert(LK >= 1 && LK <= 32 && 32 % LK == 0, "LK must divide 32");
  static_assert(KC % STEP_K == 0, "KC must be a multiple of LK*VEC*UNROLL");
  static_assert((V & (V - 1)) == 0, "ROWS*NT must be a power of two");
  static_assert(THREADS <= 1024, "at most 1024 threads");

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int kq = lane % LK;  // the lane's place along k in its group
  const int group = lane / LK;
  const int n0 = blockIdx.x * NT;
  const int m_warp = blockIdx.y * TILE_M + warp * WARP_ROWS;
  const int m_lane = m_warp + group * ROWS;  // the lane's first row
  const int rows_left = M - m_lane;          // may be <= 0
  const bool warp_full = m_warp + WARP_ROWS <= M;
  const float* a_lane = A + cmt_offset(m_lane, kq * VEC, lda);
  const int chunks = cmt_ceil_div(K, KC);
  const unsigned smem = cmt_dynamic_smem_address();

  float acc[ROWS][NT];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int n = 0; n < NT; ++n) acc[r][n] = 0.0f;

  // B's chunks go through a ring of two buffers: chunk c + 1 is copied while chunk c is multiplied.
  // Copies the chunk from row kn on (only the rows a step reads) into the buffer at `buf`.
  auto copy_chunk = [&](int kn, unsigned buf) {
    const int kneed = K - kn < KC ? cmt_ceil_div(K - kn, STEP_K) * STEP_K : KC;
    cmt_skn_copy_b<NT, KC, VEC, THREADS>(buf, B, ldb, kn, kneed, K, n0, N, tid);
  };
  CmtCpAsyncRing<2>::prologue(chunks, [&](int, int) { copy_chunk(0, smem); });

#pragma unroll 1
  for (int c = 0; c < chunks; ++c) {
    const int kc = c * KC;
    const int klen = K - kc < KC ? K - kc : KC;
    const int steps = cmt_ceil_div(klen, STEP_K);
    const unsigned buf = smem + (unsigned)((c & 1) * L::FLOATS) * 4u;
#pragma unroll 1
    for (int s = 0; s < steps; ++s) {
      const int k_lane = kc + s * STEP_K + kq * VEC;
      float a[ROWS][UNROLL][VEC];
      if (warp_full && kc + (s + 1) * STEP_K <= K)
        cmt_skn_load_a<false, ROWS, UNROLL, VEC, LK>(a, a_lane + (kc + s * STEP_K), lda, k_lane, K,
                                                     rows_left);
      else
        cmt_skn_load_a<true, ROWS, UNROLL, VEC, LK>(a, a_lane + (kc + s * STEP_K), lda, k_lane, K,
                                                    rows_left);
      // The chunk is in shared memory for every thread, and every thread is done with the previous
      // one, whose buffer the next chunk's copies now fill. (Its first row is kc + KC: formed from
      // the ring's chunk number, (c + 1) * KC, it shares a multiplication with kc, which changes
      // the machine code.)
      if (s == 0)
        CmtCpAsyncRing<2>::advance(
            c, chunks, [&](int, int) { copy_chunk(kc + KC, smem + (unsigned)(((c + 1) & 1) * L::FLOATS) * 4u); });
      cmt_skn_fma<NT, ROWS, UNROLL, VEC, LK, KC>(
          acc, a, buf + (unsigned)((s * (STEP_K / VEC) + kq) * L::NTV) * 4u);
    }
  }

  // Sum each group's LK lanes (see CmtSknHalve).
  CmtSknHalve<V, LK / 2>::run(&acc[0][0], lane);
  // The lane holds values first .. first + per - 1 (index r*NT + n); when fewer values than lanes
  // remain, `spread` neighbouring lanes hold the same ones and the first of them stores.
  constexpr int PER = V >= LK ? V / LK : 1;
  constexpr int SPREAD = V >= LK ? 1 : LK / V;
  if (kq % SPREAD == 0) {
    const int first = (kq / SPREAD) * PER;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int idx = first + i;
      const int r = idx / NT;
      const int n = idx % NT;
      if (r < rows_left && n0 + n < N) cmt_store_c(C, ldc, m_lane + r, n0 + n, acc[i / NT][i % NT], alpha, beta);
    }
  }
}
