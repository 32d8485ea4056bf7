// Per-block timing of one multistage kernel on the GPU machine (diagnostics, not part of the tool):
// which blocks finish last, and on which SMs. Built and run by scripts/diag/block_times.sh, which
// writes block_times_build.h (the kernel instantiation and launch shape of one candidate, from
// `cm-tune list --candidates --json`):
//   scripts/diag/block_times.sh 'multistage[BM=64,BN=128,...,A_CHUNK=8,TRANS_A=0,TRANS_B=0]' 1025x1024x1025 1024x1024x1025
// Row-major A, B, C with lda = K, ldb = ldc = N, alpha = 1, beta from the command line (default 0,
// as the tuner times). Each round flushes L2 first. Prints the median kernel time (events), each
// block's mean duration in launch order, and the blocks that end last.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cmt_diag_block_times.cuh"  // first: turns on the kernel's CMT_DIAG_BLOCK_TIMES hook
#include "multistage.cuh"

#define CHECK(call)                                                                                            \
  do {                                                                                                         \
    const cudaError_t status = (call);                                                                         \
    if (status != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(status)); \
      std::exit(1);                                                                                            \
    }                                                                                                          \
  } while (0)

// One candidate: its id, kernel and launch shape (grid (ceil(N/tile_n), ceil(M/tile_m)), 1-D blocks).
struct BlockTimesBuild {
  const char* id;
  // multistage is batched: the batch strides follow ldc (one matrix here: grid z = 1, strides 0).
  void (*kernel)(int, int, int, float, const float*, int, const float*, int, float, float*, int, long long, long long,
                 long long);
  int threads, tile_m, tile_n, dynamic_smem, ld_multiple;
};
#include "block_times_build.h"  // written by block_times.sh: static const BlockTimesBuild kBuild = {...};

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [beta] [rounds]\n", argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const float beta = argc > 4 ? static_cast<float>(std::atof(argv[4])) : 0.0f;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 21;
  if (m <= 0 || n <= 0 || k <= 0 || rounds <= 0) {
    std::fprintf(stderr, "M, N, K and rounds must be positive\n");
    return 2;
  }
  if (n % kBuild.ld_multiple != 0 || k % kBuild.ld_multiple != 0) {
    std::fprintf(stderr, "%s needs N and K to be multiples of %d (lda = K, ldb = ldc = N)\n", kBuild.id,
                 kBuild.ld_multiple);
    return 2;
  }
  const dim3 grid((n + kBuild.tile_n - 1) / kBuild.tile_n, (m + kBuild.tile_m - 1) / kBuild.tile_m);
  const int blocks = static_cast<int>(grid.x * grid.y);
  if (blocks > CMT_DIAG_MAX_BLOCKS) {
    std::fprintf(stderr, "%d blocks: rebuild with a larger CMT_DIAG_MAX_BLOCKS\n", blocks);
    return 2;
  }
  CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kBuild.kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kBuild.dynamic_smem));

  const size_t a_size = size_t(m) * k, b_size = size_t(k) * n, c_size = size_t(m) * n;
  std::vector<float> host(std::max(a_size, b_size));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  float *a, *b, *c, *flush;
  const size_t flush_bytes = size_t(256) << 20;  // larger than the L2 of an H100 or H200
  CHECK(cudaMalloc(&a, a_size * 4));
  CHECK(cudaMalloc(&b, b_size * 4));
  CHECK(cudaMalloc(&c, c_size * 4));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMemcpy(a, host.data(), a_size * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, host.data(), b_size * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(c, 0, c_size * 4));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  std::vector<unsigned long long> times(3 * size_t(blocks));
  std::vector<double> duration(blocks, 0.0), begin(blocks, 0.0), end_worst(blocks, 0.0);
  std::vector<int> sm(blocks, -1);
  std::vector<float> kernel_ms;
  const int warmup = 3;
  for (int round = 0; round < warmup + rounds; ++round) {
    CHECK(cudaMemsetAsync(flush, round, flush_bytes));
    CHECK(cudaEventRecord(start));
    kBuild.kernel<<<grid, kBuild.threads, kBuild.dynamic_smem>>>(m, n, k, 1.0f, a, k, b, n, beta, c, n, 0, 0, 0);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    if (round < warmup) continue;
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    kernel_ms.push_back(ms);
    CHECK(cudaMemcpyFromSymbol(times.data(), cmt_block_times, times.size() * sizeof(times[0])));
    unsigned long long first = ~0ull;
    for (int i = 0; i < blocks; ++i) first = std::min(first, times[3 * i + 1]);
    for (int i = 0; i < blocks; ++i) {
      const double s = (times[3 * i + 1] - first) / 1e3, d = (times[3 * i + 2] - times[3 * i + 1]) / 1e3;
      begin[i] += s / rounds, duration[i] += d / rounds, end_worst[i] = std::max(end_worst[i], s + d);
      sm[i] = static_cast<int>(times[3 * i]);
    }
  }

  std::sort(kernel_ms.begin(), kernel_ms.end());
  std::vector<double> sorted = duration;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%s\n%dx%dx%d, beta %g, grid %ux%u, %d rounds: kernel median %.2f us (events); block duration "
              "median %.2f us, max %.2f us\n",
              kBuild.id, m, n, k, beta, grid.x, grid.y, rounds, kernel_ms[kernel_ms.size() / 2] * 1e3, sorted[blocks / 2],
              sorted.back());
  std::printf("mean block duration (us) in launch order, %u blocks per line:\n", grid.x);
  for (int i = 0; i < blocks; ++i) std::printf("%6.1f%s", duration[i], (i + 1) % grid.x == 0 ? "\n" : "");
  std::vector<int> order(blocks);
  for (int i = 0; i < blocks; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return begin[x] + duration[x] > begin[y] + duration[y]; });
  std::printf("last to end (block: SM, mean start, mean duration, worst end, us):\n");
  for (int i = 0; i < std::min(blocks, 8); ++i) {
    const int b = order[i];
    std::printf("  %d: SM %d, %.2f, %.2f, %.2f\n", b, sm[b], begin[b], duration[b], end_worst[b]);
  }
  return 0;
}
