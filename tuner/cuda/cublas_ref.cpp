#include "cuda/cublas_ref.hpp"

#include "cuda/check.hpp"

namespace cmt {

CublasHandle::CublasHandle(cudaStream_t stream) {
  CMT_CUBLAS_CHECK(cublasCreate(&m_handle));
  CMT_CUBLAS_CHECK(cublasSetStream(m_handle, stream));
  // Default math is plain FP32 for cublasSgemm: TF32 tensor ops only run when asked for. (Pedantic
  // mode would also be FP32 but may pick slower kernels, which would flatter the candidates.)
  CMT_CUBLAS_CHECK(cublasSetMathMode(m_handle, CUBLAS_DEFAULT_MATH));
}

CublasHandle::~CublasHandle() {
  if (m_handle) cublasDestroy(m_handle);
}

cublasStatus_t CublasHandle::sgemm_status(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                          int ldb, float beta, float* c, int ldc) const {
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands and M/N.
  return cublasSgemm(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc);
}

void CublasHandle::sgemm(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                         float beta, float* c, int ldc) const {
  CMT_CUBLAS_CHECK(sgemm_status(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

}  // namespace cmt
