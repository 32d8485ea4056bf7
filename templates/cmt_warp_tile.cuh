// The warp-tiled register core of the warptile, multistage and clusterk families (CmtWarpTile). A
// block tile BM x BN is split into warp tiles WM x WN; a warp tile into WMITER x WNITER sub-tiles; in
// each sub-tile the 32 lanes form a LANES_M x LANES_N grid and own TM x TN patches. Shared memory
// holds A transposed (As[k][m]) and B as is (Bs[k][n]), so both fragments are read with 16-byte
// loads: lanes sharing a row broadcast, lanes along n read consecutive 16-byte words.
//
// T is the element type of the tiles, the accumulators and C: float (the default) or int, both 4
// bytes, so the tiling and the 16-byte accesses are the same; the int multiply-adds and the store of
// C wrap (cmt_elem.cuh). The float code is what it was before the type.
#pragma once

#include "cmt_common.cuh"
#include "cmt_elem.cuh"
#include "cmt_smem_elem.cuh"

template <int BN_, int WM_, int WN_, int WNITER_, int TM_, int TN_, class T = float>
struct CmtWarpTile {
  static_assert(sizeof(T) == 4, "CmtWarpTile: 4-byte elements (float or int)");
  typedef typename CmtVec4<T>::type V4;
  static constexpr int TM = TM_, TN = TN_, WM = WM_, WN = WN_, WNITER = WNITER_;
  static constexpr int WARPS_N = BN_ / WN;
  static constexpr int WSUBN = WN / WNITER;
  static constexpr int LANES_N = WSUBN / TN;
  static constexpr int LANES_M = 32 / LANES_N;
  static constexpr int WSUBM = LANES_M * TM;
  static constexpr int WMITER = WM / WSUBM;
  static constexpr int ROWS = WMITER * TM;  // accumulator rows per thread
  static constexpr int COLS = WNITER * TN;  // accumulator columns per thread

  T acc[ROWS][COLS];
  int m0, n0;  // this thread's first row and column inside the block tile

  CMT_DEVICE explicit CmtWarpTile(int tile_tid) {
    const int warp = tile_tid / 32, lane = tile_tid % 32;
    m0 = (warp / WARPS_N) * WM + (lane / LANES_N) * TM;
    n0 = (warp % WARPS_N) * WN + (lane % LANES_N) * TN;
#pragma unroll
    for (int i = 0; i < ROWS; ++i)
#pragma unroll
      for (int j = 0; j < COLS; ++j) acc[i][j] = T(0);
  }

  // out[w*N + t] = base[w*SUB + t] for w < ITER, t < N (a lane's sub-tile slices), 16 bytes at a time.
  template <int ITER, int N, int SUB>
  static CMT_DEVICE void load_fragment(const T* base, T* out) {
#pragma unroll
    for (int w = 0; w < ITER; ++w)
#pragma unroll
      for (int t = 0; t < N; t += 4) {
        const V4 v = *reinterpret_cast<const V4*>(base + w * SUB + t);
        out[w * N + t] = v.x, out[w * N + t + 1] = v.y, out[w * N + t + 2] = v.z, out[w * N + t + 3] = v.w;
      }
  }

  // load_fragment from a 32-bit shared-memory address (see step_at).
  template <int ITER, int N, int SUB>
  static CMT_DEVICE void load_fragment_at(unsigned base, T* out) {
#pragma unroll
    for (int w = 0; w < ITER; ++w)
#pragma unroll
      for (int t = 0; t < N; t += 4) cmt_load_shared4_elem(base + (w * SUB + t) * 4, out + w * N + t);
  }

  // step() with row k of each tile given as a 32-bit shared-memory address: nvcc and NVRTC then
  // compile the same address arithmetic (left to themselves, NVRTC forms 64-bit shared addresses).
  CMT_DEVICE void step_at(unsigned as_k, unsigned bs_k) {
    T a[ROWS], b[COLS];
    load_fragment_at<WMITER, TM, WSUBM>(as_k + m0 * 4, a);
    load_fragment_at<WNITER, TN, WSUBN>(bs_k + n0 * 4, b);
    multiply(a, b);
  }

  // acc += As[k][my rows] x Bs[k][my columns]; as_k and bs_k point at row k of each tile.
  CMT_DEVICE void step(const T* as_k, const T* bs_k) {
    T a[ROWS], b[COLS];
    load_fragment<WMITER, TM, WSUBM>(as_k + m0, a);
    load_fragment<WNITER, TN, WSUBN>(bs_k + n0, b);
    multiply(a, b);
  }

  // acc += a x b (outer product of this thread's fragments; FMA, or IMAD wrapping).
  CMT_DEVICE void multiply(const T* a, const T* b) {
#pragma unroll
    for (int i = 0; i < ROWS; ++i)
#pragma unroll
      for (int j = 0; j < COLS; ++j) acc[i][j] = cmt_mad(a[i], b[j], acc[i][j]);
  }

  // Writes alpha*acc + beta*C for the block whose tile starts at (block_m, block_n). `interior`
  // (the whole block tile inside C) skips the bounds checks; `vector_c` (16-byte aligned C and
  // ldc % 4 == 0) then also uses 16-byte accesses.
  CMT_DEVICE void store(T* C, int ldc, int M, int N, int block_m, int block_n, T alpha, T beta,
                        bool interior, bool vector_c) const {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
          for (int j = 0; j < TN; j += 4)
            store_group(C, ldc, M, N, block_m, block_n, wm * TM + i, wn * TN + j, &acc[wm * TM + i][wn * TN + j],
                        alpha, beta, interior, vector_c);
  }

  // Row and column of accumulator acc[r][c] inside the block tile.
  CMT_DEVICE int row_of(int r) const { return m0 + (r / TM) * WSUBM + r % TM; }
  CMT_DEVICE int col_of(int c) const { return n0 + (c / TN) * WSUBN + c % TN; }

  // Writes the four values v[0..3] that belong at acc[r][c..c+3] (c % 4 == 0), as store() does.
  CMT_DEVICE void store_group(T* C, int ldc, int M, int N, int block_m, int block_n, int r, int c, const T* v,
                              T alpha, T beta, bool interior, bool vector_c) const {
    const int row = block_m + row_of(r), col = block_n + col_of(c);
    if (interior && vector_c) {
      V4* p = reinterpret_cast<V4*>(C + cmt_offset(row, col, ldc));
      V4 out = cmt_make4(cmt_mul(alpha, v[0]), cmt_mul(alpha, v[1]), cmt_mul(alpha, v[2]), cmt_mul(alpha, v[3]));
      if (beta != T(0)) {
        const V4 old = *p;
        out.x = cmt_mad(beta, old.x, out.x), out.y = cmt_mad(beta, old.y, out.y);
        out.z = cmt_mad(beta, old.z, out.z), out.w = cmt_mad(beta, old.w, out.w);
      }
      *p = out;
    } else if (interior) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) cmt_store_c(C, ldc, row, col + jj, v[jj], alpha, beta);
    } else {
      // The four C values are read before any is written: read after a predicated write, each
      // waited for the one before (edge tiles with beta != 0 took 6 us longer at 1023^3).
      T prev[4];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
        prev[jj] = beta != T(0) && row < M && col + jj < N ? C[cmt_offset(row, col + jj, ldc)] : T(0);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
        if (row < M && col + jj < N)
          C[cmt_offset(row, col + jj, ldc)] =
              beta != T(0) ? cmt_mad(beta, prev[jj], cmt_mul(alpha, v[jj])) : cmt_mul(alpha, v[jj]);
    }
  }
};
