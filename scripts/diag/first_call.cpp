// The first call's extra latency of a header of machine code: in a fresh process, the wall time of
// the first sgemm (which loads the kernel's library) and of the second, each synchronized, at each
// size given, and the libraries loaded. Build with the C++ compiler alone:
//   g++ -std=c++17 -O2 -DCMTUNE_HEADER_PATH='"tuned_sgemm.cuh"' -I/usr/local/cuda/include \
//       scripts/diag/first_call.cpp -L/usr/local/cuda/lib64 -lcudart -o first_call
//   first_call 1024        (one size per process: each size's first call is a first call)
#include CMTUNE_HEADER_PATH

#include <chrono>
#include <cstdio>
#include <cstdlib>

static double call_us(int n, float* a, float* b, float* c) {
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t e = cmtune::sgemm(n, n, n, 1.f, a, n, b, n, 0.f, c, n, 0);
  const cudaError_t s = cudaDeviceSynchronize();
  if (e != cudaSuccess || s != cudaSuccess) {
    std::printf("error %s\n", cudaGetErrorName(e != cudaSuccess ? e : s));
    std::exit(1);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const size_t bytes = sizeof(float) * n * n;
  if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes) || cudaMalloc(&c, bytes)) return 1;
  cudaMemset(a, 0, bytes);
  cudaMemset(b, 0, bytes);
  cudaDeviceSynchronize();   // the context and the buffers first: they are not the header's cost
  const double first = call_us(n, a, b, c);
  const int loads = cmtune::detail::library_loads().load();
  const double second = call_us(n, a, b, c);
  const char* kernel = nullptr;
  cmtune::kernel_name(n, n, n, a, n, b, n, c, n, &kernel);
  std::printf("%d first_us %.1f second_us %.1f extra_us %.1f loads %d kernel %s\n", n, first, second, first - second,
              loads, kernel ? kernel : "none");
  return 0;
}
