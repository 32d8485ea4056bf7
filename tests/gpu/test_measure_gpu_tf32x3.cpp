// The tf32x3 class on the GPU, in every layout (nn, nt, tn, tt), on ragged sizes, one row of C, and
// strided batches (packed, broadcasting A or B):
//
// - Validation is against an FP64 reference: cuBLAS SGEMM (the FP32 SIMT reference, whose own error
//   is the bar) passes, and each result carries that bar. (A naive FP32 kernel, one FMA chain over
//   k, does not: its errors, 3-4 units of 2^-24 of the scale, are three to six times SGEMM's.)
// - A planted one-pass TF32 kernel (operands rounded to TF32, multiplied once) is rejected on every
//   shape, as less accurate than FP32 SIMT where its error is inside the K-scaled bound.
// - Every quick.toml tf32x3_wgmma candidate (compute capability 9.0) and every tf32x3_mma one that
//   sums each k tile apart (STAGED = 1) validates and times through GpuMeasurer::measure; the
//   tf32x3_mma ones that accumulate everything on the tensor core
//   (STAGED = 0), whose sum truncates, are rejected as less accurate than FP32 SIMT at 96x64x1000
//   (22.5 units of 2^-24 against SGEMM's 0.5, measured on an H100), the longest K here.
//   The 16-byte builds are skipped where the leading dimensions are not multiples of 4, saying why.
// - Special values: with infinities, NaNs, products that overflow and subnormals planted in A and B,
//   a staged tf32x3_mma build and a tf32x3_wgmma build give NaN, +Inf and -Inf exactly where cuBLAS
//   SGEMM does, in every layout, and finite elements within the tolerance of each other.
// - Corner cases, each family: beta = 0 over a C of NaN, alpha = 0, K = 0, one row, one column,
//   wide leading dimensions, operands 16 bytes past an allocation's start, and a batch, against a
//   host FP64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <cmath>
#include <limits>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/gpu.hpp"
#include "gpu/naive_gemm.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "measure/protocol.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

struct Shape {
  int64_t m, n, k, batch;
  bool broadcast_a, broadcast_b;
};
const Shape k_shapes[] = {
    {257, 129, 300, 1, false, false}, {1, 77, 33, 1, false, false}, {96, 64, 1000, 1, false, false},
    {65, 33, 40, 7, false, false},    {65, 33, 40, 5, true, false}, {65, 33, 40, 5, false, true},
};

std::vector<Problem> problems_in(const std::string& layout) {
  const auto ops = parse_layout(layout);
  std::vector<Problem> out;
  for (const Shape& s : k_shapes) {
    Problem p = Problem::make(s.m, s.n, s.k, ops->first, ops->second, s.batch, DType::tf32x3);
    if (s.broadcast_a) p.stride_a = 0;
    if (s.broadcast_b) p.stride_b = 0;
    out.push_back(p);
  }
  return out;
}

TuneSettings quick_settings() {
  TuneSettings settings = load_preset(resolve_preset("quick")).tune;
  settings.allow_spills = true;
  return settings;
}

uint64_t test_seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("input seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

class Tf32x3 : public ::testing::TestWithParam<std::string> {};

TEST_P(Tf32x3, ValidationIsAgainstFp64WithTheSimtErrorAsTheBar) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const GemmLauncher naive = test::naive_gemm_launcher(test::GemmDefect::none, measurer.stream());
  const GemmLauncher one_pass = test::naive_gemm_launcher(test::GemmDefect::tf32_one_pass, measurer.stream());
  for (const Problem& p : problems_in(GetParam())) {
    const ValidationResult simt = measurer.validate(measurer.cublas_launcher(), p);
    EXPECT_TRUE(simt.passed) << "cuBLAS SGEMM on " << p.to_string() << ": " << simt.reason;
    ASSERT_TRUE(simt.simt_error_ratio.has_value()) << p.to_string();
    EXPECT_LE(simt.max_error_ratio, *simt.simt_error_ratio) << "SGEMM is its own bar";
    const ValidationResult rn = measurer.validate(naive, p);
    EXPECT_LT(rn.max_error_ratio, 1.0) << "the naive kernel on " << p.to_string() << " is within the K-scaled bound";
    const ValidationResult r1 = measurer.validate(one_pass, p);
    EXPECT_FALSE(r1.passed) << "one TF32 pass on " << p.to_string();
    if (r1.max_error_ratio < 1.0)
      EXPECT_NE(r1.reason.find("less accurate than FP32 SIMT"), std::string::npos) << r1.reason;
    std::printf("%s: SIMT %.3g, naive %.3g, one pass %.3g (error / tolerance)\n", p.to_string().c_str(),
                *simt.simt_error_ratio, rn.max_error_ratio, r1.max_error_ratio);
  }
}

