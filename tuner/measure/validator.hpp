// Validation of one GEMM implementation against the cuBLAS references of a workspace.
#pragma once

#include <cuda_runtime_api.h>
#include <string>

#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/workspace.hpp"

namespace cmt {

struct ValidationResult {
  bool passed = false;
  cudaError_t status = cudaSuccess;   // launch or execution failure, if any
  double max_abs_error = 0;
  double max_error_ratio = 0;         // largest |err| / tolerance (NaN/Inf count as +inf)
  std::string reason;                 // one line when not passed
};

class Validator {
 public:
  explicit Validator(cudaStream_t stream);

  /// Runs every validation case (beta != 0; beta == 0 with NaN in C) in the validation layout,
  /// with guard regions around C and NaN in every padding column, and compares with cuBLAS.
  /// kernel_timeout_ms > 0 bounds each launch (status cudaErrorTimeout).
  ValidationResult validate(const GemmLauncher& launch, const ProblemWorkspace& workspace, double kernel_timeout_ms);

 private:
  cudaStream_t m_stream;
  DeviceBuffer m_stats;
};

}  // namespace cmt
