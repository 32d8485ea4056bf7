// The elementwise acceptance test of a candidate's result against the cuBLAS reference.
//
// An FP32 dot product of length K is within gamma_K * (|A||B|)_ij of the exact value, with
// gamma_K ~ K*u (u = 2^-24). Candidate and reference may each be that far off in opposite
// directions, and alpha/beta scaling adds a few roundings, so the bound used is
//   tol_ij = 2 (K + 4) u (|alpha| (|A||B|)_ij + |beta| |C0_ij|) + tiny.
// It never rejects a correct summation order, and catches a dropped or doubled term once the
// term exceeds that bound (always on the small ragged sizes the tests use).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define CMT_HOST_DEVICE __host__ __device__
#else
#define CMT_HOST_DEVICE
#endif

namespace cmt {

constexpr float k_fp32_unit_roundoff = 5.9604645e-08f;  // 2^-24
constexpr float k_tolerance_floor = 1e-30f;             // keeps exact-zero results comparable

/// Allowed |candidate - reference| for one element.
CMT_HOST_DEVICE inline float gemm_tolerance(int k, float alpha, float beta, float abs_ab, float abs_c0) {
  using std::fabs;
  const float scale = fabs(alpha) * abs_ab + fabs(beta) * abs_c0;
  return 2.0f * static_cast<float>(k + 4) * k_fp32_unit_roundoff * scale + k_tolerance_floor;
}

/// |value - reference| / tolerance; +inf when value or reference is NaN or infinite.
CMT_HOST_DEVICE inline float gemm_error_ratio(float value, float reference, float tolerance) {
  using std::isfinite;  // std:: on the host, the CUDA builtin on the device
  if (!isfinite(value) || !isfinite(reference)) return INFINITY;
  using std::fabs;
  return fabs(value - reference) / tolerance;
}

}  // namespace cmt