TEST_P(Tf32x3, EveryQuickCandidateValidatesAndTimes) {
  CMT_REQUIRE_GPU();
  const auto templates = load_templates({default_templates_dir()});
  const DeviceInfo device = select_device(0);
  Target target = target_of(device);
  target.layouts = {GetParam()};
  target.dtypes = {DType::tf32x3};
  const SearchSpace space = enumerate_space(templates, load_preset(resolve_preset("quick")), target);
  ASSERT_FALSE(space.candidates.empty());
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  for (size_t i = 0; i < space.candidates.size(); ++i) compiler.submit(space.candidates[i], i);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  MeasureLimits limits;
  limits.kernel_timeout_ms = 20000;
  std::deque<BinaryRecord> binaries;
  int measured = 0, skipped = 0;
  std::set<std::string> unstaged_rejected;
  std::set<std::string> families;
  while (auto compiled = compiler.next()) {
    const Candidate& cand = *compiled->candidate;
    families.insert(cand.tmpl->name);
    EXPECT_TRUE(cand.tmpl->name == "tf32x3_mma" || cand.tmpl->name == "tf32x3_wgmma") << cand.tmpl->name;
    ASSERT_TRUE(compiled->binary.ok) << cand.id() << ":\n" << compiled->binary.log;
    binaries.push_back(compiled->binary);
    const KernelUnderTest kernel{&binaries.back(), cand.shape, cand.requirements, cand.id()};
    for (const Problem& p : problems_in(GetParam())) {
      const Measurement m = measurer.measure(kernel, p, limits);
      ASSERT_FALSE(measurer.context_lost()) << cand.id() << " on " << p.to_string() << ": " << m.reason;
      if (m.outcome == Outcome::skipped && !cand.requirements.none()) {
        EXPECT_NE(m.reason.find("needs"), std::string::npos) << cand.id() << ": " << m.reason;
        ++skipped;
        continue;
      }
      ASSERT_TRUE(m.simt_error_ratio.has_value()) << cand.id();
      if (find_param(cand.values, "STAGED") == std::optional<int64_t>(0)) {
        if (m.outcome == Outcome::wrong) {
          EXPECT_NE(m.reason.find("less accurate than FP32 SIMT"), std::string::npos) << cand.id() << ": " << m.reason;
          unstaged_rejected.insert(cand.id());
        }
        continue;
      }
      EXPECT_EQ(m.outcome, Outcome::ok) << cand.id() << " on " << p.to_string() << ": " << m.reason;
      EXPECT_TRUE(m.timing.has_value()) << cand.id();
      std::printf("%s on %s: error/tolerance %.3g, SIMT's %.3g\n", cand.id().c_str(), p.to_string().c_str(),
                  m.max_error_ratio.value_or(-1), *m.simt_error_ratio);
      ++measured;
    }
  }
  std::printf("tf32x3 %s: %d measurements of %zu candidates (%d skipped for their requirements)\n",
              GetParam().c_str(), measured, space.candidates.size(), skipped);
  EXPECT_GT(measured, 0);
  EXPECT_EQ(unstaged_rejected.size(), 2u) << "each STAGED = 0 build is rejected on some shape";
  EXPECT_EQ(families.count("tf32x3_wgmma"), device.cc_major == 9 && device.cc_minor == 0 ? 1u : 0u)
      << "the wgmma family runs on compute capability 9.0 alone";
}

