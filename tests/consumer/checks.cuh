// The consumer harness's own device code (filling, reference scaling and comparing buffers), apart
// from harness.cpp: the harness includes the exported header in a plain C++ translation unit, as a
// program of the user's would, and only this file needs nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

struct CompareResult {
  unsigned max_ratio_bits;   // float bits of the largest |ours - ref| / tol (non-negative: int order = float order)
  unsigned long long bad;    // elements of the M x N block beyond tolerance
  unsigned long long outside_written;   // elements outside the block that changed
};

// Random values in +-[0.25, 1] (never zero, so a dropped or doubled term always shows), from a seed.
void fill_random(float* p, size_t n, uint64_t seed);
// dst = |src|.
void abs_copy(const float* src, float* dst, size_t n);
// The exact result of C = beta*C0 (no product): what alpha == 0 or K == 0 must give.
void scale_reference(const float* c0, float* ref, size_t n, float beta);
// Walks the whole C allocation: inside the M x N block ours must be within tolerance of the
// reference; everywhere else (ldc padding, the offset, the guard after C) it must be untouched.
// A batch: `batch` matrices of C, stride_c floats apart (the gaps between them count as outside).
void compare(const float* ours, const float* ref, const float* c0, const float* abs_ab, size_t total, size_t offset,
             int M, int N, int K, int ldc, float alpha, float beta, CompareResult* out, int batch = 1,
             size_t stride_c = 0);
