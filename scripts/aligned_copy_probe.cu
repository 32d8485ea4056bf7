// What would copying A and B into 16-byte-aligned buffers first buy at a size with odd leading
// dimensions (diagnostics for the GPU machine, not part of the tool)? Built and run by
// scripts/aligned_copy_probe.sh:
//   scripts/aligned_copy_probe.sh 64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,0,8 64,128,32,32,64,2,4,4,3,4,4,2,1,4,4,0,16 1023x1023x1023
// RAW_BUILD (a VEC=1 multistage build) multiplies the inputs as they are: row-major, lda = K,
// ldb = ldc = N. A pack kernel copies A to M x K4 and B to K4 x N4 (K4, N4: K and N rounded up to a
// multiple of 4; the padding is zero), and ALIGNED_BUILD (a VEC=4 build) multiplies those copies into
// a C with ldc = N4 (its 16-byte stores need it). Interleaved rounds, L2 flushed before every sample;
// prints medians (events) and their ratio to cuBLAS (cublasSgemm, FP32) from the same rounds.
#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "aligned_copy_probe_builds.h"  // written by the script: #define RAW_BUILD ..., ALIGNED_BUILD ...
#include "multistage.cuh"
#include "multistage_build.h"

#define CHECK_CUBLAS(call)                                                                   \
  do {                                                                                       \
    const cublasStatus_t status = (call);                                                    \
    if (status != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s failed at %s:%d: status %d\n", #call, __FILE__, __LINE__, int(status)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

// Row y < M of the grid copies row y of A (K floats) into Ap (row length k4); row M + y copies row y
// of B (N floats, zero for y >= K) into Bp (row length n4). One float4 of the copy per thread.
__global__ void pack_aligned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ Ap, float* __restrict__ Bp, int k4, int n4) {
  const bool a_row = blockIdx.y < unsigned(M);
  const int row = a_row ? blockIdx.y : blockIdx.y - M;
  const int width = a_row ? K : N, out_width = a_row ? k4 : n4;
  const int col = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (col >= out_width) return;
  const float* src = a_row ? A + size_t(row) * K : B + size_t(row) * N;
  const bool inside = a_row || row < K;
  float4 v;
  v.x = inside && col < width ? src[col] : 0.0f;
  v.y = inside && col + 1 < width ? src[col + 1] : 0.0f;
  v.z = inside && col + 2 < width ? src[col + 2] : 0.0f;
  v.w = inside && col + 3 < width ? src[col + 3] : 0.0f;
  float* dst = a_row ? Ap + size_t(row) * k4 : Bp + size_t(row) * n4;
  *reinterpret_cast<float4*>(dst + col) = v;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [rounds]\n", argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 200;
  if (m <= 0 || n <= 0 || k <= 0 || rounds <= 0) {
    std::fprintf(stderr, "M, N, K and rounds must be positive\n");
    return 2;
  }
  const int k4 = (k + 3) / 4 * 4, n4 = (n + 3) / 4 * 4;
  if (m + k4 > 65535) {
    std::fprintf(stderr, "M + K (rounded up to 4) must be at most 65535: the pack kernel gives each row of A and B one row of blocks\n");
    return 2;
  }
  const MultistageBuild raw = make_multistage_build<RAW_BUILD>();
  const MultistageBuild aligned = make_multistage_build<ALIGNED_BUILD>();

  std::vector<float> host(size_t(std::max(m, k)) * std::max(n, k) + 17);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  float *a, *b, *c, *c_cublas, *a_packed, *b_packed, *flush;
  const size_t flush_bytes = size_t(256) << 20;  // larger than the L2 of an H100 or H200
  CHECK(cudaMalloc(&a, size_t(m) * k * 4));
  CHECK(cudaMalloc(&b, size_t(k) * n * 4));
  CHECK(cudaMalloc(&c, size_t(m) * n4 * 4));
  CHECK(cudaMalloc(&c_cublas, size_t(m) * n * 4));
  CHECK(cudaMalloc(&a_packed, size_t(m) * k4 * 4));
  CHECK(cudaMalloc(&b_packed, size_t(k4) * n4 * 4));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMemcpy(a, host.data(), size_t(m) * k * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, host.data() + 17, size_t(k) * n * 4, cudaMemcpyHostToDevice));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const float one = 1.0f, zero = 0.0f;

  auto run_cublas = [&] {  // row-major C = A B is column-major C^T = B^T A^T
    CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c_cublas, n));
  };
  auto run_raw = [&] { raw.launch(m, n, k, a, k, b, n, 0.0f, c, n); };
  auto run_pack = [&] {
    const dim3 grid((std::max(k4, n4) / 4 + 127) / 128, m + k4);
    pack_aligned<<<grid, 128>>>(m, n, k, a, b, a_packed, b_packed, k4, n4);
  };
  auto run_aligned = [&] { aligned.launch(m, n, k4, a_packed, k4, b_packed, n4, 0.0f, c, n4); };

  std::vector<float> expected(size_t(m) * n), got(size_t(m) * n);
  run_cublas();
  CHECK(cudaMemcpy(expected.data(), c_cublas, expected.size() * 4, cudaMemcpyDeviceToHost));
  auto check = [&](const char* what, int ldc) {
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2D(got.data(), size_t(n) * 4, c, size_t(ldc) * 4, size_t(n) * 4, m, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::fabs(double(got[i]) - expected[i]) / (1.0 + std::fabs(double(expected[i]))));
    if (worst > 1e-3) {
      std::fprintf(stderr, "%s differs from cuBLAS: max relative error %.3g\n", what, worst);
      std::exit(1);
    }
    CHECK(cudaMemset(c, 0, size_t(m) * n4 * 4));
  };
  run_raw();
  check("raw build", n);
  run_pack();
  run_aligned();
  check("pack + aligned build", n4);

  const char* names[] = {"cuBLAS", "raw build", "pack", "aligned build on the copies", "pack + aligned build"};
  constexpr int VARIANTS = 5;
  std::vector<std::vector<float>> samples(VARIANTS);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int warmup = 3;
  for (int round = 0; round < warmup + rounds; ++round)
    for (int v = 0; v < VARIANTS; ++v) {
      CHECK(cudaMemsetAsync(flush, round + v, flush_bytes));
      CHECK(cudaEventRecord(start));
      if (v == 0) run_cublas();
      if (v == 1) run_raw();
      if (v == 2 || v == 4) run_pack();
      if (v == 3 || v == 4) run_aligned();
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (round >= warmup) samples[v].push_back(ms * 1e3f);
    }
  std::printf("%dx%dx%d, %d rounds, medians (us) and cuBLAS / variant:\n", m, n, k, rounds);
  float cublas_us = 0;
  for (int v = 0; v < VARIANTS; ++v) {
    std::sort(samples[v].begin(), samples[v].end());
    const float median = samples[v][samples[v].size() / 2];
    if (v == 0) cublas_us = median;
    std::printf("  %-28s %8.2f  %6.3fx\n", names[v], median, cublas_us / median);
  }
  return 0;
}
