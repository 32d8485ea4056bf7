#include "cuda/gpu.hpp"

#include <chrono>
#include <thread>

#include "cuda/check.hpp"

namespace cmt {

DeviceBuffer::DeviceBuffer(size_t bytes) : m_bytes(bytes) {
  if (bytes > 0) CMT_CUDA_CHECK(cudaMalloc(&m_ptr, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (m_ptr) cudaFree(m_ptr);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (m_ptr) cudaFree(m_ptr);
    m_ptr = std::exchange(other.m_ptr, nullptr);
    m_bytes = other.m_bytes;
  }
  return *this;
}

Stream::Stream() { CMT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking)); }

Stream::~Stream() {
  if (m_stream) cudaStreamDestroy(m_stream);
}

void Stream::synchronize() const { CMT_CUDA_CHECK(cudaStreamSynchronize(m_stream)); }

Event::Event() { CMT_CUDA_CHECK(cudaEventCreate(&m_event)); }

Event::~Event() {
  if (m_event) cudaEventDestroy(m_event);
}

void Event::record(cudaStream_t stream) { CMT_CUDA_CHECK(cudaEventRecord(m_event, stream)); }

float Event::elapsed_since(const Event& start) const {
  float ms = 0.0f;
  CMT_CUDA_CHECK(cudaEventElapsedTime(&ms, start.m_event, m_event));
  return ms;
}

bool is_sticky_error(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

cudaError_t synchronize_within(cudaStream_t stream, double timeout_ms) {
  if (timeout_ms <= 0) return cudaStreamSynchronize(stream);
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double, std::milli>(timeout_ms));
  // Poll the way a spinning cudaStreamSynchronize does, then back off: the kernels measured take
  // microseconds to milliseconds, and events (not this loop) time them.
  for (int polls = 0;; ++polls) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status != cudaErrorNotReady) return status;
    if (clock::now() > deadline) return cudaErrorTimeout;
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace cmt