// One build of each tf32x3 family in quick.toml for the test's layout: a staged 4-byte tf32x3_mma
// build, and a tf32x3_wgmma build where the device is of compute capability 9.0.
struct FamilyBuild {
  const Candidate* candidate;
  BinaryRecord binary;
};
std::vector<FamilyBuild> family_builds(const SearchSpace& space, CompileService& compiler) {
  std::vector<const Candidate*> picked;
  for (const Candidate& c : space.candidates) {
    const bool mma = c.tmpl->name == "tf32x3_mma" && find_param(c.values, "STAGED") == std::optional<int64_t>(1) &&
                     find_param(c.values, "VEC") == std::optional<int64_t>(1);
    const bool wgmma = c.tmpl->name == "tf32x3_wgmma";
    if ((mma || wgmma) && std::none_of(picked.begin(), picked.end(), [&](const Candidate* p) { return p->tmpl == c.tmpl; }))
      picked.push_back(&c);
  }
  for (size_t i = 0; i < picked.size(); ++i) compiler.submit(*picked[i], i);
  std::vector<FamilyBuild> out(picked.size());
  while (auto compiled = compiler.next()) {
    EXPECT_TRUE(compiled->binary.ok) << compiled->candidate->id() << ":\n" << compiled->binary.log;
    out[compiled->index] = FamilyBuild{compiled->candidate, compiled->binary};
  }
  return out;
}

/// quick.toml's tf32x3 space for the device and a layout, and family_builds of it (compiled into a
/// temporary cache); the space and its templates live as long as the builds that point into them.
struct QuickBuilds {
  std::vector<TemplateDesc> templates;
  SearchSpace space;
  std::vector<FamilyBuild> builds;
};
std::unique_ptr<QuickBuilds> quick_family_builds(const DeviceInfo& device, const std::string& layout) {
  auto quick = std::make_unique<QuickBuilds>();
  quick->templates = load_templates({default_templates_dir()});
  Target target = target_of(device);
  target.layouts = {layout};
  target.dtypes = {DType::tf32x3};
  quick->space = enumerate_space(quick->templates, load_preset(resolve_preset("quick")), target);
  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  quick->builds = family_builds(quick->space, compiler);
  return quick;
}

enum class Kind { finite, plus_inf, minus_inf, nan };
Kind kind_of(float x) {
  if (std::isnan(x)) return Kind::nan;
  if (std::isinf(x)) return x > 0 ? Kind::plus_inf : Kind::minus_inf;
  return Kind::finite;
}

TEST_P(Tf32x3, SpecialValuesReachCAsInSgemm) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  const auto quick = quick_family_builds(device, GetParam());
  const std::vector<FamilyBuild>& builds = quick->builds;
  ASSERT_FALSE(builds.empty()) << "quick.toml has a staged 4-byte tf32x3_mma build";
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const GemmLauncher cublas = measurer.cublas_launcher();
  for (const FamilyBuild& build : builds) {
  SCOPED_TRACE(build.candidate->id());
  std::string why;
  const Candidate* staged = build.candidate;
  const auto launch = measurer.kernel_launcher({&build.binary, staged->shape, staged->requirements, staged->id()}, &why);
  ASSERT_TRUE(launch) << why;

  const auto ops = parse_layout(GetParam());
  // Multiples of 4 in every layout: the leading dimensions the wgmma family's TMA takes.
  const int m = 72, n = 52, k = 92;
  const int a_rows = ops->first ? k : m, a_cols = ops->first ? m : k;
  const int b_rows = ops->second ? n : k, b_cols = ops->second ? k : n;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(a_rows) * a_cols), b(static_cast<size_t>(b_rows) * b_cols);
  for (auto& x : a) x = uniform(rng);
  for (auto& x : b) x = uniform(rng);
  // op(A)(i, kk) and op(B)(kk, j) in storage.
  const auto at = [&](int i, int kk) -> float& { return ops->first ? a[size_t(kk) * a_cols + i] : a[size_t(i) * a_cols + kk]; };
  const auto bt = [&](int kk, int j) -> float& { return ops->second ? b[size_t(j) * b_cols + kk] : b[size_t(kk) * b_cols + j]; };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  at(1, 3) = inf;                       // row 1: +-Inf by B's column signs, NaN where B(3, j) is 0
  bt(3, 7) = 0.0f;
  bt(3, 8) = 0.5f;                      // a TF32 value: its small part is 0
  at(2, 5) = -inf;                      // row 2 meets B's +Inf at (5, 9): -Inf; B's NaN column: NaN
  bt(5, 9) = inf;
  bt(6, 11) = nan;                      // column 11: NaN in every row
  at(4, 10) = 3e38f;                    // row 4, column 12: a product that overflows to +Inf
  bt(10, 12) = 2.0f;
  at(6, 20) = 1e-40f;                   // subnormals: a finite, tiny product
  bt(20, 13) = 1e-39f;
  for (int kk = 0; kk < k; ++kk) at(8, kk) = 1e-39f;  // row 8: subnormal A throughout

  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(size_t(m) * n * 4), dr(size_t(m) * n * 4);
  CMT_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  CMT_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  GemmArgs args{m, n, k, 1.0f, da.get(), a_cols, db.get(), b_cols, 0.0f, dc.get(), n};
  args.trans_a = ops->first;
  args.trans_b = ops->second;
  ASSERT_EQ((*launch)(args), cudaSuccess);
  args.c = dr.get();
  ASSERT_EQ(cublas(args), cudaSuccess);
  CMT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> c(size_t(m) * n), ref(size_t(m) * n);
  CMT_CUDA_CHECK(cudaMemcpy(c.data(), dc.get(), c.size() * 4, cudaMemcpyDeviceToHost));
  CMT_CUDA_CHECK(cudaMemcpy(ref.data(), dr.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
  int specials = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const float x = c[size_t(i) * n + j], r = ref[size_t(i) * n + j];
      ASSERT_EQ(kind_of(x), kind_of(r)) << "C[" << i << "][" << j << "] = " << x << ", SGEMM " << r;
      if (kind_of(r) != Kind::finite) {
        ++specials;
        continue;
      }
      double scale = 0;
      for (int kk = 0; kk < k; ++kk) scale += std::fabs(double(at(i, kk)) * double(bt(kk, j)));
      EXPECT_LE(std::fabs(double(x) - double(r)), 4.0 * (k + 4) * 0x1p-24 * scale + 0x1p-126)
          << "C[" << i << "][" << j << "] = " << x << ", SGEMM " << r;
    }
  EXPECT_GT(specials, 2 * n) << "rows 1 and 2 and column 11 are not finite";
  }
}

