// Validation of one GEMM implementation against the cuBLAS references of a workspace.
#pragma once

#include <cuda_runtime_api.h>
#include <optional>
#include <string>
#include <vector>

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

/// An implementation's largest errors against a workspace's references, every validation case run,
/// with no verdict: for reports of accuracy (`precision`); Validator::validate judges.
struct ErrorMeasurement {
  cudaError_t status = cudaSuccess;    // a launch or wait that failed (the cases after it did not run)
  std::string reason;                  // one line when status is not cudaSuccess
  /// Per validation case, in order: the largest |err| / tolerance (NaN or Inf: +inf). Against an
  /// FP64 reference, fp32_error_units (measure/tolerance.hpp) turns one into units of 2^-24 of the
  /// element's scale.
  std::vector<double> max_error_ratio;
  uint32_t bad_elements = 0;           // over the cases: elements at or past the tolerance
  uint32_t outside_writes = 0;         // over the cases: guard and padding elements changed
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

  /// Runs every validation case as validate() does and measures the errors, judging nothing.
  ErrorMeasurement measure_errors(const GemmLauncher& launch, const ProblemWorkspace& workspace,
                                  double kernel_timeout_ms);

 private:
  /// Case `index` of the workspace's type: C reset (guards, and C0 or the poison), the launch, the
  /// wait (bounded by kernel_timeout_ms > 0), and the comparison with the reference into *stats.
  /// Returns the launch's or the wait's status; *stats is filled only on cudaSuccess.
  cudaError_t run_case(const GemmLauncher& launch, const ProblemWorkspace& workspace, size_t index,
                       double kernel_timeout_ms, CompareStats* stats);

  cudaStream_t m_stream;
  DeviceBuffer m_stats;
};

/// Where offset `offset` (elements from the start of the allocation) of a C buffer laid out as
/// `layout` lies, for messages: "C[12][7]", "C[b=3][12][7]" (a padding column says so), "5 floats
/// before C", "3 floats after C[b=2] (the gap before C[b=3])", "7 floats after the last C" (doubles
/// and ints for those types).
std::string describe_c_offset(const CWorkLayout& layout, int64_t offset);

}  // namespace cmt
