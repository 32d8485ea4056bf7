// tf32x3_wgmma: FP32 GEMM on Hopper's tensor cores as three TF32 products (3xTF32), the opt-in
// precision class `tf32x3`, sm_90a only (wgmma.mma_async, TMA and setmaxnreg; cmt_wgmma.cuh).
//
// A block is CONSUMERS warpgroups, each computing 64 rows by BN columns of C, and one producer
// warpgroup (setmaxnreg moves its registers to the consumers) whose first lane loads k tiles of 32
// with TMA (the tensor maps map_a and map_b, built by the launcher) into a STAGES-deep ring of raw
// FP32 stages in the 128-byte swizzle, each operand in its stored orientation: K-major (A in
// nn/nt, B in nt/tt) as one box of 32 k by BM or BN rows, the others as 32 x 32 boxes. TMA
// zero-fills what lies outside the matrix, so ragged edges take the same path.
//
// The consumers split every raw k tile (cmt_tf32.cuh): A into TF32 big and small fragments in
// registers (wgmma's A fragment), B into K-major big and small planes in shared memory, which is
// where an N-major B (nn, tn) is transposed for wgmma, whose TF32 operands must be K-major. A and
// the planes are double buffered: while the tensor cores run tile kt's products from one set, the
// consumers split tile kt + 1 into the other. Each pair of k tiles' 24 products (4 k8 steps each,
// small terms first) is summed in a cleared accumulator and added to C's with an IEEE FP32 add
// (staged accumulation, every 64 k).
//
// Special values: the split without special cases (cmt_tf32_split_finite) serves every tile whose
// magnitudes stay below k_tf32_fast_split_limit, checked per tile with one barrier reduction. A
// tile holding an infinity, a NaN or a value that rounds to infinity is split again with
// cmt_tf32_split, and its corrections take the correction big parts (an infinite or NaN big part
// as 0: a_corr and a third plane), so special values reach C as in FP32 SIMT.
//
// Accumulator fragment of m64nNk8 (lane = 4 g + t, warp v of the warpgroup): register 4 j + r holds
// row 16 v + g + 8 (r / 2), column 8 j + 2 t + r % 2. A fragment (as mma.m16n8k8): register r
// holds row 16 v + g + 8 (r % 2), k t + 4 (r / 2). The lambdas take the register set P as an int,
// constant at every call: NVRTC rejects generic lambdas in device code, and the arrays stay in
// registers once each call is inlined.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"
#include "cmt_raster.cuh"
#include "cmt_tf32.cuh"
#include "cmt_wgmma.cuh"

// One k tile of 32 FP32 of an operand of X rows (m or n) in its raw stage: the byte offset of
// element (x, k), and the boxes TMA loads.
template <int X, bool K_MAJOR>
struct CmtTf32x3RawTile {
  static constexpr unsigned BYTES = (unsigned)X * 32u * 4u;
  static CMT_DEVICE unsigned offset(int x, int k) { return K_MAJOR ? cmt_sw128_kmajor(x, k) : cmt_sw128_xmajor(x, k); }
  // Loads the tile at (x0, k0) of problem z: coordinates innermost first, (k, x) or (x, k).
  static CMT_DEVICE void load(unsigned dst, const CmtTensorMap* map, int x0, int k0, int z, unsigned bar) {
    if (K_MAJOR) {
      cmt_tma_load_3d(dst, map, k0, x0, z, bar);
    } else {
#pragma unroll
      for (int b = 0; b < X / 32; ++b) cmt_tma_load_3d(dst + b * 4096u, map, x0 + 32 * b, k0, z, bar);
    }
  }
};

