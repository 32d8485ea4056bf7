// Helpers shared by every cm-tune kernel template. Compiled by NVRTC (no standard headers) and
// pasted verbatim into exported headers, so it must stay self-contained.
#pragma once

#define CMT_DEVICE __device__ __forceinline__

// Offsets are 64-bit: M*ldc overflows int beyond 46341^2 elements.
typedef long long cmt_index;

// Row-major element offset.
CMT_DEVICE cmt_index cmt_offset(int row, int col, int ld) { return (cmt_index)row * ld + col; }

// Offset of element (row, col) of op(X), where X is stored row-major with leading dimension ld and
// op(X) is X (TRANS == 0) or X transposed (TRANS == 1: element (row, col) is X[col][row]).
template <int TRANS>
CMT_DEVICE cmt_index cmt_offset_op(int row, int col, int ld) {
  return TRANS ? cmt_offset(col, row, ld) : cmt_offset(row, col, ld);
}

// Strided batch (a family with `batched = true`): the grid's z extent is GRID_Z * batch (GRID_Z is
// the descriptor's [launch] grid_z, the blocks per tile along z); block z computes problem
// z / GRID_Z, whose A, B and C lie that many times stride_a, stride_b, stride_c elements after the
// first ones (a stride of 0 broadcasts one A or B to every problem). Moves the three pointers to
// this block's problem, in 64-bit arithmetic.
template <int GRID_Z, class PtrA, class PtrB, class PtrC>  // float pointers, const and __restrict__ or not
CMT_DEVICE void cmt_batch_offsets(PtrA& A, PtrB& B, PtrC& C, long long stride_a, long long stride_b,
                                  long long stride_c) {
  const cmt_index batch = (cmt_index)(blockIdx.z / GRID_Z);
  A += batch * stride_a;
  B += batch * stride_b;
  C += batch * stride_c;
}

// C[row][col] = alpha*acc + beta*C[row][col], with BLAS semantics: C is not read when beta == 0.
CMT_DEVICE void cmt_store_c(float* C, int ldc, int row, int col, float acc, float alpha, float beta) {
  float* p = C + cmt_offset(row, col, ldc);
  *p = (beta == 0.0f) ? alpha * acc : fmaf(beta, *p, alpha * acc);
}

// Reads p when inside is true, 0 otherwise; never dereferences p outside.
CMT_DEVICE float cmt_load_or_zero(const float* p, bool inside) { return inside ? __ldg(p) : 0.0f; }

