// What `cm-tune devices` prints of a GPU (cli/device_report.hpp), byte for byte, without one: the
// properties of an H100 as its driver reports them, and the lines a real H100 printed with them.
// (test_cli_json_fields.cpp pins the --json's fields; test_cli_app.cpp the document without a GPU.)
#include <gtest/gtest.h>

#include "cli/device_report.hpp"
#include "output/printers.hpp"

namespace cmt::cli {
namespace {

DeviceInfo h100() {
  DeviceInfo d;
  d.index = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-de08cb08-1e2f-d86d-5d20-fae65f88b405";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.memory_bytes = 85028126720;
  d.l2_bytes = 52428800;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = 232448;
  d.smem_per_sm = 233472;
  d.regs_per_sm = 65536;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.warp_size = 32;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  return d;
}

TEST(DeviceReport, TextIsWhatAnH100Printed) {
  EXPECT_EQ(device_text(h100()),
            "device 0: NVIDIA H100 80GB HBM3\n"
            "  uuid                 GPU-de08cb08-1e2f-d86d-5d20-fae65f88b405\n"
            "  compute capability   9.0 (sm_90)\n"
            "  SMs                  132 at 1980 MHz\n"
            "  memory               79.2 GiB, 3352 GB/s theoretical (5120-bit at 2619 MHz)\n"
            "  L2 cache             51200 KiB\n"
            "  shared memory        48 KiB per block (227 KiB opt-in), 228 KiB per SM\n"
            "  registers per SM     65536\n"
            "  threads              1024 per block, 2048 per SM, warp size 32\n"
            "  FP32 peak            66.9 TFLOP/s (128 lanes/SM x 132 SMs x 2 x 1980 MHz)\n"
            "  FP64 peak            33.5 TFLOP/s (64 lanes/SM); tensor cores 66.9 TFLOP/s (128 FMA/SM/clock)\n"
            "  INT32 peak           33.5 TOP/s (64 multiply-add lanes/SM)\n"
            "  driver / runtime     13.0 / 13.0\n");
}

TEST(DeviceReport, AnArchitectureWithoutFp64TensorCoresSaysNothingOfThem) {
  DeviceInfo d = h100();
  d.cc_minor = 9;   // sm_89: Ada
  const std::string text = device_text(d);
  EXPECT_NE(text.find("\n  FP64 peak            "), std::string::npos) << text;
  EXPECT_EQ(text.find("tensor cores"), std::string::npos) << text;
}

TEST(DeviceReport, JsonHasARecordPerDevice) {
  DeviceInfo second = h100();
  second.index = 1;
  const auto records = output::table_records(device_table({h100(), second}));
  ASSERT_EQ(records.size(), 2u);
  const output::Record& r = records[0].as_record();
  EXPECT_EQ(r.at("arch").as_text(), "sm_90");
  EXPECT_EQ(r.at("compute_capability").as_text(), "9.0");
  EXPECT_EQ(r.at("clock_mhz").as_real(), 1980.0);
  EXPECT_EQ(r.at("memory_bytes").as_int(), 85028126720);
  EXPECT_EQ(r.at("l2_bytes").as_int(), 52428800);
  EXPECT_EQ(records[1].as_record().at("index").as_int(), 1);
}

}  // namespace
}  // namespace cmt::cli
