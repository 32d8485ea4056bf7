// Validation of one GEMM implementation against the cuBLAS references of a workspace.
#pragma once

#include <cuda_runtime_api.h>
#include <optional>
#include <string>

#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/gpu/workspace.hpp"

namespace cmt {

struct ValidationResult {
  bool passed = false;
  cudaError_t status = cudaSuccess;   // launch or execution failure, if any
  double max_abs_error = 0;
  double max_error_ratio = 0;         // largest |err| / tolerance (NaN/Inf count as +inf)
  /// Reference::fp64: the FP32 SIMT reference's largest |err| / tolerance on the same data, the
  /// bar max_error_ratio must not pass.
  std::optional<double> simt_error_ratio;
  std::string reason;                 // one line when not passed
};

class Validator {
 public:
  explicit Validator(cudaStream_t stream);

  /// Runs every validation case of the problem's type (validation_cases: beta != 0; beta == 0 with
  /// the poison in C, NaN for the floats; for INT32 also inputs that overflow) in the validation
  /// layout, with guard regions before, between and after the matrices of C and the padding
  /// pattern in every padding column, and compares every matrix of the batch with the reference
  /// (cuBLAS within the tolerance; INT32 exactly). A reason names the first bad element in memory
  /// order ("C[12][7] = 0.5, expected 0.25", batched "C[b=3][12][7]"; INT32 "C[12][7] is 5,
  /// expected 7") and the first changed guard. kernel_timeout_ms > 0 bounds each launch (status
  /// cudaErrorTimeout).
  ValidationResult validate(const GemmLauncher& launch, const ProblemWorkspace& workspace, double kernel_timeout_ms);

 private:
  cudaStream_t m_stream;
  DeviceBuffer m_stats;
};

/// Where offset `offset` (elements from the start of the allocation) of a C buffer laid out as
/// `layout` lies, for messages: "C[12][7]", "C[b=3][12][7]" (a padding column says so), "5 floats
/// before C", "3 floats after C[b=2] (the gap before C[b=3])", "7 floats after the last C" (doubles
/// and ints for those types).
std::string describe_c_offset(const CWorkLayout& layout, int64_t offset);

}  // namespace cmt
