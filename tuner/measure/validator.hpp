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
  /// with guard regions before, between and after the matrices of C and NaN in every padding
  /// column, and compares every matrix of the batch with cuBLAS. A reason names the first bad
  /// element in memory order ("C[12][7]", batched "C[b=3][12][7]") and the first changed guard.
  /// kernel_timeout_ms > 0 bounds each launch (status cudaErrorTimeout).
  ValidationResult validate(const GemmLauncher& launch, const ProblemWorkspace& workspace, double kernel_timeout_ms);

 private:
  cudaStream_t m_stream;
  DeviceBuffer m_stats;
};

/// Where offset `offset` (floats from the start of the allocation) of a C buffer laid out as
/// `layout` lies, for messages: "C[12][7]", "C[b=3][12][7]" (a padding column says so), "5 floats
/// before C", "3 floats after C[b=2] (the gap before C[b=3])", "7 floats after the last C".
std::string describe_c_offset(const CWorkLayout& layout, int64_t offset);

}  // namespace cmt
