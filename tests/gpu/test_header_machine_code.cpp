// A header of machine code on the GPU, built by g++ alone (no nvcc, no GPU architecture named): the
// first calls of 8 threads at once load each library once, and the program loads no more than one
// thread does; a header whose only table is for another device falls back correctly (same compute
// capability: that table; another one: the generic defaults, from the PTX the driver compiles).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sstream>
#include <string>

#include "store/sqlite.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using test::run_ok;

/// g++ with the CUDA runtime's headers and library only.
std::string gpp_build(const test::TempDir& dir, const std::string& source, const std::string& program) {
  const std::string cuda = test::cuda_root();
  return fmt::format("g++ -std=c++17 -O2 -I {} -I {}/include -o {} {} -L {}/lib64 -lcudart -lpthread", dir.path().string(),
                     cuda, (dir / program).string(), (dir / source).string(), cuda);
}

/// `threads` threads (each on its own stream, started together) call sgemm, dgemm and igemm on
/// all-ones inputs and check every element of C (K exactly); then prints "loads N" (the libraries the
/// program loaded), "first_us X" (the first call of thread 0, loading included) and "second_us Y".
constexpr const char* k_program = R"prog(#include "tuned.cuh"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

template <class T, class Gemm>
static bool run(int m, int n, int k, cudaStream_t s, Gemm gemm, double* us) {
  T *a = 0, *b = 0, *c = 0;
  std::vector<T> ones(static_cast<size_t>(m > n ? m : n) * k, T(1)), out(static_cast<size_t>(m) * n);
  if (cudaMalloc(&a, sizeof(T) * m * k) || cudaMalloc(&b, sizeof(T) * k * n) || cudaMalloc(&c, sizeof(T) * m * n)) return false;
  cudaMemcpy(a, ones.data(), sizeof(T) * m * k, cudaMemcpyHostToDevice);
  cudaMemcpy(b, ones.data(), sizeof(T) * k * n, cudaMemcpyHostToDevice);
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t e = gemm(m, n, k, T(1), a, k, b, n, T(0), c, n, s);
  if (us) *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (e != cudaSuccess) { std::printf("error %s\n", cudaGetErrorName(e)); return false; }
  cudaStreamSynchronize(s);
  cudaMemcpy(out.data(), c, sizeof(T) * m * n, cudaMemcpyDeviceToHost);
  cudaFree(a); cudaFree(b); cudaFree(c);
  for (const T& v : out) if (v != T(k)) { std::printf("mismatch %g\n", double(v)); return false; }
  return true;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int m = argc > 2 ? std::atoi(argv[2]) : 256;
  cudaFree(0);   // the context first: its creation is not the header's cost
  std::atomic<int> ready(0), failures(0);
  double first_us = -1, second_us = -1;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      ready.fetch_add(1);
      while (ready.load() < threads) {}
      bool ok = run<float>(m, m, m, s, [](int M, int N, int K, float al, const float* A, int lda, const float* B, int ldb,
                                          float be, float* C, int ldc, cudaStream_t st) {
        return cmtune::sgemm(M, N, K, al, A, lda, B, ldb, be, C, ldc, st);
      }, t == 0 ? &first_us : 0);
      ok = ok && run<float>(m, m, m, s, [](int M, int N, int K, float al, const float* A, int lda, const float* B, int ldb,
                                           float be, float* C, int ldc, cudaStream_t st) {
        return cmtune::sgemm(M, N, K, al, A, lda, B, ldb, be, C, ldc, st);
      }, t == 0 ? &second_us : 0);
      ok = ok && run<double>(96, 80, 72, s, [](int M, int N, int K, double al, const double* A, int lda, const double* B,
                                               int ldb, double be, double* C, int ldc, cudaStream_t st) {
        return cmtune::dgemm(M, N, K, al, A, lda, B, ldb, be, C, ldc, st);
      }, 0);
      ok = ok && run<int>(96, 80, 72, s, [](int M, int N, int K, int al, const int* A, int lda, const int* B, int ldb,
                                            int be, int* C, int ldc, cudaStream_t st) {
        return cmtune::igemm(M, N, K, al, A, lda, B, ldb, be, C, ldc, st);
      }, 0);
      if (!ok) failures.fetch_add(1);
      cudaStreamDestroy(s);
    });
  for (auto& t : pool) t.join();
  const char* table = 0;
  cmtune::device_table_name(&table);
  const char* kernel = 0;
  float* p = reinterpret_cast<float*>(256);
  cmtune::kernel_name(m, m, m, p, m, p, m, p, m, &kernel);
  std::printf("table %s\nkernel %s\nloads %d\nfirst_us %.1f\nsecond_us %.1f\nfailures %d\n", table ? table : "none",
              kernel ? kernel : "none", cmtune::detail::library_loads().load(), first_us, second_us, failures.load());
  return failures.load() == 0 ? 0 : 1;
}
)prog";

