#include "cli/device_report.hpp"

#include <fmt/format.h>

#include "output/printers.hpp"

namespace cmt::cli {

output::Table device_table(const std::vector<DeviceInfo>& devices) {
  std::vector<output::Column> columns;
  for (const char* name :
       {"index", "name", "uuid", "compute_capability", "arch", "sm_count", "clock_mhz", "memory_bytes", "memory_clock_mhz",
        "memory_bus_bits", "memory_bandwidth_gbs", "l2_bytes", "smem_per_block_bytes", "smem_per_block_optin_bytes",
        "smem_per_sm_bytes", "registers_per_sm", "max_threads_per_block", "max_threads_per_sm", "warp_size",
        "fp32_lanes_per_sm", "fp32_peak_tflops", "fp64_lanes_per_sm", "fp64_peak_tflops", "fp64_tensor_fma_per_sm",
        "fp64_tensor_peak_tflops", "int32_mad_lanes_per_sm", "int32_peak_tops", "driver_version", "runtime_version"})
    columns.emplace_back(name);
  output::Table table(std::move(columns));
  for (const DeviceInfo& d : devices)
    table.add_row()
        .set("index", d.index)
        .set("name", d.name)
        .set("uuid", d.uuid)
        .set("compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor))
        .set("arch", d.arch())
        .set("sm_count", d.sm_count)
        .set("clock_mhz", d.clock_khz / 1000.0)
        .set("memory_bytes", d.memory_bytes)
        .set("memory_clock_mhz", d.memory_clock_khz / 1000.0)
        .set("memory_bus_bits", d.memory_bus_bits)
        .set("memory_bandwidth_gbs", d.memory_bandwidth_gbs())
        .set("l2_bytes", d.l2_bytes)
        .set("smem_per_block_bytes", d.smem_per_block)
        .set("smem_per_block_optin_bytes", d.smem_per_block_optin)
        .set("smem_per_sm_bytes", d.smem_per_sm)
        .set("registers_per_sm", d.regs_per_sm)
        .set("max_threads_per_block", d.max_threads_per_block)
        .set("max_threads_per_sm", d.max_threads_per_sm)
        .set("warp_size", d.warp_size)
        .set("fp32_lanes_per_sm", d.fp32_lanes_per_sm())
        .set("fp32_peak_tflops", d.fp32_peak_tflops())
        .set("fp64_lanes_per_sm", d.fp64_lanes_per_sm())
        .set("fp64_peak_tflops", d.fp64_peak_tflops())
        .set("fp64_tensor_fma_per_sm", d.fp64_tensor_fma_per_sm())
        .set("fp64_tensor_peak_tflops", d.fp64_tensor_peak_tflops())
        .set("int32_mad_lanes_per_sm", d.int32_mad_lanes_per_sm())
        .set("int32_peak_tops", d.int32_peak_tops())
        .set("driver_version", d.driver_version)
        .set("runtime_version", d.runtime_version);
  return table;
}

std::string device_text(const DeviceInfo& d) {
  const auto kib = [](int64_t b) { return fmt::format("{} KiB", b / 1024); };
  output::Table table({output::Column("property").width(20), output::Column("value")});
  const auto line = [&](const char* property, std::string value) {
    table.add_row().set("property", property).set("value", std::move(value));
  };
  line("uuid", d.uuid);
  line("compute capability", fmt::format("{}.{} ({})", d.cc_major, d.cc_minor, d.arch()));
  line("SMs", fmt::format("{} at {:.0f} MHz", d.sm_count, d.clock_khz / 1000.0));
  line("memory", fmt::format("{:.1f} GiB, {:.0f} GB/s theoretical ({}-bit at {:.0f} MHz)", d.memory_bytes / 1073741824.0,
                             d.memory_bandwidth_gbs(), d.memory_bus_bits, d.memory_clock_khz / 1000.0));
  line("L2 cache", kib(d.l2_bytes));
  line("shared memory",
       fmt::format("{} per block ({} opt-in), {} per SM", kib(d.smem_per_block), kib(d.smem_per_block_optin), kib(d.smem_per_sm)));
  line("registers per SM", fmt::format("{}", d.regs_per_sm));
  line("threads", fmt::format("{} per block, {} per SM, warp size {}", d.max_threads_per_block, d.max_threads_per_sm,
                              d.warp_size));
  line("FP32 peak", fmt::format("{:.1f} TFLOP/s ({} lanes/SM x {} SMs x 2 x {:.0f} MHz)", d.fp32_peak_tflops(),
                                d.fp32_lanes_per_sm(), d.sm_count, d.clock_khz / 1000.0));
  std::string fp64 = fmt::format("{:.1f} TFLOP/s ({} lanes/SM)", d.fp64_peak_tflops(), d.fp64_lanes_per_sm());
  if (d.fp64_tensor_fma_per_sm() > 0)
    fp64 += fmt::format("; tensor cores {:.1f} TFLOP/s ({} FMA/SM/clock)", d.fp64_tensor_peak_tflops(), d.fp64_tensor_fma_per_sm());
  line("FP64 peak", fp64);
  line("INT32 peak", fmt::format("{:.1f} TOP/s ({} multiply-add lanes/SM)", d.int32_peak_tops(), d.int32_mad_lanes_per_sm()));
  line("driver / runtime", fmt::format("{}.{} / {}.{}", d.driver_version / 1000, (d.driver_version % 1000) / 10,
                                       d.runtime_version / 1000, (d.runtime_version % 1000) / 10));
  return fmt::format("device {}: {}\n", d.index, d.name) + output::render_text(table, {"  ", false});
}

}  // namespace cmt::cli
