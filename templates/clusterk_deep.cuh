// Deep cluster split-K SGEMM (sm_90+): the clusterk kernel with 8 or 16 blocks per cluster on
// small tiles, for problems whose output has too few tiles to fill the GPU while K is long (a
// 256 x 256 output over K = 65536; 32 rows of C over K = 4096). A cluster of 16 is a non-portable
// size: the tuner and the header set cudaFuncAttributeNonPortableClusterSizeAllowed before the
// launch. Partials are added in rank order through distributed shared memory, so results are
// deterministic and no workspace is needed. Rasterization is launch order and thin edges are off:
// such problems have few tiles. Layouts and strided batches as in clusterk.
#pragma once

#include "clusterk.cuh"

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD, int SPLITK,
          int CLUSTER_K, int TRANS_A, int TRANS_B>
__global__ void __launch_bounds__(CmtMultistageShape<BM, BN, BK, WM, WN, STAGES, PAD, SPLITK>::THREADS)
    CMT_CLUSTER_Z(CLUSTER_K)
        cmt_sgemm_clusterk_deep(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                                long long stride_a, long long stride_b, long long stride_c) {
  cmt_clusterk_body<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK, CLUSTER_K, 1, 0, TRANS_A, TRANS_B>(
      M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stride_a, stride_b, stride_c);
}
