// The exported header's opt-in tf32x3 class on the GPU: tune tf32x3_mma (16-byte builds only) in every
// layout and a batch, export, and build a program against the header that calls sgemm_tf32x3 in each
// of its forms and checks every result against an FP64 product on the host:
//
// - FP32-class results: the worst error is at most 16 units of 2^-24 of each element's scale
//   (|alpha| sum |a||b| + |beta| |c0|). 3xTF32 is validated to SGEMM's error plus 12 such units; one
//   TF32 pass gives hundreds (issue 31: 502 at 4096^3), so a kernel that skipped the corrections fails.
// - The tuned calls and an untuned one run a tf32x3_mma kernel (kernel_name_tf32x3 says so): the f32
//   side has only the unmeasured generic default, which has no prediction.
// - An opted-in call with an odd lda misses every tf32x3 kernel's requirements and runs the f32 path
//   (the f32 generic default), still correct.
// - With CMTUNE_SGEMM_TF32X3 defined, sgemm is sgemm_tf32x3: kernel_name for floats names the same
//   kernel, and its result is FP32-class too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cuda/device.hpp"
#include "store/sqlite.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using test::run_ok;

/// case -> (kernel, worst units), from the lines "case units kernel" a program below prints (the
/// kernel's name last: it holds spaces).
using CaseResults = std::map<std::string, std::pair<std::string, double>>;
CaseResults parse_cases(const std::string& output) {
  CaseResults results;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, kernel;
    double units = -1;
    if (fields >> name >> units) {
      std::getline(fields >> std::ws, kernel);
      results[name] = {kernel, units};
    }
  }
  return results;
}

/// The program built against the header: one line per case, "case kernel units" (units: the worst
/// error in units of 2^-24 of the element's scale), then "done".
constexpr const char* k_program = R"prog(#define CMTUNE_SGEMM_TF32X3
#include "tuned.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

using cmtune::Op;

struct Case {
  const char* name;
  int ta, tb, m, n, k, batch, lda_pad;
  int form;   // 0 sgemm_tf32x3 (op form or strided batch), 1 sgemm_tf32x3 plain, 2 colmajor, 3 sgemm (macro)
};

static int fail(const char* what, cudaError_t e) {
  std::printf("error %s %s\n", what, cudaGetErrorName(e));
  return 1;
}

