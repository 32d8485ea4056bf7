// Peak rates `devices` prints, checked against the datasheet figures of two GPUs: the per-SM
// throughputs by architecture times SMs and clock must give NVIDIA's published peaks.
#include <gtest/gtest.h>

#include "core/device_info.hpp"

namespace cmt {
namespace {

DeviceInfo gpu(int major, int minor, int sms, int clock_mhz) {
  DeviceInfo d;
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = sms;
  d.clock_khz = clock_mhz * 1000;
  return d;
}

TEST(DevicePeaks, H100SxmMatchesItsDatasheet) {
  const DeviceInfo h100 = gpu(9, 0, 132, 1980);
  EXPECT_NEAR(h100.fp32_peak_tflops(), 66.9, 0.5);
  EXPECT_NEAR(h100.fp64_peak_tflops(), 33.5, 0.5);         // "FP64 34 TFLOPS"
  EXPECT_NEAR(h100.fp64_tensor_peak_tflops(), 66.9, 0.5);  // "FP64 Tensor Core 67 TFLOPS"
  EXPECT_NEAR(h100.int32_peak_tops(), 33.5, 0.5);          // 64 IMAD per SM per clock
}

TEST(DevicePeaks, A100MatchesItsDatasheetAndConsumerPartsHaveNoFp64TensorRate) {
  const DeviceInfo a100 = gpu(8, 0, 108, 1410);
  EXPECT_NEAR(a100.fp32_peak_tflops(), 19.5, 0.1);
  EXPECT_NEAR(a100.fp64_peak_tflops(), 9.7, 0.1);
  EXPECT_NEAR(a100.fp64_tensor_peak_tflops(), 19.5, 0.1);
  const DeviceInfo ga102 = gpu(8, 6, 84, 1695);  // RTX 3090: FP64 at 1/64 of FP32
  EXPECT_EQ(ga102.fp64_tensor_fma_per_sm(), 0);
  EXPECT_NEAR(ga102.fp32_peak_tflops() / ga102.fp64_peak_tflops(), 64.0, 1e-9);
}

}  // namespace
}  // namespace cmt
