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

double DeviceInfo::memory_bandwidth_gbs() const {
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
}

}  // namespace cmt
