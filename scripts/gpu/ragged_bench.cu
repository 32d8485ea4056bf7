// Ragged and misaligned FP32 calls through an exported header: odd leading dimensions (tight ragged
// squares, and aligned sizes with every leading dimension one wider) and operands one float past an
// aligned address. For each call it times cuBLAS SGEMM (TF32 off), the header's sgemm (FP32 on the
// CUDA cores) and its opted-in sgemm_tf32x3, interleaved with an L2 flush before every sample, and
// measures each one's largest error against an FP64 reference (cuBLAS DGEMM of the same inputs) in
// units of 2^-24 of each element's scale (sum over k of |a||b|). `bench` times tight, aligned calls
// only; scripts/gpu/benchmarks.sh builds this program against the tf32x3 phase's header.
//
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -DCMTUNE_HEADER='"tuned.cuh"' ragged_bench.cu -lcublas
// Run:   ragged_bench [rounds]   -> one JSON object per call on stdout; exit 1 when a result of the
//        header is wrong (its error over cuBLAS SGEMM's by more than the tf32x3 bar of 12 units).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include CMTUNE_HEADER

namespace {

void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "ragged_bench.cu:%d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(2);
  }
}
void check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "ragged_bench.cu:%d: %s: cuBLAS status %d\n", line, what, static_cast<int>(s));
    std::exit(2);
  }
}
#define CHECK(call) check((call), #call, __LINE__)

struct Case {
  const char* name;
  int m, n, k;
  bool trans_b;   // nt: B stored N x K
  int ld_extra;   // every leading dimension this much wider than the stored width
  int offset;     // A, B and C start this many floats past an aligned address
};

// Rows x columns as stored (row-major), with the leading dimension.
struct Stored {
  int rows, cols;
  long long ld;
  size_t elements() const { return static_cast<size_t>(rows - 1) * ld + cols; }
};

constexpr double k_unit = 1.0 / (1 << 24);
constexpr double k_tf32x3_bar = 12.0;   // tune's bar: tf32x3 may exceed SGEMM's error by the split's own

template <typename T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

