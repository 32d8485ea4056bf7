// cuBLAS GEMM on row-major matrices, the reference and the baseline: SGEMM in FP32 (TF32 off) and
// DGEMM in FP64. cuBLAS has no INT32 x INT32 -> INT32 GEMM; INT32 has its own exact reference
// (measure/gpu/validation_kernels.hpp) and no baseline.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda/kernel_module.hpp"

namespace cmt {

/// The math mode of a handle's FP32 GEMMs.
enum class CublasMath {
  fp32,  // CUBLAS_DEFAULT_MATH: IEEE FP32 on the CUDA cores (TF32 off): the reference and the baseline
  tf32,  // CUBLAS_TF32_TENSOR_OP_MATH: SGEMM may round its inputs to TF32 for the tensor cores (one
         // pass); what `precision` compares with, never a reference
};

class CublasHandle {
 public:
  /// Creates a handle bound to stream, in default (FP32, no TF32) math mode unless `math` says tf32.
  explicit CublasHandle(cudaStream_t stream, CublasMath math = CublasMath::fp32);
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
  /// every product). cublas{S,D}gemmStridedBatched when batch > 1, cublas{S,D}gemm otherwise, by
  /// args.dtype; CUBLAS_STATUS_NOT_SUPPORTED for i32 (and for alpha or beta of another type).
  /// Returns the status (for timing loops and launchers).
  cublasStatus_t gemm_status(const GemmArgs& args) const;
  /// Same, throwing InfraError on failure.
  void gemm(const GemmArgs& args) const;

 private:
  cublasHandle_t m_handle = nullptr;
};

/// The cuBLAS routine gemm_status calls for a problem: "cublasSgemm", "cublasDgemmStridedBatched"...
/// ("none" for i32).
const char* cublas_routine(DType dtype, bool batched);

}  // namespace cmt
