// Thread-block clusters (sm_90+): the compile-time cluster shape, cluster barriers and loads from
// another block's shared memory, and the end of a cluster split-K kernel (clusterk): the blocks'
// partial tiles added in rank order through distributed shared memory.
#pragma once

#include "cmt_common.cuh"

// Compile-time cluster shape (1, 1, n). Device code for older GPUs gets no cluster (see
// CMT_HAS_CLUSTERS); a kernel using it must then stay correct with independent blocks.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define CMT_HAS_CLUSTERS 0
#define CMT_CLUSTER_Z(n)
#else
#define CMT_HAS_CLUSTERS 1
#define CMT_CLUSTER_Z(n) __cluster_dims__(1, 1, n)
#endif

#if CMT_HAS_CLUSTERS
// Every thread of every block in the cluster arrives; shared-memory writes before it are visible
// to the whole cluster after it.
CMT_DEVICE void cmt_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// 16-byte load from the shared memory of the cluster's block `rank`, at the offset the 32-bit
// shared address `local` has in ours.
CMT_DEVICE float4 cmt_cluster_load4(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

// Two doubles from the shared memory of the cluster's block `rank`, at the offset the 32-bit shared
// address `local` has in ours.
CMT_DEVICE double2 cmt_cluster_load_f64x2(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  double2 v;
  asm volatile("ld.shared::cluster.v2.f64 {%0, %1}, [%2];\n" : "=d"(v.x), "=d"(v.y) : "r"(remote) : "memory");
  return v;
}

// The end of a cluster split-K kernel: the CLUSTER_K blocks of the cluster (ranks
// blockIdx.z % CLUSTER_K) hold partial sums of the same block tile. Each parks its partial in its
// own shared memory (BM x BN floats at the 32-bit shared address `smem`), then rank r sums the
// float4 groups g with g % CLUSTER_K == r over ranks 0, 1, ... in that order (deterministic) and
// writes them to C.
// Every thread of every block must call this (it holds cluster barriers); the threads
// tid < TILE_THREADS hold the partials. The caller has no shared-memory reads or copies pending.
template <int CLUSTER_K, int TILE_THREADS, class Tile>
CMT_DEVICE void cmt_cluster_reduce_store(const Tile& tile, unsigned smem, int tid, float* C, int ldc, int M, int N,
                                         int block_m, int block_n, float alpha, float beta, bool interior,
                                         bool vector_c) {
  constexpr int GROUPS = Tile::ROWS * Tile::COLS / 4;  // float4 groups of accumulators per thread
  // A cluster is CLUSTER_K consecutive blocks along z (several clusters along z with strided batches).
  const int rank = blockIdx.z % CLUSTER_K;
  __syncthreads();
  const unsigned parked = smem + tid * 16;  // this thread's float4 of group g at parked + g * TILE_THREADS * 16
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      const float* v = &tile.acc[(4 * g) / Tile::COLS][(4 * g) % Tile::COLS];
      asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(parked + g * TILE_THREADS * 16), "f"(v[0]),
                   "f"(v[1]), "f"(v[2]), "f"(v[3])
                   : "memory");
    }
  }
  cmt_cluster_sync();
  if (tid < TILE_THREADS) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
      if (g % CLUSTER_K != rank) continue;
      const unsigned slot = parked + g * TILE_THREADS * 16;
      float4 sum = cmt_cluster_load4(slot, 0);
#pragma unroll
      for (int q = 1; q < CLUSTER_K; ++q) {
        const float4 v = cmt_cluster_load4(slot, q);
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
      const float out[4] = {sum.x, sum.y, sum.z, sum.w};
      tile.store_group(C, ldc, M, N, block_m, block_n, (4 * g) / Tile::COLS, (4 * g) % Tile::COLS, out, alpha, beta,
                       interior, vector_c);
    }
  }
  cmt_cluster_sync();  // no block leaves while another may still read its shared memory
}

// Rank `rank` of a CLUSTER_K-way split of k_tiles k tiles takes [*begin, *end).
template <int CLUSTER_K>
CMT_DEVICE void cmt_cluster_k_range(int k_tiles, int rank, int& begin, int& end) {
  begin = (int)((long long)rank * k_tiles / CLUSTER_K);
  end = (int)((long long)(rank + 1) * k_tiles / CLUSTER_K);
}
#endif
