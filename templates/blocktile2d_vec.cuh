// 2D blocktiling with 128-bit accesses. Like blocktile2d, a block computes BM x BN of C and each
// of its (BM/TM)*(BN/TN) threads a TM x TN sub-grid, but:
//  - global loads of A and B are float4 (4 consecutive k of an A row, 4 consecutive n of a B row);
//  - A is stored TRANSPOSED in shared memory, As[k][m], so at fixed k a thread's A values are
//    contiguous like its B values, and the inner loop reads both with float4;
//  - C is written with float4.
// A thread owns TM/4 groups of 4 consecutive rows and TN/4 groups of 4 consecutive columns; the
// groups are strided (ROW_THREADS resp. COL_THREADS groups apart), so neighbouring threads read
// neighbouring 16-byte words of Bs and write neighbouring 16-byte words of C.
// Needs 16-byte aligned A, B, C and lda, ldb, ldc multiples of 4 (the descriptor's [requires]).
// Partial tiles: vectors wholly inside the matrix still move as float4, the rest element-wise
// with zero fill; the choice is made once per tile, so interior tiles pay nothing.
#pragma once
#include "cmt_common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
cmt_sgemm_blocktile2d_vec(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                          const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                          int ldc) {
  static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4");
  static_assert(BM % TM == 0 && BN % TN == 0, "BM and BN must be multiples of TM and TN");
  static_assert(BK % 4 == 0, "BK must be a multiple of 4");
  constexpr int ROW_THREADS = BM / TM;
  constexpr int COL_THREADS = BN / TN;
  constexpr int THREADS = ROW_THREADS * COL_THREADS;
  static_assert(THREADS <= 1024, "threads (BM/TM)*(BN/TN) must be <= 1024");
  // Pad each k row of As by 4 words (keeps float4 alignment): the transposed scalar stores of
  // the threads loading k and k+4 of the same A rows then land in different banks.
  constexpr int A_LD = BM + 4;
  __shared__ __align__(16) float As[BK * A_LD];  // As[k][m]
  __shared__ __align__(16) float Bs[BK * BN];    // Bs[k][n]

  const int tid = threadIdx.x;
  const int thread_row = tid / COL_THREADS;  // row-group index, 0..ROW_THREADS-1
  const int thread_col = tid % COL_THREADS;  // column-group index, 0..COL_THREADS-1
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int rows_left = M - m0;
  const int cols_left = N - n0;
  const float* a_tile = A + cmt_offset(m0, 0, lda);
  const float* b_tile = B + n0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    cmt_load_tile_vec4<true, BM, BK, THREADS, A_LD>(As, a_tile + k0, lda, rows_left, K - k0, tid);
    cmt_load_tile_vec4<false, BK, BN, THREADS, BN>(Bs, b_tile + cmt_offset(k0, 0, ldb), ldb, K - k0,
                                                   cols_left, tid);
    __syncthreads();
    // Zero-filled rows/columns past the edges make the full BK loop safe on partial tiles.
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&As[k * A_LD + (thread_row + g * ROW_THREADS) * 4]);
        a[4 * g + 0] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[k * BN + (thread_col + g * COL_THREADS) * 4]);
        b[4 * g + 0] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next tile overwrites As/Bs
  }

  // Row 4*g+q of the thread's TM is block row (thread_row + g*ROW_THREADS)*4 + q; same for columns.
#pragma unroll
  for (int gi = 0; gi < TM / 4; ++gi) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = (thread_row + gi * ROW_THREADS) * 4 + q;
      if (r < rows_left) {
#pragma unroll
        for (int gj = 0; gj < TN / 4; ++gj) {
          const int c = (thread_col + gj * COL_THREADS) * 4;
          const float* v = acc[4 * gi + q] + 4 * gj;
          cmt_store_c4(C, ldc, m0 + r, n0 + c, cols_left - c, make_float4(v[0], v[1], v[2], v[3]),
                       alpha, beta);
        }
      }
    }
  }
}
