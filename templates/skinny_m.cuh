// Skinny M: C has few rows (M up to ~16) while N and K are large, a GEMV-like product bound by
// reading B (K x N) once from memory.
//
// A block owns TN columns of C and MT rows per pass (a tile of 64 rows, so 64/MT passes; a problem
// with M <= MT takes one). Its lanes along n, TN/VEC of them, read consecutive columns of a row of
// B (VEC floats each: a warp reads whole 128-byte lines); the 32/(TN/VEC) lane groups of a warp
// take different rows of B, and each lane UNROLL consecutive rows per step, all loaded before they
// are used, so each lane has UNROLL loads in flight. The warps split K in chunks of KC rows, taken
// round-robin (chunk c to warp c % WARPS), so they never wait for one another in the main loop.
//
// The rows of A a chunk needs (MT x KC) are tiny and read by every lane: each warp copies its
// chunk's rows into its own shared-memory region with cp.async (16-byte copies when VEC = 4) one
// chunk ahead, into the other of two buffers, and lanes read them as broadcast 16-byte loads
// (UNROLL consecutive k of one row). Only __syncwarp orders a warp's copies and reads.
//
// At the end each warp sums its lane groups with shuffles (butterfly, the same sum on every lane),
// writes its MT x TN partials into its region, and after one barrier every thread sums one output's
// partials over the warps in order 0..WARPS-1 and stores it: the result is deterministic.
//
// Rows past M are zero-filled in shared memory (and never stored); a chunk that crosses K or a
// block that crosses N takes the predicated path (zero for rows of B past K and columns past N,
// which are never read); full chunks of interior blocks load unpredicated.
#pragma once
#include "cmt_common.cuh"
#include "cmt_ptx.cuh"

// Rows of C per block (grid.y = ceil(M / 64)): M up to 65535 * 64 fits the grid.
#define CMT_SKM_ROW_TILE 64

// Copies rows 0..MT-1, k in [k0, k0 + KC) of A (a_rows = row m0 of A) into the MT x KC buffer at
// dst (row-major, KC floats a row) with cp.async, one warp (lane 0..31). Rows at or past `rows` and
// k at or past K are zero-filled and not read. VEC = 4: 16-byte copies (A 16-byte aligned, lda and
// k0 multiples of 4); otherwise 4-byte copies (any alignment).
template <int MT, int KC, int VEC>
CMT_DEVICE void cmt_skm_copy_a(unsigned dst, const float* a_rows, int lda, int rows, int k0, int K,
                               int lane) {
  constexpr int PER_ROW = KC / VEC;  // copies per row
  constexpr int COPIES = MT * PER_ROW;
#pragma unroll
  for (int i = 0; i < (COPIES + 31) / 32; ++i) {
    const int e = lane + 32 * i;
    if (COPIES % 32 == 0 || e < COPIES) {
      const int m = e / PER_ROW;
      const int kk = (e % PER_ROW) * VEC;
      const int k = k0 + kk;
      const unsigned d = dst + (unsigned)(m * KC + kk) * 4u;
      if (VEC == 4) {
        int valid = m < rows ? K - k : 0;
        valid = valid < 0 ? 0 : (valid > 4 ? 4 : valid);
        cmt_cp_async_16_to(d, valid > 0 ? a_rows + cmt_offset(m, k, lda) : a_rows, valid * 4);
      } else {
        const bool inside = m < rows && k < K;
        cmt_cp_async_4_to(d, inside ? a_rows + cmt_offset(m, k, lda) : a_rows, inside);
      }
    }
  }
}

// One chunk of a warp: rows k0 .. k0 + KC - 1 of B (fewer at the end of K) against the chunk of A
// in shared memory at a_buf. b_lane points at row 0, the lane's first column of B. CHECK: the
// chunk crosses K or the block crosses N (cols_left: columns from the lane's first to N, may be
// <= 0); rows of B past K and columns past N read as zero.
template <bool CHECK, int MT, int VEC, int UNROLL, int KC, int KL>
CMT_DEVICE void cmt_skm_chunk(float (&acc)[MT][VEC], unsigned a_buf, const float* b_lane, int ldb,
                              int k0, int K, int cols_left, int kl) {
  constexpr int WARP_K = KL * UNROLL;  // rows of B per warp step
  constexpr int STEPS = KC / WARP_K;
  constexpr int AW = UNROLL % 4 == 0 ? 4 : (UNROLL % 2 == 0 ? 2 : 1);  // floats per A read
  int steps = STEPS;
  if (CHECK) {
    const int left = cmt_ceil_div(K - k0, WARP_K);
    steps = left < STEPS ? left : STEPS;
  }
  // The lane's rows of this chunk: k0 + s*WARP_K + kl*UNROLL + u.
  const float* b_row = b_lane + cmt_offset(k0 + kl * UNROLL, 0, ldb);
  const cmt_index b_step = (cmt_index)WARP_K * ldb;
  unsigned a_lane = a_buf + (unsigned)(kl * UNROLL) * 4u;
  int k_lane = k0 + kl * UNROLL;
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    float b[UNROLL][VEC];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float* p = b_row + cmt_offset(u, 0, ldb);
      if (VEC == 4) {
        float4 v;
        if (CHECK)
          v = cmt_load4_or_zero(p, k_lane + u < K ? cols_left : 0);
        else
          v = __ldg(reinterpret_cast<const float4*>(p));
        b[u][0] = v.x;
        b[u][VEC > 1 ? 1 : 0] = v.y;
        b[u][VEC > 2 ? 2 : 0] = v.z;
        b[u][VEC > 3 ? 3 : 0] = v.w;
      } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          b[u][v] = CHECK ? cmt_load_or_zero(p + v, k_lane + u < K && v < cols_left) : __ldg(p + v);
      }
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      float a[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u += AW)
        cmt_load_shared_vec<AW>(a_lane + (unsigned)(m * KC + u) * 4u, a + u);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[m][v] = fmaf(a[u], b[u][v], acc[m][v]);
    }
    b_row += b_step;
    a_lane += (unsigned)WARP_K * 4u;
    k_lane += WARP_K;
  }
}

