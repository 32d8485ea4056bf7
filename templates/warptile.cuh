// Warp-tiled GEMM with register-staged double buffering: while the block multiplies one pair of
// shared-memory tiles, each thread already holds the next k tile in registers and writes it to the
// other buffer afterwards, so one barrier per k tile suffices. VEC == 4 loads 16 bytes at a time
// (aligned inputs); VEC == 1 loads single floats and has no input requirements. Blocks whose tile
// lies wholly inside A, B and C load without bounds checks; edge blocks predicate every element
// (zero outside M, N and K).
//
// Layouts (TRANS_A, TRANS_B) and strided batches (grid z): every operand is read along its stored
// rows, VEC floats per load, and the shared tiles are always As[k][m] (rows padded to BM + PAD) and
// Bs[k][n]. A (k contiguous) is stored transposed element by element, a transposed A (m
// contiguous) with 16-byte stores; B (n contiguous) with 16-byte stores, a transposed B (k
// contiguous) element by element into rows padded to BN + 4 floats, conflict-free.
//
// Element types (DTYPE): FP32 and INT32 (cmt_elem.cuh), both 4 bytes, so the tiles, the vector loads
// and the shared layout are the same ("floats" above counts 4-byte elements of either type); the int
// multiply-adds and the store of C wrap modulo 2^32. The INT32 builds address the shared tiles at
// 32-bit addresses (cmt_smem_elem.cuh), so NVRTC (the tuner) and nvcc (an exported header) compile
// them to the same machine code; the FP32 builds keep the generic pointers they were tuned with and
// are the code they were before the type (their NVRTC and nvcc builds differ in a few address
// computations, as they always did).
#pragma once

#include "cmt_common.cuh"
#include "cmt_elem.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_smem_elem.cuh"
#include "cmt_thin_edges.cuh"
#include "cmt_warp_tile.cuh"

