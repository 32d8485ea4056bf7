// 1D blocktiling: a block computes a BM x BN tile of C with (BM/TM)*BN threads; each thread
// computes TM elements of one column. Per BK step it reads its B value once and reuses it for
// TM results, so shared-memory traffic per FMA drops roughly TM-fold versus smem_tiled.
#pragma once
#include "cmt_common.cuh"

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__((BM / TM) * BN)
cmt_sgemm_blocktile1d(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                      int ldc) {
  static_assert(BM % TM == 0, "BM must be a multiple of TM");
  constexpr int ROW_THREADS = BM / TM;  // threads along M; a thread's rows are ROW_THREADS apart
  constexpr int THREADS = ROW_THREADS * BN;
  static_assert(THREADS <= 1024, "threads (BM/TM)*BN must be <= 1024");
  // As is unpadded [m][k]: a thread's reads of one A row along k are contiguous and aligned, so
  // the compiler can fetch them 128 bits at a time.
  __shared__ __align__(16) float As[BM * BK];  // As[m][k]
  __shared__ __align__(16) float Bs[BK * BN];  // Bs[k][n]

  const int tid = threadIdx.x;
  const int thread_row = tid / BN;
  const int thread_col = tid % BN;  // consecutive threads, consecutive columns
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int rows_left = M - m0;
  const int cols_left = N - n0;
  const float* a_tile = A + cmt_offset(m0, 0, lda);
  const float* b_tile = B + n0;

  float acc[TM];
#pragma unroll
  for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    cmt_load_tile<BM, BK, THREADS, BK>(As, a_tile + k0, lda, rows_left, K - k0, tid);
    cmt_load_tile<BK, BN, THREADS, BN>(Bs, b_tile + cmt_offset(k0, 0, ldb), ldb, K - k0, cols_left,
                                       tid);
    __syncthreads();
    // Zero-filled rows/columns past the edges make the full BK loop safe on partial tiles.
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + thread_col];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[(thread_row + i * ROW_THREADS) * BK + k], b, acc[i]);
    }
    __syncthreads();  // the next tile overwrites As/Bs
  }

  if (thread_col < cols_left) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int r = thread_row + i * ROW_THREADS;
      if (r < rows_left) cmt_store_c(C, ldc, m0 + r, n0 + thread_col, acc[i], alpha, beta);
    }
  }
}
