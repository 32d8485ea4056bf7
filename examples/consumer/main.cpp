// Calls the tuned SGEMM of a header written by `cm-tune export`, checks the result against cuBLAS
// and times both. Copy this into your project; README.md says how to build it.
//
//   cmtune_example [M N K]      (default 1024 1024 1024)
#include CMTUNE_HEADER_PATH   // CMakeLists.txt sets it to the exported header, e.g. "tuned_sgemm.cuh"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <random>
#include <vector>

namespace tuned = CMTUNE_NS;   // the header's --namespace, `cmtune` by default

// Every CUDA and cuBLAS call is checked: on failure, print the call and the error, and exit.
static void check(cudaError_t e, const char* call, int line) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "line %d: %s failed: %s\n", line, call, cudaGetErrorString(e));
  std::exit(2);
}
static void check(cublasStatus_t s, const char* call, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "line %d: %s failed: cuBLAS status %d\n", line, call, static_cast<int>(s));
  std::exit(2);
}
#define CHECK(call) check((call), #call, __LINE__)

// Milliseconds per call of `run`, averaged over 20 calls after 3 warm-up calls.
template <typename Run>
static float time_ms(cudaStream_t stream, Run run) {
  for (int i = 0; i < 3; ++i) run();
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < 20; ++i) run();
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return ms / 20;
}

int main(int argc, char** argv) {
  const int M = argc == 4 ? std::atoi(argv[1]) : 1024, N = argc == 4 ? std::atoi(argv[2]) : 1024,
            K = argc == 4 ? std::atoi(argv[3]) : 1024;
  if (M < 1 || N < 1 || K < 1) {
    std::fprintf(stderr, "usage: %s [M N K], each >= 1\n", argv[0]);
    return 2;
  }
  const int lda = K, ldb = N, ldc = N;   // row-major, tight
  const float alpha = 1.0f, beta = 0.0f;  // C = A*B (beta != 0 would add beta*C)

  // Inputs in [-1, 1), and their absolute values for the error bound below.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N), ref(c.size());
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<float> abs_a(a.size()), abs_b(b.size());
  for (size_t i = 0; i < a.size(); ++i) abs_a[i] = std::fabs(a[i]);
  for (size_t i = 0; i < b.size(); ++i) abs_b[i] = std::fabs(b[i]);

  // Device copies of the host arrays (C's initial contents do not matter with beta = 0).
  auto to_device = [](const std::vector<float>& host) {
    float* p = nullptr;
    CHECK(cudaMalloc(&p, host.size() * sizeof(float)));
    CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return p;
  };
  float *A = to_device(a), *B = to_device(b), *C = to_device(c), *C_ref = to_device(c);
  float *abs_A = to_device(abs_a), *abs_B = to_device(abs_b), *abs_AB = to_device(c);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  // Which dispatch table serves this GPU, the problems it was tuned on, and the kernel this call gets
  // (the one tuned for the nearest problem whose input requirements the call meets).
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const char* table = nullptr;
  CHECK(tuned::device_table_name(&table));
  int count = 0;
  CHECK(tuned::tuned_problems(nullptr, 0, &count));
  std::vector<tuned::TunedProblem> problems(count);
  CHECK(tuned::tuned_problems(problems.data(), count, &count));
  std::printf("GPU: %s\ndispatch table: %s\ntuned problems:", prop.name, table ? table : "none (the generic kernel runs)");
  static const char* const k_types[] = {"", ":f64", ":i32"};   // by TunedProblem::dtype (dgemm, igemm)
  for (const auto& p : problems)
    std::printf(" %dx%dx%d%s", p.m, p.n, p.k, p.dtype == 1 || p.dtype == 2 ? k_types[p.dtype] : "");
  const char* kernel = nullptr;
  CHECK(tuned::kernel_name(M, N, K, A, lda, B, ldb, C, ldc, &kernel));
  std::printf("\nkernel for %dx%dx%d: %s\n", M, N, K, kernel);

  // The tuned SGEMM: row-major C = alpha*A*B + beta*C, like cublasSgemm with row-major arguments.
  CHECK(tuned::sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream));

  // cuBLAS in plain FP32 (no TF32). It is column-major, so compute C^T = B^T * A^T.
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle));
  CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  CHECK(cublasSetStream(handle, stream));
  auto cublas = [&](const float* x, const float* y, float* out) {
    CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, y, ldb, x, lda, &beta, out, ldc));
  };
  cublas(A, B, C_ref);
  cublas(abs_A, abs_B, abs_AB);   // |A||B|, for the error bound
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> abs_ab(c.size());
  CHECK(cudaMemcpy(c.data(), C, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ref.data(), C_ref, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(abs_ab.data(), abs_AB, c.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // Two FP32 dot products of length K, summed in any order, differ by at most
  // 2 (K + 4) 2^-24 |alpha| (|A||B|)ij: the bound cm-tune validates every kernel with.
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double tol = 2.0 * (K + 4) * std::ldexp(1.0, -24) * std::fabs(alpha) * abs_ab[i] + 1e-30;
    const double ratio = std::fabs(double(c[i]) - ref[i]) / tol;
    if (!(ratio <= 1.0)) ++bad;   // also counts NaN
    worst = std::fmax(worst, ratio);
  }
  std::printf("check against cuBLAS: %s (largest error %.3g of the tolerance, %zu elements over)\n",
              bad ? "FAILED" : "ok", worst, bad);

  // A quick time, inputs warm in L2 (for measured comparisons use `cm-tune bench`).
  const float ms = time_ms(stream, [&] { CHECK(tuned::sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream)); });
  const float cublas_ms = time_ms(stream, [&] { cublas(A, B, C_ref); });
  const double flop = 2.0 * M * N * K;
  std::printf("tuned: %.4f ms (%.2f TF/s)   cuBLAS: %.4f ms (%.2f TF/s)\n", ms, flop / ms / 1e9, cublas_ms,
              flop / cublas_ms / 1e9);

  CHECK(cublasDestroy(handle));
  CHECK(cudaStreamDestroy(stream));
  for (float* p : {A, B, C, C_ref, abs_A, abs_B, abs_AB}) CHECK(cudaFree(p));
  return bad ? 1 : 0;
}