int main() {
  const Case cases[] = {
      {"nn", 0, 0, 256, 192, 320, 1, 0, 0},       {"nt", 0, 1, 256, 192, 320, 1, 0, 0},
      {"tn", 1, 0, 256, 192, 320, 1, 0, 0},       {"tt", 1, 1, 256, 192, 320, 1, 0, 0},
      {"nn*4", 0, 0, 256, 192, 320, 4, 0, 0},     {"tt*4", 1, 1, 256, 192, 320, 4, 0, 0},
      {"nn-plain", 0, 0, 256, 192, 320, 1, 0, 1}, {"nn-untuned", 0, 0, 300, 200, 260, 1, 0, 0},
      {"colmajor", 0, 0, 192, 256, 320, 1, 0, 2}, {"nn-odd-lda", 0, 0, 256, 192, 320, 1, 1, 0},
      {"nn-sgemm-macro", 0, 0, 256, 192, 320, 1, 0, 3}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float alpha = 1.5f, beta = -0.5f;
  for (const Case& c : cases) {
    // Row-major storage of op(A) (M x K) and op(B) (K x N); colmajor: the column-major call of the
    // same product, C^T = B^T A^T, set up below as the row-major product it computes.
    const int a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
    const int b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
    const int lda = a_cols + c.lda_pad, ldb = b_cols, ldc = c.n;
    const long long sa = static_cast<long long>(a_rows) * lda, sb = static_cast<long long>(b_rows) * ldb,
                    sc = static_cast<long long>(c.m) * ldc;
    std::vector<float> a(sa * c.batch), b(sb * c.batch), c0(sc * c.batch);
    for (float& x : a) x = uniform(rng);
    for (float& x : b) x = uniform(rng);
    for (float& x : c0) x = uniform(rng);
    float *da = nullptr, *db = nullptr, *dc = nullptr;
    cudaError_t e = cudaMalloc(&da, a.size() * 4);
    if (e == cudaSuccess) e = cudaMalloc(&db, b.size() * 4);
    if (e == cudaSuccess) e = cudaMalloc(&dc, c0.size() * 4);
    if (e == cudaSuccess) e = cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dc, c0.data(), c0.size() * 4, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return fail("setup", e);
    const Op oa = c.ta ? Op::T : Op::N, ob = c.tb ? Op::T : Op::N;
    const char* name = nullptr;
    if (c.form == 2) {
      // The column-major call (cuBLAS's arguments) whose product is the row-major C = A * B: C is the
      // column-major N x M matrix C^T = B^T * A^T, B^T the column-major N x K matrix B is stored as.
      e = cmtune::sgemm_tf32x3_colmajor(Op::N, Op::N, c.n, c.m, c.k, alpha, db, ldb, da, lda, beta, dc, ldc);
      if (e == cudaSuccess) e = cmtune::kernel_name_tf32x3(c.m, c.n, c.k, da, lda, db, ldb, dc, ldc, &name);
    } else if (c.form == 1) {
      e = cmtune::sgemm_tf32x3(c.m, c.n, c.k, alpha, da, lda, db, ldb, beta, dc, ldc);
      if (e == cudaSuccess) e = cmtune::kernel_name_tf32x3(c.m, c.n, c.k, da, lda, db, ldb, dc, ldc, &name);
    } else if (c.form == 3) {
      e = cmtune::sgemm(oa, ob, c.m, c.n, c.k, alpha, da, lda, db, ldb, beta, dc, ldc);
      const char* opted = nullptr;
      if (e == cudaSuccess) e = cmtune::kernel_name(c.m, c.n, c.k, da, lda, db, ldb, dc, ldc, &name);
      if (e == cudaSuccess) e = cmtune::kernel_name_tf32x3(c.m, c.n, c.k, da, lda, db, ldb, dc, ldc, &opted);
      if (e == cudaSuccess && (name == nullptr || opted == nullptr || std::strcmp(name, opted) != 0))
        std::printf("mismatch sgemm runs %s, sgemm_tf32x3 %s\n", name ? name : "(none)", opted ? opted : "(none)");
    } else if (c.batch > 1) {
      e = cmtune::sgemm_tf32x3_strided_batched(oa, ob, c.m, c.n, c.k, alpha, da, lda, sa, db, ldb, sb, beta, dc, ldc,
                                               sc, c.batch);
      if (e == cudaSuccess)
        e = cmtune::kernel_name_tf32x3(oa, ob, c.m, c.n, c.k, da, lda, sa, db, ldb, sb, dc, ldc, sc, c.batch, &name);
    } else {
      e = cmtune::sgemm_tf32x3(oa, ob, c.m, c.n, c.k, alpha, da, lda, db, ldb, beta, dc, ldc);
      if (e == cudaSuccess)
        e = cmtune::kernel_name_tf32x3(oa, ob, c.m, c.n, c.k, da, lda, 0, db, ldb, 0, dc, ldc, 0, 1, &name);
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return fail(c.name, e);
    std::vector<float> out(c0.size());
    e = cudaMemcpy(out.data(), dc, out.size() * 4, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return fail("copy", e);
    double worst = 0;
    for (int p = 0; p < c.batch; ++p)
      for (int i = 0; i < c.m; ++i)
        for (int j = 0; j < c.n; ++j) {
          double sum = 0, scale = 0;
          for (int kk = 0; kk < c.k; ++kk) {
            const long long ai = c.ta ? static_cast<long long>(kk) * lda + i : static_cast<long long>(i) * lda + kk;
            const long long bi = c.tb ? static_cast<long long>(j) * ldb + kk : static_cast<long long>(kk) * ldb + j;
            const double x = a[p * sa + ai], y = b[p * sb + bi];
            sum += x * y;
            scale += std::fabs(x * y);
          }
          const double old = c0[p * sc + static_cast<long long>(i) * ldc + j];
          const double ref = alpha * sum + beta * old;
          const double bound = std::fabs(alpha) * scale + std::fabs(beta) * std::fabs(old);
          const double got = out[p * sc + static_cast<long long>(i) * ldc + j];
          const double units = std::fabs(got - ref) / (bound * 0x1p-24);
          if (std::isnan(units) || units > worst) worst = units;   // a NaN stays (and fails the parse)
        }
    std::printf("%s %.3f %s\n", c.name, worst, name ? name : "(none)");   // the name has spaces: last
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
  }
  std::printf("done\n");
  return 0;
}
)prog";

TEST(HeaderTf32x3, OptedInCallsAreFp32ClassInEveryLayoutAndFallBackWhereNoKernelServes) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  test::write_file(dir / "preset.toml", R"(name = "tf32x3-header"
description = "the 16-byte, staged tf32x3_mma build alone: an odd lda meets no tf32x3 kernel"
[tune]
budget_ms = 10
min_samples = 5
max_samples = 50
retime_top = 1
retime_rounds = 5
[templates.tf32x3_mma]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
STAGES = [3]
VEC = [4]
PAD = [8]
STAGED = [1]
SWIZZLE = [1]
)");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " tune --device 0 --sizes 256x192x320:tf32x3 --layout all" +
         " --batch 1,4 --config " + (dir / "preset.toml").string() + " --no-calibrate --seed 5");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --out " + (dir / "tuned.cuh").string());
  const std::string header = test::read_file(dir / "tuned.cuh");
  ASSERT_NE(header.find("cmt_sgemm_tf32x3_mma<"), std::string::npos) << "no tf32x3 kernel was exported";

  // Built by g++: a header of machine code needs no nvcc.
  test::write_file(dir / "program.cpp", k_program);
  const std::string cuda = test::cuda_root();
  run_ok(fmt::format("g++ -std=c++17 -O2 -I {} -I {}/include -o {} {} -L {}/lib64 -lcudart", dir.path().string(), cuda,
                     (dir / "program").string(), (dir / "program.cpp").string(), cuda));
  const auto run = test::run_command((dir / "program").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;

  std::istringstream lines(run.output);
  bool done = false;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("mismatch", 0), 0u) << line;
    EXPECT_NE(line.rfind("error", 0), 0u) << line;
    if (line == "done") done = true;
  }
  ASSERT_TRUE(done) << run.output;
  const CaseResults results = parse_cases(run.output);
  ASSERT_EQ(results.size(), 11u) << run.output;
  for (const auto& [name, r] : results) {
    EXPECT_LE(r.second, 16.0) << name << " ran " << r.first << ": not an FP32-class result";
    const bool tf32x3 = r.first.find("cmt_sgemm_tf32x3_mma<") != std::string::npos;
    if (name == "nn-odd-lda") {
      EXPECT_FALSE(tf32x3) << "lda 321 misses the 16-byte build's requirements: the f32 path runs, not " << r.first;
      EXPECT_NE(r.first.find("cmt_sgemm_blocktile2d<"), std::string::npos) << "the f32 generic default: " << r.first;
    } else {
      EXPECT_TRUE(tf32x3) << name << " ran " << r.first;
    }
  }
}

