#include "cuda/cublas_ref.hpp"

#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"
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
  // tf32x3 is stored as f32: its baseline is SGEMM with TF32 off.
  return visit_storage_type(g.dtype, [&](auto zero) -> cublasStatus_t {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, int32_t>) {
      return CUBLAS_STATUS_NOT_SUPPORTED;  // no INT32 x INT32 -> INT32 GEMM in cuBLAS
    } else {
      const T alpha = g.alpha.as<T>(), beta = g.beta.as<T>();
      const T* a = g.a_as<T>();
      const T* b = g.b_as<T>();
      T* c = g.c_as<T>();
      const auto run = [&](auto gemm, auto strided_batched) {
        if (g.batch > 1)
          return strided_batched(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, g.stride_b, a, g.lda,
                                 g.stride_a, &beta, c, g.ldc, g.stride_c, g.batch);
        return gemm(m_handle, op_b, op_a, g.n, g.m, g.k, &alpha, b, g.ldb, a, g.lda, &beta, c, g.ldc);
      };
      if constexpr (std::is_same_v<T, double>)
        return run(cublasDgemm, cublasDgemmStridedBatched);
      else
        return run(cublasSgemm, cublasSgemmStridedBatched);
    }
  });
}


const char* cublas_routine(DType dtype, bool batched) {
  if (!type_info(dtype).cublas_baseline) return "none";
  return visit_storage_type(dtype, [batched](auto zero) {
    if (std::is_same_v<decltype(zero), double>) return batched ? "cublasDgemmStridedBatched" : "cublasDgemm";
    return batched ? "cublasSgemmStridedBatched" : "cublasSgemm";
  });
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
