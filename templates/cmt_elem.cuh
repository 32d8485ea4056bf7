// Element types, for the families that compute more than FP32 (`dtypes` in their descriptors, the
// implicit DTYPE template argument: 0 float, 1 double, 2 int). Holds the type behind DTYPE, the
// multiply-add, product and sum, the 16-byte vectors of the 4-byte types, the store of C with BLAS
// beta semantics, and the scalar tile loader of cmt_common.cuh over any of the three types.
//
// INT32 semantics: A, B, C, alpha, beta and the accumulator are 32-bit integers, and every product
// and sum wraps modulo 2^32 (two's complement). The arithmetic is done in unsigned int, whose
// overflow C++ defines as that wrap (signed overflow would be undefined behaviour), and converted
// back to int; the machine code is the same IMAD.
#pragma once
#include "cmt_common.cuh"

template <int DTYPE>
struct CmtElem;
template <>
struct CmtElem<0> {
  typedef float T;
};
template <>
struct CmtElem<1> {
  typedef double T;
};
template <>
struct CmtElem<2> {
  typedef int T;
};

// acc + a*b: one rounding (FMA) for the floats, wrapping for int.
CMT_DEVICE float cmt_mad(float a, float b, float acc) { return fmaf(a, b, acc); }
CMT_DEVICE double cmt_mad(double a, double b, double acc) { return fma(a, b, acc); }
CMT_DEVICE int cmt_mad(int a, int b, int acc) {
  return (int)((unsigned)a * (unsigned)b + (unsigned)acc);
}

// a*b and a + b: the operators for the floats (the same code as writing them), wrapping for int.
CMT_DEVICE float cmt_mul(float a, float b) { return a * b; }
CMT_DEVICE double cmt_mul(double a, double b) { return a * b; }
CMT_DEVICE int cmt_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
CMT_DEVICE float cmt_add(float a, float b) { return a + b; }
CMT_DEVICE double cmt_add(double a, double b) { return a + b; }
CMT_DEVICE int cmt_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }

// Four 4-byte elements as one 16-byte vector (the 16-byte loads and stores of the families that
// compute FP32 and INT32 alike): float4 or int4, with the same members x, y, z, w.
template <class T>
struct CmtVec4;
template <>
struct CmtVec4<float> {
  typedef float4 type;
};
template <>
struct CmtVec4<int> {
  typedef int4 type;
};
CMT_DEVICE float4 cmt_make4(float x, float y, float z, float w) { return make_float4(x, y, z, w); }
CMT_DEVICE int4 cmt_make4(int x, int y, int z, int w) { return make_int4(x, y, z, w); }

// C[row][col] = alpha*acc + beta*C[row][col], with BLAS semantics: C is not read when beta == 0.
// The float overload is cmt_common.cuh's.
CMT_DEVICE void cmt_store_c(double* C, int ldc, int row, int col, double acc, double alpha, double beta) {
  double* p = C + cmt_offset(row, col, ldc);
  *p = (beta == 0.0) ? alpha * acc : fma(beta, *p, alpha * acc);
}
CMT_DEVICE void cmt_store_c(int* C, int ldc, int row, int col, int acc, int alpha, int beta) {
  int* p = C + cmt_offset(row, col, ldc);
  const unsigned scaled = (unsigned)alpha * (unsigned)acc;
  *p = (beta == 0) ? (int)scaled : (int)((unsigned)beta * (unsigned)*p + scaled);
}

// Reads p when inside is true, 0 otherwise; never dereferences p outside.
template <class T>
CMT_DEVICE T cmt_load_elem_or_zero(const T* p, bool inside) {
  return inside ? __ldg(p) : T(0);
}

// cmt_load_tile (cmt_common.cuh) over elements of any of the three types: the same mapping of
// elements to threads, the same bounds tests, the same zero fill; for float, the same code.
template <bool FULL, int ROWS, int COLS, int THREADS, int DST_LD, int SRC_T, class T>
CMT_DEVICE void cmt_load_tile_elem_impl(T* dst, const T* src, int ld, int rows_left, int cols_left, int tid) {
  constexpr int COUNT = ROWS * COLS;
  constexpr int PASSES = (COUNT + THREADS - 1) / THREADS;
  constexpr int SRC_COLS = SRC_T ? ROWS : COLS;
#pragma unroll
  for (int i = 0; i < PASSES; ++i) {
    if (COUNT % THREADS == 0 || tid + i * THREADS < COUNT) {
      int sr, sc;  // row and column of the source
      cmt_tile_coords<SRC_COLS, THREADS>(tid, i, sr, sc);
      const int r = SRC_T ? sc : sr, c = SRC_T ? sr : sc;  // and of the tile
      const T* p = src + cmt_offset(sr, sc, ld);
      dst[r * DST_LD + c] = FULL ? __ldg(p) : cmt_load_elem_or_zero(p, r < rows_left && c < cols_left);
    }
  }
}

template <int ROWS, int COLS, int THREADS, int DST_LD, int SRC_T = 0, class T>
CMT_DEVICE void cmt_load_tile_elem(T* dst, const T* src, int ld, int rows_left, int cols_left, int tid) {
  if (rows_left >= ROWS && cols_left >= COLS)
    cmt_load_tile_elem_impl<true, ROWS, COLS, THREADS, DST_LD, SRC_T>(dst, src, ld, rows_left, cols_left, tid);
  else
    cmt_load_tile_elem_impl<false, ROWS, COLS, THREADS, DST_LD, SRC_T>(dst, src, ld, rows_left, cols_left, tid);
}
