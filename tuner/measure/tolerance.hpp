// The elementwise acceptance test of a candidate's result against the reference.
//
// A floating-point dot product of length K is within gamma_K * (|A||B|)_ij of the exact value, with
// gamma_K ~ K*u (u = 2^-24 in FP32, 2^-53 in FP64). Candidate and reference may each be that far off
// in opposite directions, and alpha/beta scaling adds a few roundings, so the bound used is
//   tol_ij = 2 (K + 4) u (|alpha| (|A||B|)_ij + |beta| |C0_ij|) + tiny.
// It never rejects a correct summation order, and catches a dropped or doubled term once the
// term exceeds that bound (always on the small ragged sizes the tests use).
//
// INT32 has no tolerance: products and sums wrap modulo 2^32, every summation order gives the same
// result, and a candidate must equal the reference exactly (gemm_error_ratio_exact).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define CMT_HOST_DEVICE __host__ __device__
#else
#define CMT_HOST_DEVICE
#endif

namespace cmt {

constexpr float k_fp32_unit_roundoff = 5.9604645e-08f;          // 2^-24
constexpr double k_fp64_unit_roundoff = 1.1102230246251565e-16;  // 2^-53
constexpr float k_tolerance_floor = 1e-30f;                      // keeps exact-zero results comparable
constexpr double k_tolerance_floor_f64 = 1e-300;

/// The unit roundoff and the floor of a floating-point element type.
template <class T>
struct ToleranceOf;
template <>
struct ToleranceOf<float> {
  static constexpr float unit_roundoff = k_fp32_unit_roundoff;
  static constexpr float floor = k_tolerance_floor;
};
template <>
struct ToleranceOf<double> {
  static constexpr double unit_roundoff = k_fp64_unit_roundoff;
  static constexpr double floor = k_tolerance_floor_f64;
};

/// Reference::fp64 (tf32x3): how far, in units of 2^-24 of an element's scale (|alpha| (|A||B|)_ij +
/// |beta| |C0_ij|), a candidate's largest error against FP64 may pass the FP32 SIMT reference's on
/// the same data. It is the split's own error: x = big + small + e with |e| <= 2^-22 |x| (the small
/// part is rounded to TF32 too), and the dropped small-by-small product is at most 2^-22 |a||b|, so
/// 3xTF32 represents each product within 3 * 2^-22 = 12 units of |a||b|, whatever K is. Where K is
/// small that dominates (1x77x33: 3.6 units against SGEMM's 1.1, measured); where K is long the
/// accumulation does, and a kernel that truncates its sums on the tensor core (6-22 units at K = 300
/// to 1000) or multiplies once in TF32 (hundreds of units) fails.
constexpr double k_fp64_reference_slack_units = 12.0;

/// An error ratio of the FP32 tolerance at depth k as units of 2^-24 of the element's scale (the
/// tolerance is 2 (k + 4) such units, plus a floor that only exact zeros meet).
inline double fp32_error_units(double ratio, int64_t k) { return ratio * 2.0 * static_cast<double>(k + 4); }

/// Allowed |candidate - reference| for one element of type T (float or double), computed in R (T, or
/// double for FP32 elements checked against an FP64 reference, Reference::fp64: gemm_tolerance<double,
/// float>).
template <class R, class T = R>
CMT_HOST_DEVICE inline R gemm_tolerance(int k, R alpha, R beta, R abs_ab, R abs_c0) {
  using std::fabs;
  const R scale = fabs(alpha) * abs_ab + fabs(beta) * abs_c0;
  return R(2) * static_cast<R>(k + 4) * static_cast<R>(ToleranceOf<T>::unit_roundoff) * scale +
         static_cast<R>(ToleranceOf<T>::floor);
}

/// |value - reference| / tolerance; +inf when value or reference is NaN or infinite.
template <class T>
CMT_HOST_DEVICE inline T gemm_error_ratio(T value, T reference, T tolerance) {
  using std::isfinite;  // std:: on the host, the CUDA builtin on the device
  if (!isfinite(value) || !isfinite(reference)) return T(INFINITY);
  using std::fabs;
  return fabs(value - reference) / tolerance;
}

/// INT32: 0 when value equals the reference, +inf otherwise.
CMT_HOST_DEVICE inline float gemm_error_ratio_exact(int32_t value, int32_t reference) {
  return value == reference ? 0.0f : INFINITY;
}

}  // namespace cmt