/// Calls sgemm_tf32x3 on 512 x 384 x 256 in nn and nt (tight leading dimensions: 16-byte rows), and
/// once with lda + 1 in nn, and prints "case units kernel" for each, then "done".
constexpr const char* k_wgmma_program = R"prog(#include "tuned.cuh"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  struct Case { const char* name; int tb, pad; };
  const Case cases[] = {{"nn", 0, 0}, {"nt", 1, 0}, {"nn-odd-lda", 0, 1}};
  const int m = 512, n = 384, k = 256;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Case& c : cases) {
    const int lda = k + c.pad, ldb = c.tb ? k : n, ldc = n;
    std::vector<float> a(size_t(m) * lda), b(size_t(c.tb ? n : k) * ldb), out(size_t(m) * ldc);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    float *da, *db, *dc;
    if (cudaMalloc(&da, a.size() * 4) || cudaMalloc(&db, b.size() * 4) || cudaMalloc(&dc, out.size() * 4)) return 1;
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    const cmtune::Op ob = c.tb ? cmtune::Op::T : cmtune::Op::N;
    cudaError_t e = cmtune::sgemm_tf32x3(cmtune::Op::N, ob, m, n, k, 1.0f, da, lda, db, ldb, 0.0f, dc, ldc);
    const char* name = nullptr;
    if (e == cudaSuccess)
      e = cmtune::kernel_name_tf32x3(cmtune::Op::N, ob, m, n, k, da, lda, 0, db, ldb, 0, dc, ldc, 0, 1, &name);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("error %s %s\n", c.name, cudaGetErrorName(e));
      return 1;
    }
    cudaMemcpy(out.data(), dc, out.size() * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = 0, scale = 0;
        for (int kk = 0; kk < k; ++kk) {
          const double x = a[size_t(i) * lda + kk], y = c.tb ? b[size_t(j) * ldb + kk] : b[size_t(kk) * ldb + j];
          sum += x * y;
          scale += std::fabs(x * y);
        }
        const double units = std::fabs(out[size_t(i) * ldc + j] - sum) / (scale * 0x1p-24);
        if (std::isnan(units) || units > worst) worst = units;
      }
    std::printf("%s %.3f %s\n", c.name, worst, name ? name : "(none)");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
  }
  std::printf("done\n");
  return 0;
}
)prog";