// C = alpha op(A) op(B) + beta C on the host in FP64, over the stored matrices of one problem of a
// batch (ld and offsets as stored).
void host_gemm(bool ta, bool tb, int m, int n, int k, double alpha, const float* a, int lda, const float* b, int ldb,
               double beta, const float* c0, float* c, int ldc, std::vector<double>& ref, std::vector<double>& scale) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int kk = 0; kk < k; ++kk) {
        const double x = ta ? a[size_t(kk) * lda + i] : a[size_t(i) * lda + kk];
        const double y = tb ? b[size_t(j) * ldb + kk] : b[size_t(kk) * ldb + j];
        sum += x * y;
        mag += std::fabs(x * y);
      }
      const double old = beta != 0 ? double(c0[size_t(i) * ldc + j]) : 0.0;
      ref.push_back(alpha * sum + beta * old);
      scale.push_back(std::fabs(alpha) * mag + std::fabs(beta) * std::fabs(old));
      (void)c;
    }
}

TEST_P(Tf32x3, CornerCasesOfEveryFamilyMatchFp64) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  const auto quick = quick_family_builds(device, GetParam());
  const std::vector<FamilyBuild>& builds = quick->builds;
  ASSERT_FALSE(builds.empty());
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const auto ops = parse_layout(GetParam());
  const bool ta = ops->first, tb = ops->second;

  struct Corner {
    const char* what;
    int m, n, k, batch;
    float alpha, beta;
    int pad;     // extra leading-dimension elements (a multiple of 4: every family's requirement)
    int offset;  // elements from each allocation's start to its matrix (a multiple of 4)
    bool nan_c;  // C starts as NaN (with beta = 0 it must not be read)
  };
  // Ragged against every tile (72 and 92 leave partial tiles of 64 and 128), with leading
  // dimensions that are multiples of 4 unless a dimension of 1 makes them 1: a family that needs
  // more (the wgmma family's TMA: 16 bytes) is not served those calls, and skips them here, saying so.
  const Corner corners[] = {
      {"beta = 0 over NaN", 72, 92, 132, 1, 1.5f, 0.0f, 0, 0, true},
      {"alpha = 0", 72, 92, 132, 1, 0.0f, 0.5f, 0, 0, false},
      {"K = 0", 72, 92, 0, 1, 1.0f, -2.0f, 4, 0, false},
      {"one row", 1, 200, 100, 1, 1.0f, 0.25f, 0, 0, false},
      {"one column", 200, 1, 100, 1, 1.0f, 0.25f, 0, 0, false},
      {"wide leading dimensions", 100, 60, 72, 1, 1.0f, 1.0f, 1000, 0, false},
      {"offset operands", 100, 60, 72, 1, 1.0f, 1.0f, 4, 4, false},
      {"a batch", 64, 32, 40, 3, 1.0f, 0.5f, 4, 0, false},
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const FamilyBuild& build : builds) {
    const Candidate& cand = *build.candidate;
    std::string why;
    const auto launch = measurer.kernel_launcher({&build.binary, cand.shape, cand.requirements, cand.id()}, &why);
    ASSERT_TRUE(launch) << cand.id() << ": " << why;
    int ran = 0;
    for (const Corner& c : corners) {
      SCOPED_TRACE(cand.id() + ": " + c.what);
      const int a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
      const int b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
      const int lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
      const long long sa = (long long)a_rows * lda, sb = (long long)b_rows * ldb, sc = (long long)c.m * ldc;
      const int64_t multiple = cand.requirements.ld_multiple;
      if (lda % multiple || ldb % multiple || ldc % multiple || (c.offset * 4) % cand.requirements.align_bytes) {
        std::printf("%s, %s: not served (leading dimensions %d, %d, %d)\n", cand.id().c_str(), c.what, lda, ldb, ldc);
        continue;
      }
      ++ran;
      std::vector<float> a(c.offset + sa * c.batch + 4), b(c.offset + sb * c.batch + 4), c0(c.offset + sc * c.batch + 4);
      for (auto& x : a) x = uniform(rng);
      for (auto& x : b) x = uniform(rng);
      for (auto& x : c0) x = c.nan_c ? std::numeric_limits<float>::quiet_NaN() : uniform(rng);
      DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c0.size() * 4);
      CMT_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
      CMT_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
      CMT_CUDA_CHECK(cudaMemcpy(dc.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
      GemmArgs args{c.m, c.n, c.k, c.alpha, static_cast<float*>(da.get()) + c.offset, lda,
                    static_cast<float*>(db.get()) + c.offset, ldb, c.beta, static_cast<float*>(dc.get()) + c.offset, ldc};
      args.trans_a = ta;
      args.trans_b = tb;   // args.dtype stays f32: the class's storage, which its kernels take
      if (c.batch > 1) args.stride_a = sa, args.stride_b = sb, args.stride_c = sc, args.batch = c.batch;
      ASSERT_EQ((*launch)(args), cudaSuccess);
      CMT_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> out(c0.size());
      CMT_CUDA_CHECK(cudaMemcpy(out.data(), dc.get(), out.size() * 4, cudaMemcpyDeviceToHost));
      for (int z = 0; z < c.batch; ++z) {
        std::vector<double> ref, scale;
        host_gemm(ta, tb, c.m, c.n, c.k, c.alpha, a.data() + c.offset + z * sa, lda, b.data() + c.offset + z * sb, ldb,
                  c.beta, c0.data() + c.offset + z * sc, nullptr, ldc, ref, scale);
        for (int i = 0; i < c.m; ++i)
          for (int j = 0; j < c.n; ++j) {
            const float x = out[c.offset + z * sc + size_t(i) * ldc + j];
            const size_t e = size_t(i) * c.n + j;
            ASSERT_TRUE(std::isfinite(x)) << "C[" << z << "][" << i << "][" << j << "] = " << x;
            EXPECT_LE(std::fabs(double(x) - ref[e]), 4.0 * (c.k + 4) * 0x1p-24 * scale[e] + 1e-30)
                << "C[" << z << "][" << i << "][" << j << "] = " << x << ", FP64 " << ref[e];
          }
        // The padding between rows is left as it was.
        for (int i = 0; i < c.m && c.pad > 0; ++i)
          EXPECT_EQ(std::memcmp(&out[c.offset + z * sc + size_t(i) * ldc + c.n], &c0[c.offset + z * sc + size_t(i) * ldc + c.n],
                                size_t(c.pad) * 4), 0) << "row " << i << "'s padding";
      }
    }
    // Every family takes every corner but the calls a dimension of 1 makes unaligned.
    EXPECT_GE(ran, 6) << cand.id();
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Tf32x3, ::testing::Values("nn", "nt", "tn", "tt"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace cmt
