#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/stats.hpp"
#include "measure/tolerance.hpp"

namespace cmt {
namespace {

TEST(Tolerance, ScalesWithKAndMagnitudes) {
  const float t1 = gemm_tolerance(100, 1.0f, 0.0f, 10.0f, 0.0f);
  EXPECT_NEAR(gemm_tolerance(200, 1.0f, 0.0f, 10.0f, 0.0f) / t1, 204.0 / 104.0, 1e-5);
  EXPECT_NEAR(gemm_tolerance(100, 1.0f, 0.0f, 20.0f, 0.0f) / t1, 2.0, 1e-5);
  EXPECT_NEAR(gemm_tolerance(100, -2.0f, 0.0f, 10.0f, 0.0f) / t1, 2.0, 1e-5);
  // beta's term counts only through |beta| |C0|.
  EXPECT_GT(gemm_tolerance(100, 1.0f, 0.5f, 10.0f, 4.0f), t1);
  EXPECT_FLOAT_EQ(gemm_tolerance(100, 1.0f, 0.0f, 10.0f, 1e6f), t1);
}

TEST(Tolerance, NanAndInfFail) {
  EXPECT_TRUE(std::isinf(gemm_error_ratio(NAN, 1.0f, 1.0f)));
  EXPECT_TRUE(std::isinf(gemm_error_ratio(1.0f, NAN, 1.0f)));
  EXPECT_TRUE(std::isinf(gemm_error_ratio(INFINITY, 1.0f, 1.0f)));
  EXPECT_FLOAT_EQ(gemm_error_ratio(1.5f, 1.0f, 1.0f), 0.5f);
}

// Two float summation orders of the same dot product stay within the tolerance, while a dropped
// term is far outside it.
TEST(Tolerance, AcceptsReorderingRejectsDroppedTerm) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int k : {1, 7, 65, 300, 1027}) {
    std::vector<float> a(k), b(k);
    for (int i = 0; i < k; ++i) a[i] = dist(rng), b[i] = dist(rng);
    float forward = 0, backward = 0, blocked = 0, dropped = 0;
    double abs_ab = 0;
    for (int i = 0; i < k; ++i) forward = std::fma(a[i], b[i], forward), abs_ab += std::fabs(a[i] * b[i]);
    for (int i = k - 1; i >= 0; --i) backward = std::fma(a[i], b[i], backward);
    for (int s = 0; s < 8; ++s) {  // eight interleaved partial sums, as sliced-K kernels do
      float part = 0;
      for (int i = s; i < k; i += 8) part = std::fma(a[i], b[i], part);
      blocked += part;
    }
    int largest = 0;
    for (int i = 0; i < k; ++i)
      if (std::fabs(a[i] * b[i]) > std::fabs(a[largest] * b[largest])) largest = i;
    for (int i = 0; i < k; ++i)
      if (i != largest) dropped = std::fma(a[i], b[i], dropped);
    const float tol = gemm_tolerance(k, 1.0f, 0.0f, static_cast<float>(abs_ab), 0.0f);
    EXPECT_LT(gemm_error_ratio(backward, forward, tol), 1.0f) << "k=" << k;
    EXPECT_LT(gemm_error_ratio(blocked, forward, tol), 1.0f) << "k=" << k;
    EXPECT_GT(gemm_error_ratio(dropped, forward, tol), 1.0f) << "k=" << k;
  }
}