// A header of machine code runs the wgmma family (TMA, sm_90a) from any program, built by g++ or by
// nvcc for plain sm_90, building the tensor maps for each call, and its results are FP32-class. A
// header of sources runs it where the program is built for sm_90a; built for plain sm_90, its probe
// finds no sm_90a code and the calls run the tuned mma.sync kernel without requirements instead. A
// call whose lda TMA cannot take runs that kernel too. Compute capability 9.0 only (elsewhere the
// family has no points).
TEST(HeaderTf32x3, WgmmaKernelsRunFromAnyProgramOfAHeaderOfMachineCode) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  if (device.cc_major != 9 || device.cc_minor != 0)
    GTEST_SKIP() << "the wgmma family runs on compute capability 9.0 alone, this GPU is " << device.arch();
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  test::write_file(dir / "preset.toml", R"(name = "tf32x3-wgmma-header"
description = "one wgmma build and the 4-byte staged tf32x3_mma build, which has no requirements"
[tune]
budget_ms = 10
min_samples = 5
max_samples = 50
retime_top = 1
retime_rounds = 5
[templates.tf32x3_wgmma]
BM = [128]
BN = [128]
STAGES = [3]
SWIZZLE = [1]
[templates.tf32x3_mma]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
STAGES = [3]
VEC = [1]
PAD = [8]
STAGED = [1]
SWIZZLE = [1]
)");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " tune --device 0 --sizes 512x384x256:tf32x3 --layout nn,nt" +
         " --config " + (dir / "preset.toml").string() + " --no-calibrate --seed 5");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --out " + (dir / "tuned.cuh").string());
  const std::string header = test::read_file(dir / "tuned.cuh");
  ASSERT_NE(header.find("cmt_sgemm_tf32x3_wgmma<"), std::string::npos) << "no wgmma kernel was exported";
  // Runs a build of the wgmma program: every case FP32-class, and the wgmma kernel where `wgmma_runs`
  // (but for the odd lda, which TMA cannot take), else the tuned mma.sync kernel.
  const auto expect_cases = [](const std::string& program, bool wgmma_runs) {
    const auto run = test::run_command(program);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const CaseResults results = parse_cases(run.output);
    ASSERT_EQ(results.size(), 3u) << run.output;
    for (const auto& [name, r] : results) {
      EXPECT_LE(r.second, 16.0) << name << " ran " << r.first << ": not an FP32-class result";
      const bool wgmma = r.first.find("cmt_sgemm_tf32x3_wgmma<") != std::string::npos;
      EXPECT_EQ(wgmma, wgmma_runs && name != "nn-odd-lda") << name << " ran " << r.first;
      if (!wgmma) EXPECT_NE(r.first.find("cmt_sgemm_tf32x3_mma<"), std::string::npos) << name << " ran " << r.first;
    }
    std::printf("%s:\n%s", program.c_str(), run.output.c_str());
  };

  // The header of machine code (the default) runs the sm_90a cubin that was timed whatever the program
  // is built with: g++, which names no GPU architecture, and nvcc for plain sm_90.
  const std::string cuda = test::cuda_root();
  test::write_file(dir / "program.cpp", k_wgmma_program);
  test::write_file(dir / "program.cu", k_wgmma_program);
  run_ok(fmt::format("g++ -std=c++17 -O2 -I {} -I {}/include -o {} {} -L {}/lib64 -lcudart", dir.path().string(), cuda,
                     (dir / "program_gpp").string(), (dir / "program.cpp").string(), cuda));
  expect_cases((dir / "program_gpp").string(), true);
  run_ok(fmt::format("{} -std=c++17 -O2 -arch=sm_90 -I {} -o {} {}", test::nvcc_path(), dir.path().string(),
                     (dir / "program_sm90").string(), (dir / "program.cu").string()));
  expect_cases((dir / "program_sm90").string(), true);

  // A header of sources: the program's own build decides, so the wgmma kernels run where it is built
  // for sm_90a alone.
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --form source --out " + (dir / "tuned.cuh").string());
  for (const std::string arch : {"sm_90a", "sm_90"}) {
    SCOPED_TRACE(arch);
    const std::string program = (dir / ("program_" + arch)).string();
    run_ok(fmt::format("{} -std=c++17 -O2 -arch={} -I {} -o {} {}", test::nvcc_path(), arch, dir.path().string(), program,
                       (dir / "program.cu").string()));
    expect_cases(program, arch == "sm_90a");
  }

  // bench on a copy of the database without its cubins (benchmarks.sh saves such copies) builds the
  // wgmma kernel again for sm_90a, the arch it was tuned with (for sm_90 it would trap), and runs it.
  {
    Database raw(db);
    raw.exec("UPDATE binaries SET cubin = x''");
  }
  const auto bench = test::run_split(dir, "--quiet --db " + db + " bench --device 0 --sizes 512x384x256:tf32x3 --rounds 5 --json");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const nlohmann::json j = nlohmann::json::parse(bench.out);
  const auto row = std::find_if(j["rows"].begin(), j["rows"].end(),
                                [](const nlohmann::json& r) { return r["problem"] == "512x384x256:tf32x3"; });
  ASSERT_NE(row, j["rows"].end()) << bench.out;
  EXPECT_EQ((*row)["winner"].get<std::string>().rfind("tf32x3_wgmma[", 0), 0u) << row->dump();
  EXPECT_TRUE((*row)["winner_valid"].get<bool>()) << row->dump();
}

}  // namespace
}  // namespace cmt
