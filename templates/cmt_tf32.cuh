// The TF32 split of 3xTF32 (tf32x3_mma.cuh): an FP32 x becomes a TF32 "big" part, its round to
// nearest with ties away from zero (cvt.rna.tf32.f32: 10 mantissa bits, the low 13 bits of the
// FP32 pattern zero), and a TF32 "small" part, the same rounding of x - big, so that big + small is
// x within 2^-22 |x|. On the device the rounding is the PTX instruction (sm_80 and later); on the
// host (the CPU tests, tests/model/test_templates_tf32_split.cpp) and older devices the same
// rounding in integer arithmetic. Self-contained:
// compiled by NVRTC, nvcc and g++.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CMT_TF32_FN __host__ __device__ __forceinline__
#else
#define CMT_TF32_FN inline
#endif

CMT_TF32_FN unsigned cmt_f32_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  unsigned u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
#endif
}

CMT_TF32_FN float cmt_f32_of_bits(unsigned u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// Infinite or NaN: the exponent bits all set.
CMT_TF32_FN bool cmt_f32_bits_finite(unsigned u) { return (u & 0x7f800000u) != 0x7f800000u; }

// rna(x) as TF32 bits: round to nearest, ties away from zero, at bit 13 (a value that rounds past
// FP32's largest becomes infinite, as the instruction does). Infinities and NaNs are kept.
CMT_TF32_FN unsigned cmt_tf32_rna(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
  return u;
#else
  const unsigned u = cmt_f32_bits(x);
  if (!cmt_f32_bits_finite(u)) return u;
  return (u + 0x1000u) & 0xffffe000u;  // adds half a TF32 unit to the magnitude, then truncates
#endif
}

// The big part as the correction products take it: itself where finite, else 0. An infinite or NaN
// operand then reaches C through the big-by-big product alone, as its product reaches C in FP32
// SIMT (Inf * finite is Inf, Inf * 0 and NaN are NaN), and the corrections, which multiply it by the
// other operand's small part (often exactly 0) or its small part (0) by the other's big part (maybe
// infinite), stay finite instead of making NaN.
CMT_TF32_FN unsigned cmt_tf32_correction_big(unsigned big) { return cmt_f32_bits_finite(big) ? big : 0u; }

// x split into TF32 big and small parts, as the bit patterns mma takes. An x that rounds to
// infinity keeps its truncated big part, so the remainder stays finite; an infinite or NaN x has no
// small part (its big part carries it, as FP32 SIMT would).
CMT_TF32_FN void cmt_tf32_split(float x, unsigned& big, unsigned& small) {
  big = cmt_tf32_rna(x);
  if (!cmt_f32_bits_finite(cmt_f32_bits(x))) {
    small = 0u;
    return;
  }
  if (!cmt_f32_bits_finite(big)) big = cmt_f32_bits(x) & 0xffffe000u;
  small = cmt_tf32_rna(x - cmt_f32_of_bits(big));
}

// The split without special cases, for kernels that test a whole tile first (tf32x3_wgmma.cuh):
// exact for every x whose magnitude bits are below k_tf32_fast_split_limit, that is finite x that
// do not round to infinity, where it gives cmt_tf32_split's parts (rna in integer arithmetic: the
// device has no TF32 rounding instruction, ptxas emulates cvt.rna with added special cases). The
// caller keeps the largest magnitude bits it split (cmt_tf32_magnitude) and splits the tile again
// with cmt_tf32_split where they reach the limit.
constexpr unsigned k_tf32_fast_split_limit = 0x7f7ff000u;  // the first magnitude rna takes to infinity
CMT_TF32_FN unsigned cmt_tf32_magnitude(float x) { return cmt_f32_bits(x) & 0x7fffffffu; }
CMT_TF32_FN void cmt_tf32_split_finite(float x, unsigned& big, unsigned& small) {
  big = (cmt_f32_bits(x) + 0x1000u) & 0xffffe000u;
  small = (cmt_f32_bits(x - cmt_f32_of_bits(big)) + 0x1000u) & 0xffffe000u;
}