/// The value of "key VALUE" in a program's output.
std::string field(const std::string& output, const std::string& key) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

class HeaderMachineCode : public ::testing::Test {
 protected:
  void SetUp() override {
    CMT_REQUIRE_GPU();
    test::write_file(m_dir / "preset.toml", R"toml(name = "machine-code"
description = "two builds of the generic default's template, neither the generic default (BM 64)"
[tune]
budget_ms = 10
min_samples = 5
max_samples = 50
retime_top = 1
retime_rounds = 5
[templates.blocktile2d]
BM = [32, 128]
BN = [64]
BK = [8]
TM = [8]
TN = [4]
)toml");
    run_ok(test::cmtune_binary() + " --quiet --db " + db() + " tune --device 0 --sizes 256 --config " +
           (m_dir / "preset.toml").string() + " --no-calibrate --seed 5");
    test::write_file(m_dir / "program.cpp", k_program);
  }
  std::string db() const { return (m_dir / "tune.db").string(); }
  /// Exports, builds the program with g++ and runs it with `args`.
  test::CommandResult export_build_run(const std::string& args) {
    run_ok(test::cmtune_binary() + " --quiet --db " + db() + " export --out " + (m_dir / "tuned.cuh").string());
    run_ok(gpp_build(m_dir, "program.cpp", "program"));
    return test::run_command((m_dir / "program").string() + " " + args);
  }
  test::TempDir m_dir;
};

TEST_F(HeaderMachineCode, FirstCallsOfEightThreadsLoadEachLibraryOnce) {
  const auto one = export_build_run("1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto eight = test::run_command((m_dir / "program").string() + " 8");
  ASSERT_EQ(eight.exit_code, 0) << eight.output;
  EXPECT_NE(field(one.output, "table"), "none") << one.output;
  EXPECT_NE(field(one.output, "kernel").find("cmt_sgemm_blocktile2d<"), std::string::npos) << one.output;
  // The same calls need the same libraries: 8 threads racing to the first call load none twice.
  EXPECT_GE(std::stoi(field(one.output, "loads")), 1) << one.output;
  EXPECT_EQ(field(eight.output, "loads"), field(one.output, "loads")) << one.output << "\n" << eight.output;
  std::printf("one thread:\n%s8 threads:\n%s", one.output.c_str(), eight.output.c_str());
}

TEST_F(HeaderMachineCode, ATableForAnotherDeviceFallsBackCorrectly) {
  {
    // Another device of the same compute capability: its table serves this GPU.
    Database raw(db());
    raw.exec("UPDATE devices SET name = 'Another GPU', sm_count = sm_count + 2");
  }
  const auto same_cc = export_build_run("2");
  ASSERT_EQ(same_cc.exit_code, 0) << same_cc.output;
  EXPECT_EQ(field(same_cc.output, "table"), "Another GPU") << same_cc.output;
  {
    // A device of another compute capability: no table serves this GPU, so every call runs a generic
    // default, from the runtime library's PTX (its only cubin is for the table's architecture).
    Database raw(db());
    raw.exec("UPDATE devices SET cc_major = CASE WHEN cc_major = 8 THEN 9 ELSE 8 END, cc_minor = 0");
  }
  const auto other_cc = export_build_run("2");
  ASSERT_EQ(other_cc.exit_code, 0) << other_cc.output;
  EXPECT_EQ(field(other_cc.output, "table"), "none") << other_cc.output;
  EXPECT_NE(field(other_cc.output, "kernel").find("cmt_sgemm_blocktile2d<64, 64, 8, 8, 4"), std::string::npos)
      << other_cc.output;
  std::printf("same compute capability:\n%sanother:\n%s", same_cc.output.c_str(), other_cc.output.c_str());
}

}  // namespace
}  // namespace cmt
