// Checked calls into CUDA, NVRTC and cuBLAS: a failure throws InfraError with the call text,
// file:line and the library's own message.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

namespace cmt::detail {

[[noreturn]] void throw_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_nvrtc(nvrtcResult status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace cmt::detail

#define CMT_CUDA_CHECK(call)                                                            \
  do {                                                                                  \
    const cudaError_t cmt_status_ = (call);                                             \
    if (cmt_status_ != cudaSuccess) ::cmt::detail::throw_cuda(cmt_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CMT_NVRTC_CHECK(call)                                                           \
  do {                                                                                  \
    const nvrtcResult cmt_status_ = (call);                                             \
    if (cmt_status_ != NVRTC_SUCCESS) ::cmt::detail::throw_nvrtc(cmt_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CMT_CUBLAS_CHECK(call)                                                          \
  do {                                                                                  \
    const cublasStatus_t cmt_status_ = (call);                                          \
    if (cmt_status_ != CUBLAS_STATUS_SUCCESS) ::cmt::detail::throw_cublas(cmt_status_, #call, __FILE__, __LINE__); \
  } while (0)
