// What cm-tune knows of a GPU: identity, limits and peak rates. Plain data, filled by
// cuda/device.hpp on a machine with a driver, or by tests and the store without one.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>

namespace cmt {

/// Shared memory a block may use without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize):
/// 48 KiB on every CUDA GPU. A kernel that needs more asks for it before its launch.
inline constexpr int k_default_smem_per_block = 48 * 1024;

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;              // "GPU-xxxxxxxx-..."
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;             // boost clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  size_t memory_bytes = 0;
  size_t free_memory_bytes = 0;
  int l2_bytes = 0;
  int smem_per_block = 0;        // default limit
  int smem_per_block_optin = 0;  // after cudaFuncSetAttribute
  int smem_per_sm = 0;
  int regs_per_sm = 0;
  int regs_per_block = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int warp_size = 0;
  int driver_version = 0;
  int runtime_version = 0;
  int visible_devices = 0;       // CUDA devices the process that filled this could see (0: unknown)

  /// "sm_90"
  std::string arch() const;
  /// FP32 lanes per SM for this architecture (128 on Hopper and Ampere GA10x, 64 on GA100...).
  int fp32_lanes_per_sm() const;
  /// lanes x SMs x 2 (FMA) x clock, in TFLOP/s.
  double fp32_peak_tflops() const;
  /// FP64 FMA lanes per SM of the CUDA cores (64 on Hopper, 32 on GA100 and Volta, 2 on GA10x...).
  int fp64_lanes_per_sm() const;
  double fp64_peak_tflops() const;
  /// FP64 FMAs per SM per clock of the tensor cores (DMMA: 64 on GA100, 128 on Hopper), 0 where
  /// the architecture has none at full rate.
  int fp64_tensor_fma_per_sm() const;
  double fp64_tensor_peak_tflops() const;
  /// TF32 FMAs per SM per clock of the tensor cores, dense (512 on GA100, 1024 on Hopper), 0
  /// before Ampere.
  int tf32_tensor_fma_per_sm() const;
  double tf32_tensor_peak_tflops() const;
  /// 32-bit integer multiply-adds (IMAD) per SM per clock (64 from Volta on).
  int int32_mad_lanes_per_sm() const;
  /// lanes x SMs x 2 (multiply and add) x clock, in TOP/s.
  double int32_peak_tops() const;
  /// Theoretical DRAM bandwidth: 2 (DDR) x memory clock x bus width, in GB/s.
  double memory_bandwidth_gbs() const;
};

/// A GPU's model, what the exported header tells device tables apart by: its name, compute
/// capability and SM count. GPUs of one model share a table (export), stand for one another in the
/// database (bench, query, precision) and share a tune's work (--device all). For DeviceInfo and for
/// the store's DeviceRecord, which carry the same four fields.
template <class Device>
std::tuple<std::string, int, int, int> model_identity(const Device& d) {
  return {d.name, d.cc_major, d.cc_minor, d.sm_count};
}

}  // namespace cmt
