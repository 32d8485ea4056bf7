// The TF32 split of the tf32x3 class (templates/cmt_tf32.cuh), on the host: the rounding, the edge
// values, and the staged sum of the three products that tf32x3_mma.cuh computes on the tensor cores,
// modelled in FP32 and held to the FP32 SIMT error bound that validation uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "../templates/cmt_tf32.cuh"
#include "measure/tolerance.hpp"

namespace cmt {
namespace {

bool tf32_representable(unsigned bits) { return (bits & 0x1fffu) == 0u; }

double value(unsigned bits) { return static_cast<double>(cmt_f32_of_bits(bits)); }

TEST(Tf32Split, RoundsToNearestWithTiesAwayFromZero) {
  // At 1, a TF32 unit is 2^-10: 1 + 2^-11 is a tie and goes up, just below it goes down.
  EXPECT_EQ(value(cmt_tf32_rna(1.0f + 0x1p-11f)), 1.0 + 0x1p-10);
  EXPECT_EQ(value(cmt_tf32_rna(-(1.0f + 0x1p-11f))), -(1.0 + 0x1p-10));
  EXPECT_EQ(value(cmt_tf32_rna(1.0f + 0x1p-11f - 0x1p-23f)), 1.0);
  EXPECT_EQ(value(cmt_tf32_rna(1.0f + 0x1p-10f + 0x1p-11f)), 1.0 + 0x1p-9);  // ties away, not to even
  EXPECT_EQ(value(cmt_tf32_rna(0.0f)), 0.0);
  EXPECT_TRUE(std::signbit(value(cmt_tf32_rna(-0.0f))));
  // The largest FP32 rounds past the largest TF32: infinite, as cvt.rna does.
  EXPECT_TRUE(std::isinf(value(cmt_tf32_rna(std::numeric_limits<float>::max()))));
}

TEST(Tf32Split, BigPlusSmallIsXWithin2ToTheMinus22) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f + 0x1p-23f, 3.1415927f, 1e-38f, -1e-38f,
                           1e-40f /* subnormal */, std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(), 3.4e38f};
  for (int e = -120; e <= 120; e += 7)
    for (int i = 0; i < 200; ++i) xs.push_back(std::ldexp(mantissa(rng), e));
  for (const float x : xs) {
    unsigned big = 0, small = 0;
    cmt_tf32_split(x, big, small);
    SCOPED_TRACE(testing::Message() << "x = " << x);
    EXPECT_TRUE(tf32_representable(big));
    EXPECT_TRUE(tf32_representable(small));
    ASSERT_TRUE(cmt_f32_bits_finite(big) && cmt_f32_bits_finite(small));
    const double err = std::fabs(static_cast<double>(x) - (value(big) + value(small)));
    // Relative 2^-22, or half the spacing of TF32 subnormals (2^-136) where the parts are subnormal:
    // 3xTF32 keeps 11 of a subnormal's bits in each part, not all of them.
    EXPECT_LE(err, std::max(std::fabs(static_cast<double>(x)) * 0x1p-22, 0x1p-137));
  }
}

TEST(Tf32Split, InfinityAndNaNHaveNoSmallPart) {
  for (const float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
    unsigned big = 0, small = 1;
    cmt_tf32_split(x, big, small);
    EXPECT_EQ(small, 0u);
    if (std::isnan(x))
      EXPECT_TRUE(std::isnan(value(big)));
    else
      EXPECT_EQ(value(big), static_cast<double>(x));
  }
}

/// One element of C as tf32x3_mma computes it, modelled in FP32: per k tile of `bk`, the products
/// small-by-big, big-by-small (the big parts as cmt_tf32_correction_big gives them) and big-by-big (each exact in FP32: TF32 products have 22 bits) summed
/// in a cleared FP32 accumulator, which is then added to the element's. three = false keeps only
/// big-by-big: one TF32 pass.
float modelled_dot(const std::vector<float>& a, const std::vector<float>& b, int bk, bool three) {
  float acc = 0.0f;
  for (size_t k0 = 0; k0 < a.size(); k0 += static_cast<size_t>(bk)) {
    float part = 0.0f;
    for (size_t k = k0; k < std::min(a.size(), k0 + static_cast<size_t>(bk)); ++k) {
      unsigned ab, as, bb, bs;
      cmt_tf32_split(a[k], ab, as);
      cmt_tf32_split(b[k], bb, bs);
      if (three) {
        part += cmt_f32_of_bits(as) * cmt_f32_of_bits(cmt_tf32_correction_big(bb));
        part += cmt_f32_of_bits(cmt_tf32_correction_big(ab)) * cmt_f32_of_bits(bs);
      }
      part += cmt_f32_of_bits(ab) * cmt_f32_of_bits(bb);
    }
    acc += part;
  }
  return acc;
}