// FP64: the same bound with u = 2^-53.
TEST(Tolerance, Fp64UsesItsOwnUnitRoundoff) {
  const double t64 = gemm_tolerance(100, 1.0, 0.0, 10.0, 0.0);
  const float t32 = gemm_tolerance(100, 1.0f, 0.0f, 10.0f, 0.0f);
  EXPECT_NEAR(t64, 2.0 * 104 * 10.0 * std::ldexp(1.0, -53), 1e-30);
  EXPECT_NEAR(t32 / t64, std::ldexp(1.0, 29), std::ldexp(1.0, 29) * 1e-6);  // 2^-24 / 2^-53
  EXPECT_NEAR(gemm_tolerance(200, 1.0, 0.0, 10.0, 0.0) / t64, 204.0 / 104.0, 1e-12);
  EXPECT_NEAR(gemm_tolerance(100, 1.0, 0.5, 10.0, 4.0) - t64, 2.0 * 104 * 2.0 * std::ldexp(1.0, -53), 1e-28);
  EXPECT_GT(gemm_tolerance(1, 0.0, 0.0, 0.0, 0.0), 0.0) << "the floor keeps exact zeros comparable";
  EXPECT_TRUE(std::isinf(gemm_error_ratio(std::nan(""), 1.0, 1.0)));
  EXPECT_TRUE(std::isinf(gemm_error_ratio(1.0, -HUGE_VAL, 1.0)));
  EXPECT_DOUBLE_EQ(gemm_error_ratio(1.5, 1.0, 1.0), 0.5);
}

// Double summation orders stay within the FP64 bound; a dropped term, and the error of summing in
// FP32, are far outside it.
TEST(Tolerance, Fp64AcceptsReorderingRejectsDroppedTermAndFp32Sums) {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int k : {1, 7, 65, 300, 1027, 4099}) {
    std::vector<double> a(k), b(k);
    for (int i = 0; i < k; ++i) a[i] = dist(rng), b[i] = dist(rng);
    double forward = 0, backward = 0, blocked = 0, dropped = 0, abs_ab = 0;
    float single = 0;
    for (int i = 0; i < k; ++i) forward = std::fma(a[i], b[i], forward), abs_ab += std::fabs(a[i] * b[i]);
    for (int i = k - 1; i >= 0; --i) backward = std::fma(a[i], b[i], backward);
    for (int s = 0; s < 8; ++s) {
      double part = 0;
      for (int i = s; i < k; i += 8) part = std::fma(a[i], b[i], part);
      blocked += part;
    }
    int largest = 0;
    for (int i = 0; i < k; ++i)
      if (std::fabs(a[i] * b[i]) > std::fabs(a[largest] * b[largest])) largest = i;
    for (int i = 0; i < k; ++i)
      if (i != largest) dropped = std::fma(a[i], b[i], dropped);
    for (int i = 0; i < k; ++i) single = std::fma(static_cast<float>(a[i]), static_cast<float>(b[i]), single);
    const double tol = gemm_tolerance(k, 1.0, 0.0, abs_ab, 0.0);
    EXPECT_LT(gemm_error_ratio(backward, forward, tol), 1.0) << "k=" << k;
    EXPECT_LT(gemm_error_ratio(blocked, forward, tol), 1.0) << "k=" << k;
    EXPECT_GT(gemm_error_ratio(dropped, forward, tol), 1.0) << "k=" << k;
    EXPECT_GT(gemm_error_ratio(static_cast<double>(single), forward, tol), 1.0) << "k=" << k << ": an FP32 sum passed as FP64";
  }
}

// INT32 is exact: any difference fails.
TEST(Tolerance, Int32IsExact) {
  EXPECT_EQ(gemm_error_ratio_exact(7, 7), 0.0f);
  EXPECT_TRUE(std::isinf(gemm_error_ratio_exact(7, 8)));
  EXPECT_TRUE(std::isinf(gemm_error_ratio_exact(-2147483647 - 1, 2147483647)));
}

TEST(Stats, MedianMinCv) {
  const SampleStats s = summarize({3.0f, 1.0f, 2.0f, 10.0f});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_EQ(s.count, 4);
  EXPECT_NEAR(s.cv, std::sqrt(((1 - 4.) * (1 - 4.) + (2 - 4.) * (2 - 4.) + (3 - 4.) * (3 - 4.) + 36) / 3) / 4, 1e-9);
  EXPECT_EQ(summarize({}).count, 0);
  EXPECT_DOUBLE_EQ(summarize({5.0f}).median, 5.0);
  EXPECT_DOUBLE_EQ(gflops(2.0e9, 1.0), 2000.0);
}

}  // namespace
}  // namespace cmt