// cmt_batch_offsets<1> for A or B, in unsigned byte arithmetic: ptxas then gives the nn kernels
// about the registers they had before the batch offsets (default.toml's 432 nn points, sm_90: 289
// unchanged, +37 in all, the 2048^3-4096^3 winners unchanged), where cmt_batch_offsets' signed
// element arithmetic cost +569 in all (+18 on 128x128 tiles with 16-byte loads) and 13 more spills.
// (4-byte elements: float or int.)
template <class T>
CMT_DEVICE const T* cmt_warptile_batch_operand(const T* p, long long stride) {
  static_assert(sizeof(T) == 4, "4-byte elements");
  return reinterpret_cast<const T*>(reinterpret_cast<unsigned long long>(p) +
                                    (unsigned long long)blockIdx.z * (unsigned long long)stride * 4ull);
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int VEC, int SWIZZLE, int THIN_EDGE,
          int TRANS_A, int TRANS_B, int DTYPE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, THIN_EDGE > 0 ? 1 : 0)
    cmt_sgemm_warptile(int M, int N, int K, typename CmtElem<DTYPE>::T alpha,
                       const typename CmtElem<DTYPE>::T* __restrict__ A, int lda,
                       const typename CmtElem<DTYPE>::T* __restrict__ B, int ldb, typename CmtElem<DTYPE>::T beta,
                       typename CmtElem<DTYPE>::T* __restrict__ C, int ldc,
                       long long stride_a, long long stride_b, long long stride_c) {
  typedef typename CmtElem<DTYPE>::T T;
  typedef typename CmtVec4<T>::type V4;  // float4 or int4
  static_assert(DTYPE == 0 || DTYPE == 2, "warptile computes FP32 and INT32");
  // The shared tiles at 32-bit addresses (INT32), or through generic pointers (FP32; see the top).
  constexpr bool SMEM32 = DTYPE != 0;
  const unsigned smem32 = SMEM32 ? cmt_dynamic_smem_address() : 0u;  // taken first (see fused_batch)
  A = cmt_warptile_batch_operand(A, stride_a);  // the batch: problem blockIdx.z (grid_z = 1)
  B = cmt_warptile_batch_operand(B, stride_b);
  C += (cmt_index)blockIdx.z * stride_c;
  using Tile = CmtWarpTile<BN, WM, WN, WNITER, TM, TN, T>;
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int AS_LD = BM + PAD;
  constexpr int BS_LD = TRANS_B ? BN + 4 : BN;  // (see TB_LANES)
  constexpr int A_STAGE = BK * AS_LD, B_STAGE = BK * BS_LD;
  // Each tile is loaded as it is stored, VEC floats at a time along its stored rows, and spread over
  // the threads vector by vector (consecutive threads take consecutive addresses, so loads
  // coalesce); any thread count works, the last pass is guarded. A's tile is BM stored rows of BK
  // (with TRANS_A, BK rows of BM); B's is BK rows of BN.
  constexpr int A_VECS_PER_ROW = (TRANS_A ? BM : BK) / VEC, A_VECS = BM * BK / VEC;
  constexpr int B_VECS_PER_ROW = BN / VEC, B_VECS = BK * BN / VEC;
  // With TRANS_B, B's tile is BN stored rows of BK, read in 8-k chunks: TB_LANES lanes read one
  // chunk (32 bytes) of a row, the next lanes the same chunk of the next rows. Stored transposed
  // into Bs[k][n] with rows of BN + 4 floats, a warp's stores of one element of its vectors hit 32
  // different banks (32 / TB_LANES consecutive n, their k 4 * VEC banks apart when BN % 32 == 0).
  constexpr int TB_LANES = 8 / VEC, TB_SLOTS = TB_LANES * BN;
  constexpr int A_LOADS = (A_VECS + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (B_VECS + THREADS - 1) / THREADS;

  // Two stages of (A transposed, B), in dynamic shared memory so BK = 32 tiles fit.
  T* smem = reinterpret_cast<T*>(cmt_dynamic_smem_floats());
  const int tid = threadIdx.x;
  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE, THIN_EDGE>(M, N, block_m, block_n);
  if (THIN_EDGE > 0) {
    const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
    const bool thin = cmt_is_thin_tile<BM, BN, THIN_EDGE>(M, N, block_m, block_n);
    if (thin || edges.interior_tiles() == 0) {  // see cmt_thin_edges_share
      if (edges.interior_tiles() == 0)
        cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(edges, M, N, K, A, lda, B, ldb, C, ldc,
                                                                           alpha, beta, smem, 2 * (A_STAGE + B_STAGE),
                                                                           tid, cmt_linear_block(),
                                                                           gridDim.x * gridDim.y);
      return;
    }
  }
  const int k_tiles = (K + BK - 1) / BK;
  const bool mn_interior = block_m + BM <= M && block_n + BN <= N;

  // Load i of this thread: its vector starts at column sc of stored row sr of the operand's tile.
  auto a_slot = [&](int i, int& sr, int& sc) {
    int c;
    cmt_tile_coords<A_VECS_PER_ROW, THREADS>(tid, i, sr, c);
    sc = c * VEC;
  };
  auto b_slot = [&](int i, int& sr, int& sc) {
    if (TRANS_B) {
      int chunk, s;
      cmt_tile_coords<TB_SLOTS, THREADS>(tid, i, chunk, s);
      sr = s / TB_LANES, sc = chunk * 8 + (s % TB_LANES) * VEC;
    } else {
      int c;
      cmt_tile_coords<B_VECS_PER_ROW, THREADS>(tid, i, sr, c);
      sc = c * VEC;
    }
  };

  T a_reg[A_LOADS][VEC], b_reg[B_LOADS][VEC];
  // One block-uniform branch per k tile: interior tiles take unpredicated loads (16-byte ones when
  // VEC == 4), edge tiles predicate every element.
  auto load_global = [&](int kt) {
    const int k0 = kt * BK;
    // The tiles' first stored rows and columns, and the stored matrices' extents.
    const int a_row0 = TRANS_A ? k0 : block_m, a_col0 = TRANS_A ? block_m : k0;
    const int b_row0 = TRANS_B ? block_n : k0, b_col0 = TRANS_B ? k0 : block_n;
    if (mn_interior && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (A_VECS % THREADS == 0 || e < A_VECS) {
          int r, c;
          a_slot(i, r, c);
          const T* p = A + cmt_offset(a_row0 + r, a_col0 + c, lda);
          if (VEC == 4) {
            const V4 v = __ldg(reinterpret_cast<const V4*>(p));
            a_reg[i][0] = v.x, a_reg[i][VEC > 1 ? 1 : 0] = v.y, a_reg[i][VEC > 2 ? 2 : 0] = v.z, a_reg[i][VEC > 3 ? 3 : 0] = v.w;
          } else {
            a_reg[i][0] = __ldg(p);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (B_VECS % THREADS == 0 || e < B_VECS) {
          int r, c;
          b_slot(i, r, c);
          const T* p = B + cmt_offset(b_row0 + r, b_col0 + c, ldb);
          if (VEC == 4) {
            const V4 v = __ldg(reinterpret_cast<const V4*>(p));
            b_reg[i][0] = v.x, b_reg[i][VEC > 1 ? 1 : 0] = v.y, b_reg[i][VEC > 2 ? 2 : 0] = v.z, b_reg[i][VEC > 3 ? 3 : 0] = v.w;
          } else {
            b_reg[i][0] = __ldg(p);
          }
        }
      }
    } else {
      const int a_rows = TRANS_A ? K : M, a_cols = TRANS_A ? M : K;
      const int b_rows = TRANS_B ? N : K, b_cols = TRANS_B ? K : N;
#pragma unroll
      for (int i = 0; i < A_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (A_VECS % THREADS == 0 || e < A_VECS) {
          int r, c;
          a_slot(i, r, c);
          const int row = a_row0 + r, col = a_col0 + c;
          const bool inside = row < a_rows;
          const T* p = A + cmt_offset(inside ? row : 0, 0, lda);
#pragma unroll
          for (int v = 0; v < VEC; ++v) a_reg[i][v] = cmt_load_elem_or_zero(p + col + v, inside && col + v < a_cols);
        }
      }
#pragma unroll
      for (int i = 0; i < B_LOADS; ++i) {
        const int e = tid + i * THREADS;
        if (B_VECS % THREADS == 0 || e < B_VECS) {
          int r, c;
          b_slot(i, r, c);
          const int row = b_row0 + r, col = b_col0 + c;
          const bool inside = row < b_rows;
          const T* p = B + cmt_offset(inside ? row : 0, 0, ldb);
#pragma unroll
          for (int v = 0; v < VEC; ++v) b_reg[i][v] = cmt_load_elem_or_zero(p + col + v, inside && col + v < b_cols);
        }
      }
    }
  };
  // Writes the registers into stage `buf` as As[k][m] and Bs[k][n]: a vector along m or n with one
  // 16-byte store (VEC == 4), one along k element by element.
  auto store_shared = [&](int buf) {
    T* as = smem + buf * (A_STAGE + B_STAGE);
    T* bs = as + A_STAGE;
    const unsigned as32 = smem32 + buf * (A_STAGE + B_STAGE) * 4, bs32 = as32 + A_STAGE * 4;
    // Element `at` of a tile, at its generic pointer p or its 32-bit address p32.
    auto put = [&](T* p, unsigned p32, int at, T v) {
      if (SMEM32)
        cmt_store_shared_elem(p32 + at * 4, v);
      else
        p[at] = v;
    };
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int e = tid + i * THREADS;
      if (A_VECS % THREADS == 0 || e < A_VECS) {
        int r, c;
        a_slot(i, r, c);
        if (TRANS_A && VEC == 4) {
          if (SMEM32)
            cmt_store_shared4_elem(as32 + (r * AS_LD + c) * 4, a_reg[i][0], a_reg[i][VEC > 1 ? 1 : 0],
                                   a_reg[i][VEC > 2 ? 2 : 0], a_reg[i][VEC > 3 ? 3 : 0]);
          else
            *reinterpret_cast<V4*>(as + r * AS_LD + c) = cmt_make4(
                a_reg[i][0], a_reg[i][VEC > 1 ? 1 : 0], a_reg[i][VEC > 2 ? 2 : 0], a_reg[i][VEC > 3 ? 3 : 0]);
        } else if (TRANS_A) {
          put(as, as32, r * AS_LD + c, a_reg[i][0]);
        } else {
#pragma unroll
          for (int v = 0; v < VEC; ++v) put(as, as32, (c + v) * AS_LD + r, a_reg[i][v]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int e = tid + i * THREADS;
      if (B_VECS % THREADS == 0 || e < B_VECS) {
        int r, c;
        b_slot(i, r, c);
        if (TRANS_B) {
#pragma unroll
          for (int v = 0; v < VEC; ++v) put(bs, bs32, (c + v) * BS_LD + r, b_reg[i][v]);
        } else if (VEC == 4) {
          if (SMEM32)
            cmt_store_shared4_elem(bs32 + (r * BS_LD + c) * 4, b_reg[i][0], b_reg[i][VEC > 1 ? 1 : 0],
                                   b_reg[i][VEC > 2 ? 2 : 0], b_reg[i][VEC > 3 ? 3 : 0]);
          else
            *reinterpret_cast<V4*>(bs + r * BS_LD + c) = cmt_make4(
                b_reg[i][0], b_reg[i][VEC > 1 ? 1 : 0], b_reg[i][VEC > 2 ? 2 : 0], b_reg[i][VEC > 3 ? 3 : 0]);
        } else {
          put(bs, bs32, r * BS_LD + c, b_reg[i][0]);
        }
      }
    }
  };

  Tile tile(tid);
  if (k_tiles > 0) {
    load_global(0);
    store_shared(0);
  }
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int cur = kt & 1;
    if (kt + 1 < k_tiles) load_global(kt + 1);  // in flight during the multiply below
    if (SMEM32) {
      const unsigned as = smem32 + cur * (A_STAGE + B_STAGE) * 4, bs = as + A_STAGE * 4;
#pragma unroll
      for (int k = 0; k < BK; ++k) tile.step_at(as + k * AS_LD * 4, bs + k * BS_LD * 4);
    } else {
      const T* as = smem + cur * (A_STAGE + B_STAGE);
      const T* bs = as + A_STAGE;
#pragma unroll
      for (int k = 0; k < BK; ++k) tile.step(as + k * AS_LD, bs + k * BS_LD);
    }
    if (kt + 1 < k_tiles) store_shared(cur ^ 1);
    __syncthreads();
  }
  tile.store(C, ldc, M, N, block_m, block_n, alpha, beta, mn_interior, VEC == 4);
  if (THIN_EDGE > 0) {
    const CmtThinEdges<BM, BN, THIN_EDGE> edges(M, N, gridDim.y, gridDim.x);
    cmt_thin_edges_share<BM, BN, THREADS, THIN_EDGE, TRANS_A, TRANS_B>(edges, M, N, K, A, lda, B, ldb, C, ldc, alpha,
                                                                       beta, smem, 2 * (A_STAGE + B_STAGE), tid,
                                                                       cmt_linear_block(), edges.interior_tiles());
  }
}