template <int BM, int BN, int STAGES, int SWIZZLE, int TRANS_A, int TRANS_B, int DTYPE>
__global__ void __launch_bounds__(BM / 64 * 128 + 128, 1)
    cmt_sgemm_tf32x3_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                           const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                           long long stride_a, long long stride_b, long long stride_c, int batch,
                           const __grid_constant__ CmtTensorMap map_a, const __grid_constant__ CmtTensorMap map_b) {
  static_assert(DTYPE == 3, "tf32x3_wgmma computes the tf32x3 class only");
  static_assert(BM % 64 == 0 && BM <= 128 && (BN == 64 || BN == 128), "64 or 128 rows, 64 or 128 columns");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int CONSUMERS = BM / 64;
  constexpr int CONSUMER_THREADS = CONSUMERS * 128;
  constexpr int ACC = BN / 2;  // accumulator registers per thread
  using RawA = CmtTf32x3RawTile<BM, TRANS_A == 0>;
  using RawB = CmtTf32x3RawTile<BN, TRANS_B != 0>;
  constexpr unsigned STAGE_BYTES = RawA::BYTES + RawB::BYTES;
  constexpr unsigned PLANE_BYTES = (unsigned)BN * 128u;
  constexpr unsigned PLANES_BYTES = 3u * PLANE_BYTES;  // big, small, correction big

  (void)A, (void)B, (void)lda, (void)ldb, (void)batch;
  // Shared memory, 1024-byte aligned (the swizzle follows address bits): the raw ring, two sets of
  // B planes, then the full and empty mbarriers of each stage.
  const unsigned smem = (cmt_dynamic_smem_address() + 1023u) & ~1023u;
  const unsigned raw0 = smem;
  const unsigned planes0 = raw0 + STAGES * STAGE_BYTES;
  const unsigned full0 = planes0 + 2u * PLANES_BYTES, empty0 = full0 + STAGES * 8u;

  int block_m, block_n;
  cmt_block_origin<BM, BN, SWIZZLE>(block_m, block_n);
  if (block_m >= M || block_n >= N) return;
  const int z = blockIdx.z;
  const int k_tiles = (K + 31) / 32;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      cmt_mbarrier_init(full0 + 8u * s, 1);
      cmt_mbarrier_init(empty0 + 8u * s, CONSUMERS * 4);  // one arrival per consumer warp
    }
    cmt_mbarrier_init_fence();
  }
  __syncthreads();

  if (warp >= CONSUMERS * 4) {
    // Producer warpgroup: it gives its registers to the consumers, and one lane issues every
    // stage's boxes once the consumers have released it.
    cmt_setmaxnreg_dec<24>();
    if (warp == CONSUMERS * 4 && lane == 0) {
      cmt_tma_prefetch_map(&map_a);
      cmt_tma_prefetch_map(&map_b);
      const int za = stride_a != 0 ? z : 0, zb = stride_b != 0 ? z : 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        cmt_mbarrier_wait(empty0 + 8u * s, ((kt / STAGES) & 1) ^ 1);
        const unsigned full = full0 + 8u * s, dst = raw0 + s * STAGE_BYTES;
        cmt_mbarrier_arrive_expect(full, STAGE_BYTES);
        RawA::load(dst, &map_a, block_m, kt * 32, za, full);
        RawB::load(dst + RawA::BYTES, &map_b, block_n, kt * 32, zb, full);
      }
    }
    return;
  }

  // Consumers: warpgroup wg computes rows 64 wg .. 64 wg + 63 of the block's tile.
  cmt_setmaxnreg_inc<CONSUMERS == 2 ? 240 : 256>();
  const int wg = warp / 4, v = warp % 4, g = lane / 4, t = lane % 4;
  const int a_row = wg * 64 + v * 16 + g;

  // A's fragments, split, in two register sets: tile kt's products read set kt % 2 while the
  // next tile is split into the other. a_corr: the big parts the corrections take, for the tile
  // being multiplied (set_corr or split_again, once the previous tile's products are done with it).
  unsigned a_big[2][4][4], a_small[2][4][4], a_corr[4][4];
  // Splits this thread's A fragments of the k tile in stage s into set P. CAREFUL: every value,
  // with the correction big parts; else the finite split, keeping the largest magnitude in mag.
  auto split_a = [&](int P, bool careful, int s, unsigned& mag) {
    const unsigned raw = raw0 + s * STAGE_BYTES;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float x = cmt_load_shared(raw + RawA::offset(a_row + 8 * (r % 2), ks * 8 + t + 4 * (r / 2)));
        if (careful) {
          cmt_tf32_split(x, a_big[P][ks][r], a_small[P][ks][r]);
          a_corr[ks][r] = cmt_tf32_correction_big(a_big[P][ks][r]);
        } else {
          cmt_tf32_split_finite(x, a_big[P][ks][r], a_small[P][ks][r]);
          mag = max(mag, cmt_tf32_magnitude(x));
        }
      }
  };
  // Splits B of the k tile in stage s into plane set p, K-major, 4 k at a time per (n, k / 4): big
  // and small, and with CAREFUL the correction big parts as well.
  auto split_b = [&](bool careful, int s, int p, unsigned& mag) {
    const unsigned raw = raw0 + s * STAGE_BYTES + RawA::BYTES;
    const unsigned big = planes0 + p * PLANES_BYTES, small = big + PLANE_BYTES, corr = small + PLANE_BYTES;
    constexpr int CHUNKS = BN * 8;  // 16-byte chunks of a plane
    static_assert(CHUNKS % CONSUMER_THREADS == 0, "whole passes of the consumers");
#pragma unroll
    for (int i = 0; i < CHUNKS / CONSUMER_THREADS; ++i) {
      const int c = tid + i * CONSUMER_THREADS;
      // K-major raw: the planes share its layout, chunk for chunk. N-major: lanes run along n.
      const int n = TRANS_B ? c / 8 : c % BN, k4 = TRANS_B ? (c % 8) ^ (n & 7) : c / BN;
      const unsigned to = cmt_sw128_kmajor(n, 4 * k4);
      float x[4];
      if (TRANS_B) {
        const float4 q = cmt_load_shared4(raw + to);
        x[0] = q.x, x[1] = q.y, x[2] = q.z, x[3] = q.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) x[e] = cmt_load_shared(raw + RawB::offset(n, 4 * k4 + e));
      }
      unsigned b[4], sm[4], co[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (careful) {
          cmt_tf32_split(x[e], b[e], sm[e]);
          co[e] = cmt_tf32_correction_big(b[e]);
        } else {
          cmt_tf32_split_finite(x[e], b[e], sm[e]);
          mag = max(mag, cmt_tf32_magnitude(x[e]));
        }
      }
      cmt_store_shared_u4(big + to, b);
      cmt_store_shared_u4(small + to, sm);
      if (careful) cmt_store_shared_u4(corr + to, co);
    }
  };
  // Releases stage s to the producer once every lane of this warp is done reading it.
  auto release = [&](int s) {
    __syncwarp();
    if (lane == 0) cmt_mbarrier_arrive(empty0 + 8u * s);
  };
  constexpr bool fast = false, careful = true;   // split_a's and split_b's first argument
  float acc[ACC], part[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = part[i] = 0.0f;
  // After a wait for the products: keeps the compiler from reusing or moving the registers they
  // read and write across it.
  auto hold_all = [&]() {
#pragma unroll
    for (int i = 0; i < ACC; ++i) cmt_wgmma_hold(part[i]);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        cmt_wgmma_hold(a_big[0][ks][r]);
        cmt_wgmma_hold(a_small[0][ks][r]);
        cmt_wgmma_hold(a_big[1][ks][r]);
        cmt_wgmma_hold(a_small[1][ks][r]);
        cmt_wgmma_hold(a_corr[ks][r]);
      }
  };
  // After the fast split of the tile in stage s: waits for every consumer's split, and says
  // whether the tile holds an infinity, a NaN or a value that rounds to infinity anywhere (the same
  // answer in every thread). Such a tile keeps its stage for split_again.
  auto finish_split = [&](int s, unsigned mag) {
    cmt_fence_proxy_async();
    // The vote makes the answer visibly warp-uniform to ptxas.
    const bool special =
        __any_sync(0xffffffffu, cmt_named_barrier_or(1, CONSUMER_THREADS, mag >= k_tf32_fast_split_limit));
    if (!special) release(s);
    return special;
  };
  // Splits a tile with special values again, every case handled, into set P (a_corr included,
  // which products in flight may read: called once they are done), and releases its stage.
  auto split_again = [&](int P, int s) {
    unsigned unused = 0;
    split_b(careful, s, P, unused);
    split_a(P, careful, s, unused);
    cmt_fence_proxy_async();
    cmt_named_barrier(1, CONSUMER_THREADS);
    release(s);
  };
  // The big parts the next tile's corrections take, once the products in flight are done.
  auto set_corr = [&](int P, bool special) {
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) a_corr[ks][r] = special ? a_corr[ks][r] : a_big[P][ks][r];
  };

  // Tile kt's products from A set P and plane set P, while tile kt + 1 is split into the others.
  // One sequence serves both kinds of tile (a branch around wgmma would serialize it): the
  // corrections read a_corr and the correction plane, which for a tile without special values are
  // a copy of the big parts and the big plane.
  bool special = false;
  auto step = [&](int P, int kt) {
    const unsigned big = planes0 + P * PLANES_BYTES, small = big + PLANE_BYTES;
    const unsigned corr = special ? small + PLANE_BYTES : big;
    cmt_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      // part is cleared by the first product of each pair of tiles (64 k per staged sum).
      CmtWgmmaTf32<BN>::rs(part, a_small[P][ks], cmt_wgmma_desc_k128(corr + 32u * ks), ks > 0 || P == 1);
      CmtWgmmaTf32<BN>::rs(part, a_corr[ks], cmt_wgmma_desc_k128(small + 32u * ks), 1);
      CmtWgmmaTf32<BN>::rs(part, a_big[P][ks], cmt_wgmma_desc_k128(big + 32u * ks), 1);
    }
    cmt_wgmma_commit();
    const bool next = kt + 1 < k_tiles;
    const int s = (kt + 1) % STAGES;
    unsigned mag = 0;
    bool special_next = false;
    if (next) {  // the next tile is split, and every consumer done with it, while these run
      cmt_mbarrier_wait(full0 + 8u * s, ((kt + 1) / STAGES) & 1);
      split_b(fast, s, P ^ 1, mag);
      split_a(P ^ 1, fast, s, mag);
      special_next = finish_split(s, mag);
    }
    cmt_wgmma_wait<0>();
    hold_all();
    if (P == 1 || !next) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] += part[i];
    }
    if (special_next) split_again(P ^ 1, s);
    if (next) set_corr(P ^ 1, special_next);
    special = special_next;
  };

  if (k_tiles > 0) {
    unsigned mag = 0;
    cmt_mbarrier_wait(full0, 0);
    split_b(fast, 0, 0, mag);
    split_a(0, fast, 0, mag);
    special = finish_split(0, mag);
    if (special) split_again(0, 0);
    set_corr(0, special);
  }
  for (int kt = 0; kt < k_tiles; kt += 2) {
    step(0, kt);
    if (kt + 1 < k_tiles) step(1, kt + 1);
  }

  // Epilogue: C = alpha acc + beta C (C not read when beta == 0), two adjacent columns at a time.
  C += (cmt_index)z * stride_c;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = block_m + a_row + 8 * h, col = block_n + 8 * j + 2 * t;
      if (row >= M) continue;
      float* p = C + cmt_offset(row, col, ldc);
      float v0 = alpha * acc[4 * j + 2 * h], v1 = alpha * acc[4 * j + 2 * h + 1];
      if (col + 1 < N) {
        if (beta != 0.0f) {
          const float2 old = *reinterpret_cast<const float2*>(p);
          v0 = fmaf(beta, old.x, v0);
          v1 = fmaf(beta, old.y, v1);
        }
        *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
      } else if (col < N) {
        p[0] = beta != 0.0f ? fmaf(beta, p[0], v0) : v0;
      }
    }
#else
  (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  (void)stride_a, (void)stride_b, (void)stride_c, (void)batch, (void)map_a, (void)map_b;
  __trap();  // built for another architecture: wgmma and TMA need sm_90a
#endif
}
