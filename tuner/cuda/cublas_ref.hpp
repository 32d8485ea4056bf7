// cuBLAS SGEMM in FP32 (TF32 off) on row-major matrices: the reference and the baseline.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda/kernel_module.hpp"

namespace cmt {

class CublasHandle {
 public:
  /// Creates a handle in default (FP32, no TF32) math mode bound to stream.
  explicit CublasHandle(cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return m_handle; }

  /// Row-major C = alpha*A*B + beta*C (no transposes, one matrix). Throws InfraError on failure.
  void sgemm(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
             int ldc) const;
  /// Same, returning the status instead of throwing (for timing loops).
  cublasStatus_t sgemm_status(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                              float beta, float* c, int ldc) const;

  /// The whole GemmArgs: row-major C = alpha*op(A)*op(B) + beta*C with args.trans_a/trans_b, and
  /// args.batch matrices args.stride_x elements apart (a stride of 0 for A or B: the same matrix for
  /// every product). cublasSgemmStridedBatched when batch > 1, cublasSgemm otherwise. Returns the
  /// status (for timing loops and launchers).
  cublasStatus_t gemm_status(const GemmArgs& args) const;
  /// Same, throwing InfraError on failure.
  void gemm(const GemmArgs& args) const;

 private:
  cublasHandle_t m_handle = nullptr;
};

}  // namespace cmt
