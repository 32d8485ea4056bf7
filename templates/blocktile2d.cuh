// 2D blocktiling: a block computes a BM x BN tile of C with (BM/TM)*(BN/TN) threads; each thread
// computes a TM x TN sub-grid. Per k it loads TM values of A and TN values of B into registers and
// does TM*TN FMAs (an outer product), so shared-memory traffic per FMA is 1/TN + 1/TM.
//
// A thread's rows are ROW_THREADS apart and its columns COL_THREADS apart (strided, not a
// contiguous TM x TN patch): neighbouring threads then read neighbouring B words (no bank
// conflicts with scalar loads) and write neighbouring C columns (coalesced stores).
//
// Every layout (TRANS_A, TRANS_B), strided batches and every element type (DTYPE: float, double,
// int with wrapping arithmetic; cmt_elem.cuh): the generic default kernel of an exported header, so
// it has no input requirements (scalar loads: each element is aligned to its own size). A transposed operand is read along its stored rows
// (coalesced) and stored into shared memory in the orientation the loop below reads (As[m][k],
// Bs[k][n]); with TRANS_B the rows of Bs are padded by 4 words, so the stores of lanes on
// consecutive k fall in different banks.
#pragma once
#include "cmt_common.cuh"
#include "cmt_elem.cuh"

template <int BM, int BN, int BK, int TM, int TN, int TRANS_A, int TRANS_B, int DTYPE>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
cmt_sgemm_blocktile2d(int M, int N, int K, typename CmtElem<DTYPE>::T alpha,
                      const typename CmtElem<DTYPE>::T* __restrict__ A, int lda,
                      const typename CmtElem<DTYPE>::T* __restrict__ B, int ldb,
                      typename CmtElem<DTYPE>::T beta, typename CmtElem<DTYPE>::T* __restrict__ C,
                      int ldc, long long stride_a, long long stride_b, long long stride_c) {
  typedef typename CmtElem<DTYPE>::T T;
  static_assert(BM % TM == 0 && BN % TN == 0, "BM and BN must be multiples of TM and TN");
  constexpr int ROW_THREADS = BM / TM;
  constexpr int COL_THREADS = BN / TN;
  constexpr int THREADS = ROW_THREADS * COL_THREADS;
  static_assert(THREADS <= 1024, "threads (BM/TM)*(BN/TN) must be <= 1024");
  // One pad word per A row: the rows a warp reads at the same k then fall in different banks.
  constexpr int A_LD = BK + 1;
  constexpr int B_LD = TRANS_B ? BN + 4 : BN;
  __shared__ T As[BM * A_LD];  // As[m][k]
  __shared__ T Bs[BK * B_LD];  // Bs[k][n]

  cmt_batch_offsets<1>(A, B, C, stride_a, stride_b, stride_c);
  const int tid = threadIdx.x;
  const int thread_row = tid / COL_THREADS;
  const int thread_col = tid % COL_THREADS;
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int rows_left = M - m0;
  const int cols_left = N - n0;
  // op(A)(m0, 0) and op(B)(0, n0); a k step moves along k of the stored rows or across them.
  const T* a_tile = A + cmt_offset_op<TRANS_A>(m0, 0, lda);
  const T* b_tile = B + cmt_offset_op<TRANS_B>(0, n0, ldb);

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  for (int k0 = 0; k0 < K; k0 += BK) {
    cmt_load_tile_elem<BM, BK, THREADS, A_LD, TRANS_A>(As, a_tile + cmt_offset_op<TRANS_A>(0, k0, lda), lda,
                                                       rows_left, K - k0, tid);
    cmt_load_tile_elem<BK, BN, THREADS, B_LD, TRANS_B>(Bs, b_tile + cmt_offset_op<TRANS_B>(k0, 0, ldb), ldb,
                                                       K - k0, cols_left, tid);
    __syncthreads();
    // Zero-filled rows/columns past the edges make the full BK loop safe on partial tiles.
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      T a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[(thread_row + i * ROW_THREADS) * A_LD + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k * B_LD + thread_col + j * COL_THREADS];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = cmt_mad(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next tile overwrites As/Bs
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = thread_row + i * ROW_THREADS;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = thread_col + j * COL_THREADS;
      if (r < rows_left && c < cols_left) cmt_store_c(C, ldc, m0 + r, n0 + c, acc[i][j], alpha, beta);
    }
  }
}
