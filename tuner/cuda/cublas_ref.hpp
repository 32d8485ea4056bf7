// cuBLAS SGEMM in FP32 (TF32 off) on row-major matrices: the reference and the baseline.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace cmt {

class CublasHandle {
 public:
  /// Creates a handle in default (FP32, no TF32) math mode bound to stream.
  explicit CublasHandle(cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return m_handle; }

  /// Row-major C = alpha*A*B + beta*C. Throws InfraError on failure.
  void sgemm(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
             int ldc) const;
  /// Same, returning the status instead of throwing (for timing loops).
  cublasStatus_t sgemm_status(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                              float beta, float* c, int ldc) const;

 private:
  cublasHandle_t m_handle = nullptr;
};

}  // namespace cmt
