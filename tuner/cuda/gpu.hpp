// RAII wrappers for device memory, streams and events.
#pragma once

#include <cstddef>
#include <cuda_runtime_api.h>
#include <utility>

namespace cmt {

/// Untyped device allocation; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept : m_ptr(std::exchange(other.m_ptr, nullptr)), m_bytes(other.m_bytes) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return m_ptr; }
  float* floats() const { return static_cast<float*>(m_ptr); }
  size_t bytes() const { return m_bytes; }

 private:
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return m_stream; }
  void synchronize() const;

 private:
  cudaStream_t m_stream = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(Event&& other) noexcept : m_event(std::exchange(other.m_event, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  cudaEvent_t get() const { return m_event; }
  void record(cudaStream_t stream);
  /// Milliseconds from start to this event (both completed).
  float elapsed_since(const Event& start) const;

 private:
  cudaEvent_t m_event = nullptr;
};

/// True for errors that leave the CUDA context unusable (illegal address, trap, launch failure...).
bool is_sticky_error(cudaError_t status);

/// cudaStreamSynchronize with a watchdog: cudaErrorTimeout when the stream's work is still running
/// after timeout_ms (0: wait as long as it takes). A kernel cannot be stopped, so after a timeout
/// the context is unusable until the process exits.
cudaError_t synchronize_within(cudaStream_t stream, double timeout_ms);

}  // namespace cmt