template <int MT, int TN, int VEC, int WARPS, int UNROLL, int KC>
__global__ void __launch_bounds__(WARPS * 32, 1)
cmt_sgemm_skinny_m(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                   const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                   int ldc) {
  constexpr int THREADS = WARPS * 32;
  constexpr int LN = TN / VEC;         // lanes along n
  constexpr int KL = 32 / LN;          // lane groups along k
  constexpr int WARP_K = KL * UNROLL;  // rows of B per warp step
  constexpr int A_BUF = MT * KC;       // floats of one chunk of A
  // A warp's shared memory: two chunk buffers, later its MT x TN partial sums.
  constexpr int REGION = 2 * A_BUF > MT * TN ? 2 * A_BUF : MT * TN;
  static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
  static_assert(TN % VEC == 0 && LN >= 1 && LN <= 32 && 32 % LN == 0,
                "TN/VEC lanes along n must divide 32");
  static_assert(KC % WARP_K == 0 && KC % 4 == 0, "KC must be a multiple of the warp step and of 4");
  static_assert(CMT_SKM_ROW_TILE % MT == 0, "MT must divide the 64-row block tile");
  static_assert(THREADS <= 1024, "at most 1024 threads");

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int ln = lane % LN;
  const int kl = lane / LN;
  const int n0 = blockIdx.x * TN;
  const int cols_left = N - (n0 + ln * VEC);  // columns from the lane's first to N
  const bool cols_full = n0 + TN <= N;
  const int chunks = cmt_ceil_div(K, KC);
  const unsigned smem = cmt_dynamic_smem_address();
  const unsigned region = smem + (unsigned)(warp * REGION) * 4u;
  const float* b_lane = B + (n0 + ln * VEC);

#pragma unroll 1
  for (int pass = 0; pass < CMT_SKM_ROW_TILE / MT; ++pass) {
    const int m0 = blockIdx.y * CMT_SKM_ROW_TILE + pass * MT;
    if (m0 >= M) break;  // block-uniform
    const int rows = M - m0 < MT ? M - m0 : MT;
    const float* a_rows = A + cmt_offset(m0, 0, lda);

    float acc[MT][VEC];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int v = 0; v < VEC; ++v) acc[m][v] = 0.0f;

    // The warp's chunks: warp, warp + WARPS, ...; the copy of the next one overlaps this one.
    int buf = 0;
    if (warp < chunks) cmt_skm_copy_a<MT, KC, VEC>(region, a_rows, lda, rows, warp * KC, K, lane);
    cmt_cp_async_commit();
#pragma unroll 1
    for (int c = warp; c < chunks; c += WARPS) {
      const int next = c + WARPS;
      if (next < chunks)
        cmt_skm_copy_a<MT, KC, VEC>(region + (unsigned)((buf ^ 1) * A_BUF) * 4u, a_rows, lda, rows,
                                    next * KC, K, lane);
      cmt_cp_async_commit();
      cmt_cp_async_wait<1>();  // this chunk's copies are done
      __syncwarp();
      const unsigned a_buf = region + (unsigned)(buf * A_BUF) * 4u;
      const int k0 = c * KC;
      if (cols_full && k0 + KC <= K)
        cmt_skm_chunk<false, MT, VEC, UNROLL, KC, KL>(acc, a_buf, b_lane, ldb, k0, K, cols_left, kl);
      else
        cmt_skm_chunk<true, MT, VEC, UNROLL, KC, KL>(acc, a_buf, b_lane, ldb, k0, K, cols_left, kl);
      __syncwarp();  // every lane is done with this buffer before it is refilled
      buf ^= 1;
    }
    cmt_cp_async_wait<0>();
    __syncwarp();

    // Sum the lane groups (lanes LN apart), then the warps' partials in shared memory.
#pragma unroll
    for (int o = LN; o < 32; o *= 2)
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[m][v] += __shfl_xor_sync(0xffffffffu, acc[m][v], o);
    if (kl == 0) {
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          cmt_store_shared(region + (unsigned)(m * TN + ln * VEC + v) * 4u, acc[m][v]);
    }
    __syncthreads();
#pragma unroll 1
    for (int e = tid; e < MT * TN; e += THREADS) {
      const int m = e / TN;
      const int n = e % TN;
      if (m < rows && n0 + n < N) {
        float sum = cmt_load_shared(smem + (unsigned)e * 4u);
#pragma unroll
        for (int w = 1; w < WARPS; ++w) sum += cmt_load_shared(smem + (unsigned)(w * REGION + e) * 4u);
        cmt_store_c(C, ldc, m0 + m, n0 + n, sum, alpha, beta);
      }
    }
    __syncthreads();  // the next pass refills the regions
  }
}
