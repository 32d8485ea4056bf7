// One multistage build for the diagnostic programs in scripts/ (block_times.cu, aligned_copy_probe.cu):
// the kernel instance and its launch shape, with threads and dynamic shared memory computed as
// templates/multistage.toml does. Include after multistage.cuh.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    const cudaError_t status = (call);                                                 \
    if (status != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,     \
                   cudaGetErrorString(status));                                        \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

using MultistageKernel = void (*)(int, int, int, float, const float*, int, const float*, int, float, float*, int);

struct MultistageBuild {
  MultistageKernel kernel;
  int bm, bn, threads, dynamic_smem;

  dim3 grid(int m, int n) const { return dim3((n + bn - 1) / bn, (m + bm - 1) / bm); }
  void launch(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c,
              int ldc) const {
    kernel<<<grid(m, n), threads, dynamic_smem>>>(m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  }
};

// The parameters in the kernel's template order: BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD,
// SPLITK, SWIZZLE, THIN_EDGE, THIN_WORKERS, INLINE_THIN_ROWS, A_CHUNK.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES, int VEC, int PAD,
          int SPLITK, int SWIZZLE, int THIN_EDGE, int THIN_WORKERS, int INLINE_THIN_ROWS, int A_CHUNK>
MultistageBuild make_multistage_build() {
  const int threads = (BM / WM) * (BN / WN) * 32 * SPLITK;
  const int ring = STAGES * (BK * (BM + PAD) + BK * BN);
  const int reduce = (SPLITK - 1) * BM * BN + INLINE_THIN_ROWS * 4 * threads;
  const int workers = THIN_WORKERS > 0 ? CMT_THIN_SMEM_FLOATS : 0;
  const MultistageBuild build{cmt_sgemm_multistage<BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, VEC, PAD, SPLITK,
                                                   SWIZZLE, THIN_EDGE, THIN_WORKERS, INLINE_THIN_ROWS, A_CHUNK>,
                              BM, BN, threads, std::max(std::max(ring, reduce), workers) * 4};
  CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(build.kernel),
                             cudaFuncAttributeMaxDynamicSharedMemorySize, build.dynamic_smem));
  return build;
}