// The largest error of `got` against `ref`, in units of 2^-24 of `scale` (both FP64), over the M x N
// results (row-major, leading dimension ldc).
double error_units(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& scale,
                   int m, int n, long long ldc) {
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i) * ldc + j;
      const double d = std::fabs(static_cast<double>(got[at]) - ref[static_cast<size_t>(i) * n + j]);
      const double s = scale[static_cast<size_t>(i) * n + j];
      const double u = s > 0 ? d / s / k_unit : (d > 0 ? INFINITY : 0);
      if (!(u <= worst)) worst = u;   // NaN counts as the worst
    }
  return worst;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(5, std::atoi(argv[1])) : 30;
  const Case cases[] = {
      {"1025^3 nn, tight (odd ld)", 1025, 1025, 1025, false, 0, 0},
      {"1025^3 nt, tight (odd ld)", 1025, 1025, 1025, true, 0, 0},
      {"2049^3 nn, tight (odd ld)", 2049, 2049, 2049, false, 0, 0},
      {"1024^3 nn, ld + 1", 1024, 1024, 1024, false, 1, 0},
      {"1024^3 nt, ld + 1", 1024, 1024, 1024, true, 1, 0},
      {"4096^3 nn, ld + 1", 4096, 4096, 4096, false, 1, 0},
      {"1024^3 nn, A+1 B+1 C+1", 1024, 1024, 1024, false, 0, 1},
      {"1024^3 nt, A+1 B+1 C+1", 1024, 1024, 1024, true, 0, 1},
      {"4096^3 nn, A+1 B+1 C+1", 4096, 4096, 4096, false, 0, 1},
      {"4096^3 nt, A+1 B+1 C+1", 4096, 4096, 4096, true, 0, 1},
  };
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle));
  CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));   // TF32 off: SGEMM on the CUDA cores
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cublasSetStream(handle, stream));
  int l2 = 0;
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t flush_bytes = 2 * static_cast<size_t>(l2);
  char* flush = device_alloc<char>(flush_bytes);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  bool all_ok = true;

  for (const Case& c : cases) {
    const Stored a{c.m, c.k, c.k + c.ld_extra};
    const Stored b = c.trans_b ? Stored{c.n, c.k, c.k + c.ld_extra} : Stored{c.k, c.n, c.n + c.ld_extra};
    const Stored cm{c.m, c.n, c.n + c.ld_extra};
    std::vector<float> ha(a.elements()), hb(b.elements());
    for (auto& x : ha) x = uniform(rng);
    for (auto& x : hb) x = uniform(rng);
    float* da = device_alloc<float>(a.elements() + c.offset);
    float* db = device_alloc<float>(b.elements() + c.offset);
    float* dc = device_alloc<float>(cm.elements() + c.offset);
    float* A = da + c.offset;
    float* B = db + c.offset;
    float* C = dc + c.offset;
    CHECK(cudaMemcpy(A, ha.data(), ha.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(B, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));
    const cmtune::Op op_b = c.trans_b ? cmtune::Op::T : cmtune::Op::N;
    const int lda = static_cast<int>(a.ld), ldb = static_cast<int>(b.ld), ldc = static_cast<int>(cm.ld);
    const float one = 1.0f, zero = 0.0f;

    // Row-major C = A op(B) is column-major C^T = op(B)^T A^T.
    auto run_cublas = [&] {
      return cublasSgemm(handle, c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, c.n, c.m, c.k, &one, B, ldb, A,
                         lda, &zero, C, ldc) == CUBLAS_STATUS_SUCCESS
                 ? cudaSuccess
                 : cudaErrorUnknown;
    };
    auto run_f32 = [&] { return cmtune::sgemm(cmtune::Op::N, op_b, c.m, c.n, c.k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, stream); };
    auto run_x3 = [&] {
      return cmtune::sgemm_tf32x3(cmtune::Op::N, op_b, c.m, c.n, c.k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, stream);
    };

    // The FP64 reference and each element's scale, by cuBLAS DGEMM on tight double copies.
    std::vector<double> ref(static_cast<size_t>(c.m) * c.n), scale(ref.size());
    {
      std::vector<double> a64(static_cast<size_t>(c.m) * c.k), b64(static_cast<size_t>(c.k) * c.n);
      for (int i = 0; i < c.m; ++i)
        for (int k = 0; k < c.k; ++k) a64[static_cast<size_t>(i) * c.k + k] = ha[static_cast<size_t>(i) * a.ld + k];
      for (int k = 0; k < c.k; ++k)
        for (int j = 0; j < c.n; ++j)
          b64[static_cast<size_t>(k) * c.n + j] =
              c.trans_b ? hb[static_cast<size_t>(j) * b.ld + k] : hb[static_cast<size_t>(k) * b.ld + j];
      double* d64a = device_alloc<double>(a64.size());
      double* d64b = device_alloc<double>(b64.size());
      double* d64c = device_alloc<double>(ref.size());
      const double one64 = 1.0, zero64 = 0.0;
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
          for (auto& x : a64) x = std::fabs(x);
          for (auto& x : b64) x = std::fabs(x);
        }
        CHECK(cudaMemcpy(d64a, a64.data(), a64.size() * sizeof(double), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d64b, b64.data(), b64.size() * sizeof(double), cudaMemcpyHostToDevice));
        CHECK(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, c.n, c.m, c.k, &one64, d64b, c.n, d64a, c.k, &zero64, d64c,
                          c.n));
        CHECK(cudaMemcpy(pass == 0 ? ref.data() : scale.data(), d64c, ref.size() * sizeof(double),
                         cudaMemcpyDeviceToHost));
      }
      CHECK(cudaFree(d64a));
      CHECK(cudaFree(d64b));
      CHECK(cudaFree(d64c));
    }
    std::vector<float> got(cm.elements());
    auto error_of = [&](auto run) {
      CHECK(cudaMemset(C, 0xff, cm.elements() * sizeof(float)));   // NaN: every element must be written
      CHECK(run());
      CHECK(cudaStreamSynchronize(stream));
      CHECK(cudaMemcpy(got.data(), C, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
      return error_units(got, ref, scale, c.m, c.n, cm.ld);
    };
    const double err_cublas = error_of(run_cublas), err_f32 = error_of(run_f32), err_x3 = error_of(run_x3);

    // Interleaved timing: every implementation once per round, each after an L2 flush.
    std::vector<float> samples[3];
    for (int r = -2; r < rounds; ++r)   // two rounds of warm-up
      for (int i = 0; i < 3; ++i) {
        CHECK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, stream));
        CHECK(cudaEventRecord(start, stream));
        CHECK(i == 0 ? run_cublas() : i == 1 ? run_f32() : run_x3());
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 0) samples[i].push_back(ms);
      }
    const double flops = 2.0 * c.m * c.n * c.k;
    double tf[3];
    for (int i = 0; i < 3; ++i) tf[i] = flops / (median(samples[i]) * 1e-3) / 1e12;

    const char* f32_kernel = "?";
    const char* x3_kernel = "?";
    CHECK(cmtune::kernel_name(cmtune::Op::N, op_b, c.m, c.n, c.k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, &f32_kernel));
    CHECK(cmtune::kernel_name_tf32x3(cmtune::Op::N, op_b, c.m, c.n, c.k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1,
                                     &x3_kernel));
    const bool ok = err_f32 <= err_cublas + k_tf32x3_bar && err_x3 <= err_cublas + k_tf32x3_bar;
    all_ok = all_ok && ok;
    std::printf(
        "{\"case\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"layout\": \"%s\", \"lda\": %d, \"ldb\": %d, \"ldc\": %d, "
        "\"offset\": %d, \"rounds\": %d, \"cublas_tflops\": %.3f, \"sgemm_tflops\": %.3f, \"tf32x3_tflops\": %.3f, "
        "\"sgemm_kernel\": \"%s\", \"tf32x3_kernel\": \"%s\", \"err_cublas\": %.3f, \"err_sgemm\": %.3f, "
        "\"err_tf32x3\": %.3f, \"ok\": %s}\n",
        c.name, c.m, c.n, c.k, c.trans_b ? "nt" : "nn", lda, ldb, ldc, c.offset, rounds, tf[0], tf[1], tf[2], f32_kernel,
        x3_kernel, err_cublas, err_f32, err_x3, ok ? "true" : "false");
    std::fflush(stdout);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
  }
  return all_ok ? 0 : 1;
}