// The staged sum of three products meets the K-scaled FP32 bound of validation against the exact
// (FP64) dot product at every K; one TF32 pass does not, which is why the FP64 check rejects it.
TEST(Tf32Split, StagedSumOfThreeProductsMeetsTheFp32BoundAndOnePassDoesNot) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const int k : {16, 64, 256, 1024, 4096}) {
    double worst3 = 0, worst1 = 0;
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> a(static_cast<size_t>(k)), b(static_cast<size_t>(k));
      for (auto& x : a) x = uniform(rng);
      for (auto& x : b) x = uniform(rng);
      double exact = 0, abs_ab = 0;
      for (int i = 0; i < k; ++i) {
        exact += static_cast<double>(a[i]) * b[i];
        abs_ab += std::fabs(static_cast<double>(a[i]) * b[i]);
      }
      // The tolerance of validation (measure/tolerance.hpp) with alpha = 1, beta = 0.
      const double tol = gemm_tolerance<double, float>(k, 1.0, 0.0, abs_ab, 0.0);
      worst3 = std::max(worst3, std::fabs(modelled_dot(a, b, 32, true) - exact) / tol);
      worst1 = std::max(worst1, std::fabs(modelled_dot(a, b, 32, false) - exact) / tol);
    }
    SCOPED_TRACE(testing::Message() << "K = " << k);
    EXPECT_LT(worst3, 1.0);
    if (k <= 256) EXPECT_GT(worst1, 1.0) << "one TF32 pass within the FP32 bound";
  }
}

/// What a value is, as far as special values go.
enum class Kind { finite, plus_inf, minus_inf, nan };
Kind kind_of(double x) {
  if (std::isnan(x)) return Kind::nan;
  if (std::isinf(x)) return x > 0 ? Kind::plus_inf : Kind::minus_inf;
  return Kind::finite;
}

// Infinities and NaNs in A or B reach C as they do in FP32 SIMT (one FMA chain): Inf times a finite
// non-zero is Inf of the product's sign, Inf times 0, Inf - Inf and NaN are NaN, also where the other
// operand's small part is exactly 0 (0.5, 3, -2: TF32 values) or its big part is infinite, which
// the corrections would otherwise turn into NaN.
TEST(Tf32Split, InfinityAndNaNReachCAsInFp32Simt) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> specials = {inf, -inf, nan};
  const std::vector<float> partners = {0.5f, 3.0f, -2.0f, 0.0f, 1.0f / 3.0f, -0.7f, inf, -inf, nan};
  int compared = 0;
  for (const float s : specials)
    for (const float p : partners)
      for (const bool special_in_a : {true, false}) {
        // k = 4: the special and its partner at k = 1, ordinary values around them.
        std::vector<float> a = {0.25f, 1.0f, -0.375f, 2.0f}, b = {1.5f, 1.0f, 0.125f, -1.0f};
        (special_in_a ? a : b)[1] = s;
        (special_in_a ? b : a)[1] = p;
        float simt = 0.0f;
        for (size_t k = 0; k < a.size(); ++k) simt = std::fma(a[k], b[k], simt);
        const float three = modelled_dot(a, b, 32, true);
        EXPECT_EQ(kind_of(three), kind_of(simt)) << "special " << s << " in " << (special_in_a ? "A" : "B")
                                                 << " times " << p << ": 3xTF32 " << three << ", SIMT " << simt;
        ++compared;
      }
  EXPECT_EQ(compared, 54);
}

}  // namespace
}  // namespace cmt

namespace cmt {
namespace {

// The wgmma family's split without special cases (cmt_tf32_split_finite) gives cmt_tf32_split's
// parts for every magnitude below k_tf32_fast_split_limit, subnormals and zeros of both signs
// included, and the limit is the first magnitude whose big part rounds to infinity: a tile holding
// one at or above it is split again with cmt_tf32_split (tf32x3_wgmma.cuh).
TEST(Tf32FastSplit, MatchesTheFullSplitBelowTheLimitAndTheLimitIsWhereRoundingOverflows) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<uint32_t> patterns = {0u, 0x80000000u, 1u, 0x80000001u, 0x007fffffu, 0x00800000u, 0x3f800000u,
                                    0x3f801000u, 0x3f800fffu, 0xbf801000u, k_tf32_fast_split_limit - 1,
                                    0x80000000u | (k_tf32_fast_split_limit - 1)};
  for (int i = 0; i < 200000; ++i) patterns.push_back(bits(rng));
  int checked = 0;
  for (const uint32_t u : patterns) {
    const float x = cmt_f32_of_bits(u);
    if (cmt_tf32_magnitude(x) >= k_tf32_fast_split_limit) continue;
    unsigned big, small, fast_big, fast_small;
    cmt_tf32_split(x, big, small);
    cmt_tf32_split_finite(x, fast_big, fast_small);
    ASSERT_EQ(fast_big, big) << std::hex << u;
    ASSERT_EQ(fast_small, small) << std::hex << u;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
  // At the limit rna overflows: the full split keeps a finite big part, the fast one would not.
  EXPECT_FALSE(cmt_f32_bits_finite(cmt_tf32_rna(cmt_f32_of_bits(k_tf32_fast_split_limit))));
  EXPECT_TRUE(cmt_f32_bits_finite(cmt_tf32_rna(cmt_f32_of_bits(k_tf32_fast_split_limit - 1))));
  // Infinities and NaNs lie above it.
  EXPECT_GE(cmt_tf32_magnitude(std::numeric_limits<float>::infinity()), k_tf32_fast_split_limit);
  EXPECT_GE(cmt_tf32_magnitude(-std::numeric_limits<float>::quiet_NaN()), k_tf32_fast_split_limit);
}

}  // namespace
}  // namespace cmt
