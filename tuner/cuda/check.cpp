#include "cuda/check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace cmt::detail {

void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  throw InfraError("CUDA", call, fmt::format("{} ({})", cudaGetErrorString(status), cudaGetErrorName(status)),
                   file, line);
}

void throw_nvrtc(nvrtcResult status, const char* call, const char* file, int line) {
  throw InfraError("NVRTC", call, nvrtcGetErrorString(status), file, line);
}

void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  throw InfraError("cuBLAS", call, fmt::format("{} ({})", cublasGetStatusString(status), cublasGetStatusName(status)),
                   file, line);
}

}  // namespace cmt::detail
