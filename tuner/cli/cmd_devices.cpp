// cm-tune devices [--json]: what the GPUs are and what they can do.
#include <fmt/format.h>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"

namespace cmt::cli {

namespace {

nlohmann::json device_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"uuid", d.uuid},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"arch", d.arch()},
          {"sm_count", d.sm_count},
          {"clock_mhz", d.clock_khz / 1000.0},
          {"memory_bytes", d.memory_bytes},
          {"memory_clock_mhz", d.memory_clock_khz / 1000.0},
          {"memory_bus_bits", d.memory_bus_bits},
          {"memory_bandwidth_gbs", d.memory_bandwidth_gbs()},
          {"l2_bytes", d.l2_bytes},
          {"smem_per_block_bytes", d.smem_per_block},
          {"smem_per_block_optin_bytes", d.smem_per_block_optin},
          {"smem_per_sm_bytes", d.smem_per_sm},
          {"registers_per_sm", d.regs_per_sm},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"warp_size", d.warp_size},
          {"fp32_lanes_per_sm", d.fp32_lanes_per_sm()},
          {"fp32_peak_tflops", d.fp32_peak_tflops()},
          {"fp64_lanes_per_sm", d.fp64_lanes_per_sm()},
          {"fp64_peak_tflops", d.fp64_peak_tflops()},
          {"fp64_tensor_fma_per_sm", d.fp64_tensor_fma_per_sm()},
          {"fp64_tensor_peak_tflops", d.fp64_tensor_peak_tflops()},
          {"int32_mad_lanes_per_sm", d.int32_mad_lanes_per_sm()},
          {"int32_peak_tops", d.int32_peak_tops()},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version}};
}

void print_device(const DeviceInfo& d) {
  const auto kib = [](int64_t b) { return fmt::format("{} KiB", b / 1024); };
  fmt::print("device {}: {}\n", d.index, d.name);
  fmt::print("  uuid                 {}\n", d.uuid);
  fmt::print("  compute capability   {}.{} ({})\n", d.cc_major, d.cc_minor, d.arch());
  fmt::print("  SMs                  {} at {:.0f} MHz\n", d.sm_count, d.clock_khz / 1000.0);
  fmt::print("  memory               {:.1f} GiB, {:.0f} GB/s theoretical ({}-bit at {:.0f} MHz)\n",
             d.memory_bytes / 1073741824.0, d.memory_bandwidth_gbs(), d.memory_bus_bits, d.memory_clock_khz / 1000.0);
  fmt::print("  L2 cache             {}\n", kib(d.l2_bytes));
  fmt::print("  shared memory        {} per block ({} opt-in), {} per SM\n", kib(d.smem_per_block),
             kib(d.smem_per_block_optin), kib(d.smem_per_sm));
  fmt::print("  registers per SM     {}\n", d.regs_per_sm);
  fmt::print("  threads              {} per block, {} per SM, warp size {}\n", d.max_threads_per_block,
             d.max_threads_per_sm, d.warp_size);
  fmt::print("  FP32 peak            {:.1f} TFLOP/s ({} lanes/SM x {} SMs x 2 x {:.0f} MHz)\n", d.fp32_peak_tflops(),
             d.fp32_lanes_per_sm(), d.sm_count, d.clock_khz / 1000.0);
  fmt::print("  FP64 peak            {:.1f} TFLOP/s ({} lanes/SM)", d.fp64_peak_tflops(), d.fp64_lanes_per_sm());
  if (d.fp64_tensor_fma_per_sm() > 0)
    fmt::print("; tensor cores {:.1f} TFLOP/s ({} FMA/SM/clock)", d.fp64_tensor_peak_tflops(),
               d.fp64_tensor_fma_per_sm());
  fmt::print("\n  INT32 peak           {:.1f} TOP/s ({} multiply-add lanes/SM)\n", d.int32_peak_tops(),
             d.int32_mad_lanes_per_sm());
  fmt::print("  driver / runtime     {}.{} / {}.{}\n", d.driver_version / 1000, (d.driver_version % 1000) / 10,
             d.runtime_version / 1000, (d.runtime_version % 1000) / 10);
}

}  // namespace

void add_devices_command(CLI::App& app, GlobalOptions& /*global*/, Action& action) {
  auto* sub = app.add_subcommand("devices", "List the CUDA devices and their properties");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output: {\"devices\": [...]}, plus \"error\" when there is no usable GPU");
  sub->callback([&action, json] {
    action = [json] {
      std::vector<DeviceInfo> devices;
      std::string error;
      try {
        devices = query_devices();
        if (devices.empty()) error = "no CUDA device present";
      } catch (const NoDeviceError& e) {
        if (!*json) throw;
        error = e.what();
      }
      if (*json) {
        // {"devices": [...]}; without a usable GPU also "error", and the same exit code and line as without --json.
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& d : devices) arr.push_back(device_json(d));
        nlohmann::json doc = {{"devices", arr}};
        if (!error.empty()) doc["error"] = error;
        print_json(doc);
      }
      if (!error.empty()) throw NoDeviceError(error);
      if (!*json)
        for (const auto& d : devices) print_device(d);
      return 0;
    };
  });
}

}  // namespace cmt::cli
