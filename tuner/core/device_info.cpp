#include "core/device_info.hpp"

#include <fmt/format.h>

namespace cmt {

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

int DeviceInfo::fp32_lanes_per_sm() const {
  // FP32 lanes per SM by architecture, from NVIDIA's compute capability tables.
  switch (cc_major) {
    case 6: return cc_minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return cc_minor == 0 ? 64 : 128;
    default: return 128;  // 9.x, 10.x, 11.x, 12.x and anything newer
  }
}

double DeviceInfo::fp32_peak_tflops() const {
  return static_cast<double>(fp32_lanes_per_sm()) * sm_count * 2.0 * clock_khz * 1e3 / 1e12;
}

// The FP64 and INT32 rates below are the per-SM, per-clock throughputs of NVIDIA's compute
// capability tables (the CUDA programming guide's arithmetic instruction throughput) and the
// Volta/Ampere/Hopper architecture whitepapers; tensor-core FP64 is DMMA (mma.sync m8n8k4).
int DeviceInfo::fp64_lanes_per_sm() const {
  switch (cc_major) {
    case 6: return cc_minor == 0 ? 32 : 4;
    case 7: return cc_minor == 0 ? 32 : 2;
    case 8: return cc_minor == 0 ? 32 : 2;
    case 9: return 64;
    case 10: return 64;
    default: return 2;  // consumer parts (12.x) and anything unknown: a low rate
  }
}

double DeviceInfo::fp64_peak_tflops() const {
  return static_cast<double>(fp64_lanes_per_sm()) * sm_count * 2.0 * clock_khz * 1e3 / 1e12;
}

int DeviceInfo::fp64_tensor_fma_per_sm() const {
  if (cc_major == 8 && cc_minor == 0) return 64;
  if (cc_major == 9 && cc_minor == 0) return 128;
  if (cc_major == 10 && cc_minor == 0) return 64;
  return 0;
}

double DeviceInfo::fp64_tensor_peak_tflops() const {
  return static_cast<double>(fp64_tensor_fma_per_sm()) * sm_count * 2.0 * clock_khz * 1e3 / 1e12;
}

int DeviceInfo::tf32_tensor_fma_per_sm() const {
  if (cc_major == 9 && cc_minor == 0) return 1024;
  if (cc_major == 8 && cc_minor == 0) return 512;
  if (cc_major >= 8) return 256;  // GA10x, Ada and later consumer parts: half of GA100's per SM
  return 0;
}

double DeviceInfo::tf32_tensor_peak_tflops() const {
  return static_cast<double>(tf32_tensor_fma_per_sm()) * sm_count * 2.0 * clock_khz * 1e3 / 1e12;
}

int DeviceInfo::int32_mad_lanes_per_sm() const { return cc_major >= 7 ? 64 : 32; }

double DeviceInfo::int32_peak_tops() const {
  return static_cast<double>(int32_mad_lanes_per_sm()) * sm_count * 2.0 * clock_khz * 1e3 / 1e12;
}

double DeviceInfo::memory_bandwidth_gbs() const {
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
}

}  // namespace cmt