// Ceiling division for positive ints.
CMT_DEVICE int cmt_ceil_div(int a, int b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// Tile loaders: global -> shared memory copies used by the tiled families.
//
// Every loader copies a ROWS x COLS tile whose top-left element is src[0] (row stride ld) and
// zero-fills the elements at r >= rows_left or c >= cols_left without reading them, so partial
// tiles at the M, N and K edges contribute nothing to the dot products. rows_left / cols_left are
// block-uniform (e.g. M - m0, K - k0), so the bounds test is made once per tile: interior tiles,
// the common case, take a copy loop with no per-element checks. The element -> thread mapping is
// idx = tid + i*THREADS in the source's row-major order, so consecutive threads read consecutive
// addresses; any ROWS*COLS works (a trailing partial pass is guarded at compile time).
// cmt_load_tile's SRC_T = 1 reads a transposed operand (TRANS_A, TRANS_B): element (r, c) of the
// tile is then src[c*ld + r], the source holds the tile as COLS rows of ROWS contiguous floats, and
// consecutive threads walk those rows (coalesced reads) while storing into dst[r*DST_LD + c] as
// the compute loop expects.
// ---------------------------------------------------------------------------------------------

// Row and column of element idx = tid + pass*THREADS of a row-major tile COLS wide (tid < THREADS).
// When THREADS and COLS divide one another the row/column split is mostly compile-time, which
// keeps address arithmetic (and the registers it holds across the K loop) small.
template <int COLS, int THREADS>
CMT_DEVICE void cmt_tile_coords(int tid, int pass, int& r, int& c) {
  // Clamped to >= 1 so the branch not taken never divides by zero (no compiler warnings).
  constexpr int ROWS_PER_PASS = THREADS / COLS > 0 ? THREADS / COLS : 1;
  constexpr int PASSES_PER_ROW = COLS / THREADS > 0 ? COLS / THREADS : 1;
  if (THREADS % COLS == 0) {         // each pass covers ROWS_PER_PASS whole rows
    r = tid / COLS + pass * ROWS_PER_PASS;
    c = tid % COLS;
  } else if (COLS % THREADS == 0) {  // a row takes PASSES_PER_ROW passes
    r = pass / PASSES_PER_ROW;
    c = tid + (pass % PASSES_PER_ROW) * THREADS;
  } else {
    const int idx = tid + pass * THREADS;
    r = idx / COLS;
    c = idx % COLS;
  }
}

template <bool FULL, int ROWS, int COLS, int THREADS, int DST_LD, int SRC_T>
CMT_DEVICE void cmt_load_tile_impl(float* dst, const float* src, int ld, int rows_left,
                                   int cols_left, int tid) {
  constexpr int COUNT = ROWS * COLS;
  constexpr int PASSES = (COUNT + THREADS - 1) / THREADS;
  // The source's own rows: SRC_T = 1 stores the tile's columns as rows.
  constexpr int SRC_COLS = SRC_T ? ROWS : COLS;
#pragma unroll
  for (int i = 0; i < PASSES; ++i) {
    if (COUNT % THREADS == 0 || tid + i * THREADS < COUNT) {
      int sr, sc;  // row and column of the source
      cmt_tile_coords<SRC_COLS, THREADS>(tid, i, sr, sc);
      const int r = SRC_T ? sc : sr, c = SRC_T ? sr : sc;  // and of the tile
      const float* p = src + cmt_offset(sr, sc, ld);
      dst[r * DST_LD + c] = FULL ? __ldg(p) : cmt_load_or_zero(p, r < rows_left && c < cols_left);
    }
  }
}

// Scalar loads into dst[r*DST_LD + c]: element (r, c) of the tile is src[r*ld + c], or src[c*ld + r]
// with SRC_T = 1 (read along the source's rows, stored transposed).
template <int ROWS, int COLS, int THREADS, int DST_LD, int SRC_T = 0>
CMT_DEVICE void cmt_load_tile(float* dst, const float* src, int ld, int rows_left, int cols_left,
                              int tid) {
  if (rows_left >= ROWS && cols_left >= COLS)
    cmt_load_tile_impl<true, ROWS, COLS, THREADS, DST_LD, SRC_T>(dst, src, ld, rows_left, cols_left, tid);
  else
    cmt_load_tile_impl<false, ROWS, COLS, THREADS, DST_LD, SRC_T>(dst, src, ld, rows_left, cols_left, tid);
}

// Reads p[0..3], of which only the first `valid` exist (valid may be <= 0 or > 4). One 128-bit
// load when all four exist (p must then be 16-byte aligned); scalar loads with zero fill otherwise.
CMT_DEVICE float4 cmt_load4_or_zero(const float* p, int valid) {
  if (valid >= 4) return __ldg(reinterpret_cast<const float4*>(p));
  float4 v;
  v.x = cmt_load_or_zero(p + 0, valid > 0);
  v.y = cmt_load_or_zero(p + 1, valid > 1);
  v.z = cmt_load_or_zero(p + 2, valid > 2);
  v.w = cmt_load_or_zero(p + 3, valid > 3);
  return v;
}

// float4 variant: each thread moves 4 consecutive columns at a time. Needs COLS % 4 == 0 and a
// 16-byte aligned src with ld % 4 == 0 (the caller's [requires]); a vector that straddles the
// cols_left edge falls back to scalar loads. TRANSPOSED stores dst[c*DST_LD + r] (scalar shared
// stores), otherwise dst[r*DST_LD + c] with one 128-bit shared store (DST_LD % 4 == 0 and a
// 16-byte aligned dst).
template <bool FULL, bool TRANSPOSED, int ROWS, int COLS, int THREADS, int DST_LD>
CMT_DEVICE void cmt_load_tile_vec4_impl(float* dst, const float* src, int ld, int rows_left,
                                        int cols_left, int tid) {
  static_assert(COLS % 4 == 0, "a float4 tile load needs COLS % 4 == 0");
  static_assert(TRANSPOSED || DST_LD % 4 == 0, "128-bit shared stores need DST_LD % 4 == 0");
  constexpr int VEC_COLS = COLS / 4;
  constexpr int COUNT = ROWS * VEC_COLS;
  constexpr int PASSES = (COUNT + THREADS - 1) / THREADS;
#pragma unroll
  for (int i = 0; i < PASSES; ++i) {
    if (COUNT % THREADS == 0 || tid + i * THREADS < COUNT) {
      int r, c;
      cmt_tile_coords<VEC_COLS, THREADS>(tid, i, r, c);
      c *= 4;
      const float* p = src + cmt_offset(r, c, ld);
      float4 v;
      if (FULL) {
        v = __ldg(reinterpret_cast<const float4*>(p));
      } else {
        // A row past the edge has valid <= 0: nothing is read.
        v = cmt_load4_or_zero(p, r < rows_left ? cols_left - c : 0);
      }
      if (TRANSPOSED) {
        dst[(c + 0) * DST_LD + r] = v.x;
        dst[(c + 1) * DST_LD + r] = v.y;
        dst[(c + 2) * DST_LD + r] = v.z;
        dst[(c + 3) * DST_LD + r] = v.w;
      } else {
        *reinterpret_cast<float4*>(dst + r * DST_LD + c) = v;
      }
    }
  }
}

template <bool TRANSPOSED, int ROWS, int COLS, int THREADS, int DST_LD>
CMT_DEVICE void cmt_load_tile_vec4(float* dst, const float* src, int ld, int rows_left,
                                   int cols_left, int tid) {
  if (rows_left >= ROWS && cols_left >= COLS)
    cmt_load_tile_vec4_impl<true, TRANSPOSED, ROWS, COLS, THREADS, DST_LD>(dst, src, ld, rows_left,
                                                                          cols_left, tid);
  else
    cmt_load_tile_vec4_impl<false, TRANSPOSED, ROWS, COLS, THREADS, DST_LD>(dst, src, ld, rows_left,
                                                                           cols_left, tid);
}

// Stores C[row][col..col+3] = alpha*acc + beta*C[...] for the first `valid` of the four columns
// (valid may be <= 0 or > 4), with cmt_store_c's beta == 0 semantics. One 128-bit access when all
// four exist (C + offset must then be 16-byte aligned), scalar accesses otherwise.
CMT_DEVICE void cmt_store_c4(float* C, int ldc, int row, int col, int valid, float4 acc,
                             float alpha, float beta) {
  if (valid >= 4) {
    float4* p = reinterpret_cast<float4*>(C + cmt_offset(row, col, ldc));
    float4 out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
    if (beta != 0.0f) {
      const float4 old = *p;
      out.x = fmaf(beta, old.x, out.x);
      out.y = fmaf(beta, old.y, out.y);
      out.z = fmaf(beta, old.z, out.z);
      out.w = fmaf(beta, old.w, out.w);
    }
    *p = out;
  } else {
    if (valid > 0) cmt_store_c(C, ldc, row, col + 0, acc.x, alpha, beta);
    if (valid > 1) cmt_store_c(C, ldc, row, col + 1, acc.y, alpha, beta);
    if (valid > 2) cmt_store_c(C, ldc, row, col + 2, acc.z, alpha, beta);
  }
}
