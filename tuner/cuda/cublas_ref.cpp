#include "cuda/cublas_ref.hpp"

#include "cuda/check.hpp"

namespace cmt {

CublasHandle::CublasHandle(cudaStream_t stream, CublasMath math) {
  CMT_CUBLAS_CHECK(cublasCreate(&m_handle));
  try {
    CMT_CUBLAS_CHECK(cublasSetStream(m_handle, stream));
    // Default math is plain FP32 for cublasSgemm: TF32 tensor ops only run when asked for. (Pedantic
    // mode would also be FP32 but may pick slower kernels, which would flatter the candidates.)
    // cublasDgemm may use the FP64 tensor cores (DMMA), whose products and sums are IEEE FP64.
    CMT_CUBLAS_CHECK(
        cublasSetMathMode(m_handle, math == CublasMath::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  } catch (...) {
    cublasDestroy(m_handle);
    throw;
  }
}

CublasHandle::~CublasHandle() {
  if (m_handle) cublasDestroy(m_handle);
}

cublasStatus_t CublasHandle::gemm_status(const GemmArgs& g) const {
  // cuBLAS is column-major. A row-major matrix X (r x c, leading dimension ld) is, read column-major
  // with the same ld, X^T (c x r). So the row-major product C = op(A) op(B) (M x N) is the
  // column-major product C^T = op(B)^T op(A)^T (N x M, ldc): B's storage goes first, A's second,
  // and M and N swap.
  //
  // The op flags carry over unchanged. Untransposed B is stored K x N row-major, which column-major
  // is B^T = op(B)^T (N x K): CUBLAS_OP_N with ld = ldb (>= N, as cuBLAS wants for the first
  // operand's rows). Transposed B (op(B) = B_s^T) is stored N x K row-major, which column-major is
  // B_s^T (K x N), while C^T needs op(B)^T = B_s: transpose that view, CUBLAS_OP_T with ld = ldb
  // (>= K). A (the second operand, op(A)^T is K x M) follows the same way: stored M x K row-major
  // is A^T column-major, CUBLAS_OP_N; stored K x M (trans_a) is A column-major, so CUBLAS_OP_T.
  // The batch strides are those of the storage and do not change either.
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (!g.typed_consistently()) return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (g.dtype) {
    case DType::f32:
    case DType::tf32x3: {  // its baseline: SGEMM with TF32 off
      const float alpha = g.alpha.f32(), beta = g.beta.f32();
      const auto* a = g.a_as<float>();
      const auto* b = g.b_as<float>();
      auto* c = g.c_as<float>();
      if (g.batch > 1)
        return cublasSgemmStridedBatched(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, g.stride_b, a, g.lda,
                                         g.stride_a, &beta, c, g.ldc, g.stride_c, g.batch);
      return cublasSgemm(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, a, g.lda, &beta, c, g.ldc);
    }
    case DType::f64: {
      const double alpha = g.alpha.f64(), beta = g.beta.f64();
      const auto* a = g.a_as<double>();
      const auto* b = g.b_as<double>();
      auto* c = g.c_as<double>();
      if (g.batch > 1)
        return cublasDgemmStridedBatched(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, g.stride_b, a, g.lda,
                                         g.stride_a, &beta, c, g.ldc, g.stride_c, g.batch);
      return cublasDgemm(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, a, g.lda, &beta, c, g.ldc);
    }
    case DType::i32:
      break;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;  // no INT32 x INT32 -> INT32 GEMM in cuBLAS
}


const char* cublas_routine(DType dtype, bool batched) {
  switch (dtype) {
    case DType::f32:
    case DType::tf32x3: return batched ? "cublasSgemmStridedBatched" : "cublasSgemm";
    case DType::f64: return batched ? "cublasDgemmStridedBatched" : "cublasDgemm";
    case DType::i32: break;
  }
  return "none";
}

void CublasHandle::gemm(const GemmArgs& args) const { CMT_CUBLAS_CHECK(gemm_status(args)); }

cublasStatus_t CublasHandle::sgemm_status(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                          int ldb, float beta, float* c, int ldc) const {
  return gemm_status(GemmArgs{m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
}

void CublasHandle::sgemm(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                         float beta, float* c, int ldc) const {
  CMT_CUBLAS_CHECK(sgemm_status(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

}  // namespace cmt
