// The host cost of one call of the exported header's dispatch, for comparing the run-time code of
// two commits (scripts/diag/record_overhead.sh builds this against each): the header's run-time
// files (tuner/export/runtime/, found as "export/runtime/..." on the include path) around a small
// hand-written table, as tests/cuda/test_header_runtime.cu does. Host only: no GPU or driver is
// needed. Without a driver every call of sgemm stops at cudaGetDevice (cudaErrorInsufficientDriver),
// after the argument checks, make_call and, from the recording commit on, the recording check; with
// a GPU it stops at the launch of a kernel that does nothing. Prints nanoseconds per call: the median
// of `rounds` rounds of `calls` calls each.
#if __has_include("export/runtime/header_includes.h")
#include "export/runtime/header_includes.h"
#else
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

#include "export/runtime/header_types.cuh"

namespace detail {

#include "export/runtime/dispatch_rules.h"

template <class T>
__global__ void kernel(int, int, int, T, const T*, int, const T*, int, T, T*, int, long long, long long, long long) {}

constexpr int k_generic_kernels[k_dtype_count][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}};
constexpr int k_kernel_count = 3;
constexpr KernelInfo k_kernels[k_kernel_count] = {
    {"generic_f32", "src_a", 128, 64, 64, 0, 1, 4, 1, 0, 1, 0, 0},
    {"generic_f64", "src_a", 128, 64, 64, 0, 1, 8, 1, 0, 1, 0, 1},
    {"generic_i32", "src_a", 128, 64, 64, 0, 1, 4, 1, 0, 1, 0, 2},
};
constexpr Entry k_entries_0[] = {{{1024, 1024, 1024, 0, 1, 0, 0}, 0, 0}};
constexpr KernelModel k_models_0[] = {{0, 1, {3, 0.4, 0, 0}, 16, 8192, 16, 8192, 16, 8192}};
constexpr int k_device_table_count = 1;
constexpr DeviceTable k_device_tables[k_device_table_count] = {
    {"NVIDIA H100 80GB HBM3", 9, 0, 132, k_entries_0, 1, k_models_0, 1}};
inline const void* kernel_function(int index) {
  switch (index) {
    case 0: return reinterpret_cast<const void*>(static_cast<TypedBatchedKernelFn<float>>(&kernel<float>));
    case 1: return reinterpret_cast<const void*>(static_cast<TypedBatchedKernelFn<double>>(&kernel<double>));
    case 2: return reinterpret_cast<const void*>(static_cast<TypedBatchedKernelFn<int>>(&kernel<int>));
    default: return nullptr;
  }
}

}  // namespace detail

#if __has_include("export/runtime/call_recorder.cuh")
#include "export/runtime/call_recorder.cuh"
#endif
#include "export/runtime/header_api.cuh"

}  // namespace bench

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 200000;
  float* buffer = nullptr;
  const bool gpu = cudaMalloc(&buffer, sizeof(float) * 1024 * 1024) == cudaSuccess;
  if (!gpu) {
    static float host[1024 * 1024 + 64];
    buffer = reinterpret_cast<float*>((reinterpret_cast<size_t>(host) + 255) & ~size_t(255));
  }
  cudaError_t status = cudaSuccess;
  std::vector<double> ns;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c)
      status = bench::sgemm(bench::Op::N, bench::Op::N, 1024, 1024, 1024, 1.0f, buffer, 1024, buffer, 1024, 0.0f,
                            buffer, 1024);
    if (gpu) cudaDeviceSynchronize();
    const auto stop = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / calls);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%.2f ns per sgemm call (median of %d rounds of %d; min %.2f, max %.2f; status %s)\n", ns[ns.size() / 2],
              rounds, calls, ns.front(), ns.back(), cudaGetErrorName(status));
  return 0;
}
