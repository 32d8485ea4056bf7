// tf32x3_mma: FP32 GEMM on the tensor cores as three TF32 products (3xTF32), mma.sync m16n8k8 (sm_80
// and later), the opt-in precision class `tf32x3`. Each FP32 operand x is split into a TF32 "big"
// part, b = rna(x) (round to nearest, ties away: cvt.rna.tf32.f32), and a TF32 "small" remainder,
// s = rna(x - b); a product is then a.b ~ ab.bb + ab.bs + as.bb (the as.bs term is below FP32's
// precision; cmt_tf32.cuh). The corrections take an infinite or NaN big part as 0, so such an
// operand reaches C through ab.bb alone, as it does in FP32 SIMT. A block computes BM x BN of C with (BM/WM) x (BN/WN) warps, each a WM x WN tile of
// 16 x 8 fragments; k runs through a STAGES-deep cp.async ring (cmt_ring.cuh).
//
// STAGED = 1 sums each k tile's products (small terms first) in a cleared accumulator and adds it
// to C's accumulator with an IEEE FP32 add, so the tensor core's internal sum, which is not IEEE
// (it truncates), only ever adds BK terms; STAGED = 0 accumulates everything on the tensor core.
//
// Fragment coordinates (lane = 4 g + t), m16n8k8 .tf32:
//   A (16 x 8): register i holds A[g + 8 (i % 2)][t + 4 (i / 2)];
//   B (8 x 8):  register i holds B[t + 4 i][g];
//   C (16 x 8): register i holds C[g + 8 (i / 2)][2 t + i % 2].
// Shared memory keeps each operand in its stored orientation, so every copy is a VEC-float cp.async
// along the stored rows: an operand whose stored rows run along k (A in nn/nt, B in nt/tt) is held
// [x][BK + PAD/2], the others [k][X + PAD]. With PAD = 8 a warp's fragment reads hit 32 banks in
// either orientation. Rows outside the problem and k past K are zero-filled by the copies, so edge
// tiles take the same path; stores of C are checked. Strided batches run on grid z.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_ring.cuh"
#include "cmt_tf32.cuh"

