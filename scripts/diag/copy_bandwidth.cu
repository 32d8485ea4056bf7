// The device-to-device copy bandwidth of GPU 0: the reference of the bandwidth goals for the
// GEMV-like and small-K families (docs/BENCHMARKS.md). Copies 256 MiB with cudaMemcpyAsync, 20
// times after a warm-up, and prints the median rate counting bytes read plus bytes written.
// Build and run: nvcc -O2 -o /tmp/copy_bandwidth scripts/diag/copy_bandwidth.cu && /tmp/copy_bandwidth
#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    const cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(err_)); \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

int main() {
  const size_t bytes = size_t(256) << 20;
  void *src = nullptr, *dst = nullptr;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemset(src, 1, bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 21; ++i) {
    CHECK(cudaEventRecord(start));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i > 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s: device-to-device copy of %zu MiB: median %.3f ms, %.0f GB/s (read + write)\n", prop.name,
              bytes >> 20, median, 2.0 * bytes / (median * 1e-3) / 1e9);
  return 0;
}
