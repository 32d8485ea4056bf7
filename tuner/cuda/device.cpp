#include "cuda/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda/check.hpp"

namespace cmt {

namespace {

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                     b[15]);
}

int attribute(cudaDeviceAttr attr, int index) {
  int value = 0;
  CMT_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, index));
  return value;
}

}  // namespace

int device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice) {
    cudaGetLastError();
    return 0;
  }
  if (status == cudaErrorInsufficientDriver || status == cudaErrorStubLibrary) {
    cudaGetLastError();
    throw NoDeviceError(fmt::format("no CUDA driver found ({}); GPU commands need an NVIDIA driver for CUDA 13",
                                    cudaGetErrorString(status)));
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw NoDeviceError(fmt::format("no usable CUDA device: cudaGetDeviceCount failed: {}", cudaGetErrorString(status)));
  }
  return count;
}

DeviceInfo query_device(int index) {
  const int count = device_count();
  if (index < 0 || index >= count)
    throw NoDeviceError(fmt::format("device {} not found ({} device{} present)", index, count, count == 1 ? "" : "s"));
  cudaDeviceProp prop{};
  CMT_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo d;
  d.index = index;
  d.visible_devices = count;
  d.name = prop.name;
  d.uuid = format_uuid(prop.uuid);
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.clock_khz = attribute(cudaDevAttrClockRate, index);
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, index);
  d.memory_bus_bits = prop.memoryBusWidth;
  d.memory_bytes = prop.totalGlobalMem;
  d.l2_bytes = prop.l2CacheSize;
  d.smem_per_block = static_cast<int>(prop.sharedMemPerBlock);
  d.smem_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
  d.regs_per_sm = prop.regsPerMultiprocessor;
  d.regs_per_block = prop.regsPerBlock;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  d.warp_size = prop.warpSize;
  CMT_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  CMT_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

std::vector<DeviceInfo> query_devices() {
  std::vector<DeviceInfo> out;
  const int count = device_count();
  for (int i = 0; i < count; ++i) out.push_back(query_device(i));
  return out;
}

DeviceInfo select_device(int index) {
  DeviceInfo d = query_device(index);
  CMT_CUDA_CHECK(cudaSetDevice(index));
  size_t free_bytes = 0, total = 0;
  CMT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  d.free_memory_bytes = free_bytes;
  return d;
}

}  // namespace cmt