// c += a b, one m16n8k8 TF32 product with FP32 accumulators.
CMT_DEVICE void cmt_mma_tf32(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One operand's stage: X (BM of A or BN of B) by BK, stored [x][BK + PAD/2] when K_ROWS (its stored
// rows run along k) and [k][X + PAD] otherwise.
template <int X, int BK, int PAD, int VEC, int THREADS, bool K_ROWS>
struct CmtTf32Operand {
  static constexpr int ROWS = K_ROWS ? X : BK;   // stored rows in the tile
  static constexpr int COLS = K_ROWS ? BK : X;   // contiguous elements per stored row
  static constexpr int LD = COLS + (K_ROWS ? PAD / 2 : PAD);
  static constexpr int FLOATS = ROWS * LD;
  static constexpr int PER_ROW = COLS / VEC;          // copies per stored row
  static constexpr int ROW_STEP = THREADS / PER_ROW;  // stored rows one pass covers
  static constexpr int PASSES = ROWS / ROW_STEP;
  static_assert(COLS % VEC == 0 && THREADS % PER_ROW == 0 && ROWS % ROW_STEP == 0,
                "a stage must be whole passes of the threads' VEC-float copies (the descriptor's constraints)");

  // Shared byte offset of element (x, k) from the stage's start.
  static CMT_DEVICE unsigned offset(int x, int k) { return (unsigned)(K_ROWS ? x * LD + k : k * LD + x) * 4u; }

  // src: the tile's first element (x = 0, k = 0) of the stored matrix; rows_left, cols_left: the
  // stored rows and row elements left in the matrix from there.
  static CMT_DEVICE void copy(unsigned stage, const float* src, int ld, int rows_left, int cols_left, int tid,
                              const float* fill) {
    const int c = (tid % PER_ROW) * VEC, r0 = tid / PER_ROW;
    const int left = cols_left - c;
    const int bytes = left >= VEC ? VEC * 4 : left > 0 ? left * 4 : 0;
    const float* from = src + cmt_offset(r0, c, ld);
    const cmt_index step = (cmt_index)ROW_STEP * ld;
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
      const int n = r0 + p * ROW_STEP < rows_left ? bytes : 0;
      const unsigned dst = stage + (unsigned)((r0 + p * ROW_STEP) * LD + c) * 4u;
      if (VEC == 4)
        cmt_cp_async_16_to(dst, n > 0 ? from : fill, n);
      else
        cmt_cp_async_ca_to<VEC * 4>(dst, n > 0 ? from : fill, n);
      from += step;
    }
  }
};

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int VEC, int PAD, int STAGED, int SWIZZLE,
          int TRANS_A, int TRANS_B, int DTYPE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
    cmt_sgemm_tf32x3_mma(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                         const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                         long long stride_a, long long stride_b, long long stride_c) {
  static_assert(DTYPE == 3, "tf32x3_mma computes the tf32x3 class only");
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int MI = WM / 16, NI = WN / 8;
  static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "warp tile and k tile of whole m16n8k8 products");
  using OpA = CmtTf32Operand<BM, BK, PAD, VEC, THREADS, TRANS_A == 0>;
  using OpB = CmtTf32Operand<BN, BK, PAD, VEC, THREADS, TRANS_B != 0>;
  constexpr unsigned STAGE_BYTES = (unsigned)(OpA::FLOATS + OpB::FLOATS) * 4u;

  const float* a_fill = A;  // any valid address: zero-filling copies name it without reading
  const float* b_fill = B;
  cmt_batch_offsets<1>(A, B, C, stride_a, stride_b, stride_c);
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE>(block_m, block_n);
  if (block_m >= M || block_n >= N) return;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN;
  const int g = lane / 4, t = lane % 4;
  const unsigned smem = cmt_dynamic_smem_address();

  const float* a_tile = A + (TRANS_A ? cmt_offset(0, block_m, lda) : cmt_offset(block_m, 0, lda));
  const float* b_tile = B + (TRANS_B ? cmt_offset(block_n, 0, ldb) : cmt_offset(0, block_n, ldb));
  const int m_left = M - block_m, n_left = N - block_n;
  const int k_tiles = (K + BK - 1) / BK;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK, k_left = K - k0;
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

  float acc[MI][NI][4];
  float part[STAGED ? MI : 1][STAGED ? NI : 1][4];  // a k tile's products (STAGED)
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  CmtCpAsyncRing<STAGES>::prologue(k_tiles, load_tile);
  for (int kt = 0; kt < k_tiles; ++kt) {
    CmtCpAsyncRing<STAGES>::advance(kt, k_tiles, load_tile);
    const unsigned as = smem + (kt % STAGES) * STAGE_BYTES, bs = as + OpA::FLOATS * 4u;
    if constexpr (STAGED) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) part[i][j][r] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned a_big[MI][4], a_small[MI][4], b_big[NI][2], b_small[NI][2];
      unsigned a_corr[MI][4], b_corr[NI][2];  // the big parts the corrections take (cmt_tf32_correction_big)
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          cmt_tf32_split(cmt_load_shared(as + OpA::offset(warp_m + i * 16 + g + 8 * (r % 2), kk + t + 4 * (r / 2))),
                         a_big[i][r], a_small[i][r]);
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) a_corr[i][r] = cmt_tf32_correction_big(a_big[i][r]);
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          cmt_tf32_split(cmt_load_shared(bs + OpB::offset(warp_n + j * 8 + g, kk + t + 4 * r)), b_big[j][r],
                         b_small[j][r]);
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) b_corr[j][r] = cmt_tf32_correction_big(b_big[j][r]);
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          float* c = STAGED ? part[STAGED ? i : 0][STAGED ? j : 0] : acc[i][j];
          cmt_mma_tf32(c, a_small[i], b_corr[j]);
          cmt_mma_tf32(c, a_corr[i], b_small[j]);
          cmt_mma_tf32(c, a_big[i], b_big[j]);
        }
    }
    if constexpr (STAGED) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) acc[i][j][r] += part[i][j][r];
    }
  }
  cmt_cp_async_wait<0>();

  // Epilogue: C = alpha acc + beta C (C not read when beta == 0), two adjacent columns of a row at a
  // time, stored together when VEC >= 2 (8-byte aligned C, ldc even).
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = block_m + warp_m + i * 16 + g + 8 * h;
        const int col = block_n + warp_n + j * 8 + 2 * t;
        if (row >= M) continue;
        float* p = C + cmt_offset(row, col, ldc);
        float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
        if (VEC >= 2 && col + 1 < N) {
          if (beta != 0.0f) {
            const float2 old = *reinterpret_cast<const float2*>(p);
            v0 = fmaf(beta, old.x, v0);
            v1 = fmaf(beta, old.y, v1);
          }
          *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
          if (col < N) p[0] = beta != 0.0f ? fmaf(beta, p[0], v0) : v0;
          if (col + 1 < N) p[1] = beta != 0.0f ? fmaf(beta, p[1], v1) : v1;
        }
      }
}
