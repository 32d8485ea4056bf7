// The measuring side in FP64 and INT32, on every layout (nn, nt, tn, tt) and batch shape (one
// matrix, a packed batch, batches that broadcast A or B), on ragged sizes:
//
// - The reference (cuBLAS DGEMM for f64, the exact wrapping kernel for i32) and a naive kernel
//   written here (independent of both) pass validation through GpuMeasurer; cuBLAS DGEMM times as
//   the f64 baseline, and i32 has none.
// - Deliberately wrong launchers fail, each with the reason that names what it did, in the type's
//   own words ("C[b=4][128][64] is 5, expected 7", "1 doubles after C"): a wrong element, a write
//   into a guard gap, an element left unwritten when beta == 0 (NaN; the INT32 poison), a broadcast
//   operand read as packed, an INT32 kernel that saturates instead of wrapping (caught by the case on
//   inputs that overflow), an FP64 kernel that sums in FP32.
// - The INT32 reference and the naive kernel wrap as uint32 arithmetic on the host does, on inputs
//   near 2^20 over a long K.
// - Every quick.toml candidate of each type (blocktile2d, the typed generic default; dmma for f64;
//   warptile for i32) validates and times in each type and layout through GpuMeasurer::measure.
// - warptile in INT32: points with 16- and 4-byte loads, thin edges and 288-thread tiles validate
//   exactly on ragged shapes and batches in every layout (also with leading dimensions rounded up to
//   4, where the 16-byte builds run), and wrap like uint32 arithmetic on the host over a long K.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/device.hpp"
#include "cuda/gpu.hpp"
#include "gpu/naive_gemm.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "measure/gpu/validation_kernels.hpp"
#include "measure/gpu/validator.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/protocol.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

struct Shape {
  int64_t m, n, k;
};
// Ragged in every dimension; one row of C.
const Shape k_shapes[] = {{257, 129, 300}, {1, 77, 33}};

struct BatchShape {
  const char* name;
  int64_t batch;
  bool broadcast_a, broadcast_b;
};
const BatchShape k_batch_shapes[] = {
    {"one matrix", 1, false, false},
    {"7 packed", 7, false, false},
    {"5 with stride_a = 0", 5, true, false},
    {"5 with stride_b = 0", 5, false, true},
};

struct TypeLayout {
  DType dtype;
  std::string layout;
};

std::vector<TypeLayout> type_layouts() {
  std::vector<TypeLayout> out;
  for (const DType t : {DType::f64, DType::i32})
    for (const char* l : {"nn", "nt", "tn", "tt"}) out.push_back({t, l});
  return out;
}

std::string param_name(const ::testing::TestParamInfo<TypeLayout>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_" + info.param.layout;
}

std::vector<Problem> problems_of(const TypeLayout& tl) {
  const auto ops = parse_layout(tl.layout);
  std::vector<Problem> out;
  for (const Shape& s : k_shapes)
    for (const BatchShape& bs : k_batch_shapes) {
      Problem p = Problem::make(s.m, s.n, s.k, ops->first, ops->second, bs.batch, tl.dtype);
      if (bs.broadcast_a) p.stride_a = 0;
      if (bs.broadcast_b) p.stride_b = 0;
      EXPECT_EQ(stride_problem(p), "") << p.to_string();
      out.push_back(p);
    }
  return out;
}

TuneSettings quick_settings() {
  TuneSettings settings;
  try {
    settings = load_preset(resolve_preset("quick")).tune;
  } catch (const std::exception&) {
    // the defaults, only slower
  }
  settings.allow_spills = true;
  return settings;
}

uint64_t test_seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("input seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

std::string element(const Problem& p, int64_t b, int64_t row, int64_t col) {
  return p.batched() ? "C[b=" + std::to_string(b) + "][" + std::to_string(row) + "][" + std::to_string(col) + "]"
                     : "C[" + std::to_string(row) + "][" + std::to_string(col) + "]";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class TypedValidation : public ::testing::TestWithParam<TypeLayout> {};

TEST_P(TypedValidation, TheReferenceAndANaiveKernelPassOnEveryBatchShape) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const GemmLauncher reference = measurer.reference_launcher();
  const GemmLauncher naive = test::naive_gemm_launcher(test::GemmDefect::none, measurer.stream());
  for (const Problem& p : problems_of(GetParam())) {
    const ValidationResult rr = measurer.validate(reference, p);
    EXPECT_TRUE(rr.passed) << "the reference on " << p.to_string() << ": " << rr.reason;
    const ValidationResult rn = measurer.validate(naive, p);
    ASSERT_FALSE(is_sticky_error(rn.status)) << "CUDA context lost: " << rn.reason;
    EXPECT_TRUE(rn.passed) << "the naive kernel on " << p.to_string() << ": " << rn.reason;
    if (p.dtype == DType::i32) {
      EXPECT_EQ(rn.max_error_ratio, 0.0) << p.to_string() << ": INT32 is exact";
      EXPECT_EQ(rn.max_abs_error, 0.0) << p.to_string();
      // No baseline: cuBLAS has no INT32 GEMM, and asking for one is an error.
      EXPECT_THROW(measurer.measure_cublas(p), InfraError) << p.to_string();
      const ValidationResult rc = measurer.validate(measurer.cublas_launcher(), p);
      EXPECT_FALSE(rc.passed) << p.to_string();
      EXPECT_TRUE(has(rc.reason, "launch failed")) << rc.reason;
    } else {
      EXPECT_LT(rn.max_error_ratio, 1.0) << p.to_string();
      const SampleStats stats = measurer.measure_cublas(p);  // cublasDgemm(StridedBatched)
      EXPECT_GT(stats.count, 0) << p.to_string();
      EXPECT_GT(stats.median, 0.0) << p.to_string();
    }
  }
}

TEST_P(TypedValidation, WrongLaunchersFailWithTheirReason) {
  CMT_REQUIRE_GPU();
  using test::GemmDefect;
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const bool i32 = GetParam().dtype == DType::i32;
  const std::string unit = i32 ? "ints" : "doubles";
  int checked = 0;
  for (const Problem& p : problems_of(GetParam())) {
    const bool broadcast = p.batched() && (p.stride_a == 0 || p.stride_b == 0);
    for (const GemmDefect defect : {GemmDefect::wrong_last_element, GemmDefect::write_gap, GemmDefect::skip_first_when_beta0,
                                    GemmDefect::broadcast_as_packed, GemmDefect::saturate_i32, GemmDefect::fp32_accumulate}) {
      if (defect == GemmDefect::broadcast_as_packed && !broadcast) continue;
      if (defect == GemmDefect::saturate_i32 && !i32) continue;
      if (defect == GemmDefect::fp32_accumulate && (i32 || p.k < 100)) continue;  // a long sum shows FP32's error
      const std::string what = std::string(test::to_string(defect)) + " on " + p.to_string();
      const ValidationResult r = measurer.validate(test::naive_gemm_launcher(defect, measurer.stream()), p);
      ASSERT_FALSE(is_sticky_error(r.status)) << what << ": CUDA context lost: " << r.reason;
      EXPECT_EQ(r.status, cudaSuccess) << what << ": " << r.reason;
      EXPECT_FALSE(r.passed) << what << " passed validation";
      const std::string& reason = r.reason;
      const std::string first = "first " + element(p, p.batch - 1, p.m / 2, p.n / 2) + (i32 ? " is " : " = ");
      switch (defect) {
        case GemmDefect::wrong_last_element:
          EXPECT_TRUE(has(reason, "1 of " + std::to_string(p.m * p.n * p.batch) + " elements wrong")) << what << ": " << reason;
          EXPECT_TRUE(has(reason, first)) << what << ": " << reason;
          EXPECT_TRUE(has(reason, i32 ? "(alpha=3, beta=-2)" : "(alpha=0.75, beta=-1.25)")) << what << ": " << reason;
          break;
        case GemmDefect::write_gap:
          EXPECT_TRUE(has(reason, "writes outside C's M x N block")) << what << ": " << reason;
          EXPECT_TRUE(has(reason, p.batched() ? "1 " + unit + " after C[b=0] (the gap before C[b=1])" : "1 " + unit + " after C"))
              << what << ": " << reason;
          EXPECT_FALSE(has(reason, "elements wrong")) << what << ": " << reason;
          break;
        case GemmDefect::skip_first_when_beta0:
          EXPECT_TRUE(has(reason, "beta=0")) << what << ": " << reason;
          // NaN in FP64; the poison, out of reach of a correct result, in INT32.
          EXPECT_TRUE(has(reason, "first " + element(p, 0, 0, 0) + (i32 ? " is 2143289344, expected " : " = nan")))
              << what << ": " << reason;
          if (i32) EXPECT_TRUE(has(reason, "(never written)")) << what << ": " << reason;
          break;
        case GemmDefect::broadcast_as_packed:
          EXPECT_TRUE(has(reason, "elements wrong")) << what << ": " << reason;
          break;
        case GemmDefect::saturate_i32:
          // Right on the small inputs; wrong on the ones that overflow.
          EXPECT_TRUE(has(reason, "inputs that overflow")) << what << ": " << reason;
          EXPECT_TRUE(has(reason, "elements wrong")) << what << ": " << reason;
          break;
        case GemmDefect::fp32_accumulate:
          EXPECT_TRUE(has(reason, "elements wrong")) << what << ": " << reason;
          EXPECT_TRUE(has(reason, "max error/tolerance")) << what << ": " << reason;
          break;
        case GemmDefect::none:
          break;
      }
      std::printf("%s: %s\n", what.c_str(), reason.c_str());
      ++checked;
    }
  }
  // 2 shapes x 4 batch shapes x 3 defects, 2 broadcasts per shape, and per type: i32 saturating on
  // every problem, f64 summing in FP32 on the 4 problems with K = 300.
  EXPECT_EQ(checked, 2 * 4 * 3 + 2 * 2 + (i32 ? 8 : 4));
}

TEST_P(TypedValidation, RequirementsCountBytesOfTheType) {
  CMT_REQUIRE_GPU();
  const auto ops = parse_layout(GetParam().layout);
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), 7);
  Problem p = Problem::make(100, 100, 100, ops->first, ops->second, 3, GetParam().dtype);
  p.stride_a = p.packed_stride_a() + 1;  // 10001 elements: 16-byte aligned neither as doubles nor as ints
  Requirements vec16;
  vec16.align_bytes = 16;
  vec16.ld_multiple = 4;
  const Measurement m = measurer.measure({nullptr, LaunchShape{}, vec16, "vec16"}, p, MeasureLimits{});
  EXPECT_EQ(m.outcome, Outcome::skipped) << m.reason;
  EXPECT_TRUE(has(m.reason, std::string("the stride of A is 10001 ") + (GetParam().dtype == DType::f64 ? "doubles" : "ints")))
      << m.reason;
}

INSTANTIATE_TEST_SUITE_P(TypesAndLayouts, TypedValidation, ::testing::ValuesIn(type_layouts()), param_name);

// The INT32 semantics on inputs near 2^20 over a long K, checked element by element against uint32
// arithmetic on the host: the products and the sums overflow, and the results wrap.
TEST(Int32Wrap, TheReferenceAndTheNaiveKernelWrapLikeUint32OnTheHost) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  (void)device;
  Stream stream;
  std::mt19937 rng(20);
  for (const auto& [ta, tb] : {std::pair{false, false}, {false, true}, {true, false}, {true, true}}) {
    const int m = 37, n = 29, k = 4099, batch = 3;
    const int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
    const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    const int64_t stride_a = a_rows * lda, stride_b = 0, stride_c = int64_t{m} * ldc;  // B broadcast
    std::vector<int32_t> a(stride_a * batch), b(b_rows * ldb), c0(stride_c * batch);
    std::uniform_int_distribution<int32_t> near(-(1 << 20), 1 << 20), small(-1000, 1000);
    for (auto& v : a) v = near(rng);
    for (auto& v : b) v = near(rng);
    for (auto& v : c0) v = small(rng);
    const int32_t alpha = 7, beta = -3;

    DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c0.size() * 4), dn(c0.size() * 4);
    CMT_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CMT_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    CMT_CUDA_CHECK(cudaMemcpy(dc.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
    CMT_CUDA_CHECK(cudaMemcpy(dn.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
    GemmArgs g{m, n, k, alpha, da.get(), lda, db.get(), ldb, beta, dc.get(), ldc};
    g.stride_a = stride_a;
    g.stride_b = stride_b;
    g.stride_c = stride_c;
    g.batch = batch;
    g.trans_a = ta;
    g.trans_b = tb;
    g.dtype = DType::i32;
    ASSERT_EQ(reference_gemm_i32(g, stream.get()), cudaSuccess);
    GemmArgs gn = g;
    gn.c = dn.get();
    ASSERT_EQ(test::launch_naive_gemm(gn, test::GemmDefect::none, stream.get()), cudaSuccess);
    stream.synchronize();
    std::vector<int32_t> ref(c0.size()), naive(c0.size());
    CMT_CUDA_CHECK(cudaMemcpy(ref.data(), dc.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
    CMT_CUDA_CHECK(cudaMemcpy(naive.data(), dn.get(), naive.size() * 4, cudaMemcpyDeviceToHost));

    int overflowed = 0, checked = 0;
    for (int bi = 0; bi < batch; ++bi)
      for (int i = 0; i < m; i += 3)
        for (int j = 0; j < n; j += 2) {
          uint32_t acc = 0;
          long long exact = 0;
          for (int kk = 0; kk < k; ++kk) {
            const int32_t av = ta ? a[bi * stride_a + int64_t{kk} * lda + i] : a[bi * stride_a + int64_t{i} * lda + kk];
            const int32_t bv = tb ? b[int64_t{j} * ldb + kk] : b[int64_t{kk} * ldb + j];
            acc += static_cast<uint32_t>(av) * static_cast<uint32_t>(bv);
            exact += static_cast<long long>(av) * bv;  // |sum| < 4099 * 2^40 < 2^63
          }
          const int64_t e = bi * stride_c + int64_t{i} * ldc + j;
          const int32_t want = static_cast<int32_t>(static_cast<uint32_t>(alpha) * acc +
                                                    static_cast<uint32_t>(beta) * static_cast<uint32_t>(c0[e]));
          EXPECT_EQ(ref[e], want) << "reference C[b=" << bi << "][" << i << "][" << j << "] ta=" << ta << " tb=" << tb;
          EXPECT_EQ(naive[e], want) << "naive C[b=" << bi << "][" << i << "][" << j << "] ta=" << ta << " tb=" << tb;
          overflowed += static_cast<long long>(want) != alpha * exact + static_cast<long long>(beta) * c0[e];
          ++checked;
        }
    EXPECT_GT(overflowed, checked * 9 / 10) << "the inputs should overflow nearly everywhere";
    // Elements outside the checked grid and the padding columns: the two kernels agree everywhere.
    EXPECT_EQ(ref, naive);
  }
}

// --- the typed generic default ---------------------------------------------------------------

class TypedTemplates : public ::testing::TestWithParam<TypeLayout> {};

TEST_P(TypedTemplates, EveryQuickCandidateOfTheTypeValidatesAndTimes) {
  CMT_REQUIRE_GPU();
  const TypeLayout tl = GetParam();
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  const DeviceInfo device = select_device(0);
  Target target = target_of(device);
  target.layouts = {tl.layout};
  target.dtypes = {tl.dtype};
  // Every family of the type: blocktile2d (the typed generic default), for f64 dmma, for i32 warptile.
  const SearchSpace space = enumerate_space(templates, preset, target);
  ASSERT_FALSE(space.candidates.empty());
  std::set<std::string> families;
  for (const Candidate& c : space.candidates) families.insert(c.tmpl->name);
  const std::set<std::string> expected = tl.dtype == DType::f64 ? std::set<std::string>{"blocktile2d", "dmma"}
                                                                : std::set<std::string>{"blocktile2d", "warptile"};
  EXPECT_EQ(families, expected);

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
  while (auto compiled = compiler.next()) {
    const Candidate& cand = *compiled->candidate;
    ASSERT_TRUE(compiled->binary.ok) << cand.id() << ":\n" << compiled->binary.log;
    // Spills are checked where ptxas reported them (-1: no report; the CPU test TemplateLayouts
    // checks every type and layout of these builds for spills with NVRTC).
    if (compiled->binary.spill_stores >= 0) EXPECT_EQ(compiled->binary.spill_stores, 0) << cand.id();
    binaries.push_back(compiled->binary);
    const KernelUnderTest kernel{&binaries.back(), cand.shape, cand.requirements, cand.id()};
    for (const Problem& p : problems_of(tl)) {
      ASSERT_TRUE(cand.tmpl->serves(cand.values, p)) << cand.id() << " " << p.to_string();
      const Measurement m = measurer.measure(kernel, p, limits);
      ASSERT_FALSE(measurer.context_lost()) << cand.id() << " on " << p.to_string() << ": " << m.reason;
      if (m.outcome == Outcome::skipped && !cand.requirements.none()) {
        // A 16-byte dmma copy needs even leading dimensions, a 16-byte warptile load multiples of 4;
        // the others here are skipped, saying why.
        EXPECT_NE(m.reason.find("needs"), std::string::npos) << cand.id() << ": " << m.reason;
        ++skipped;
        continue;
      }
      EXPECT_EQ(m.outcome, Outcome::ok) << cand.id() << " on " << p.to_string() << ": " << m.reason;
      EXPECT_TRUE(m.timing.has_value()) << cand.id();
      if (tl.dtype == DType::i32) EXPECT_EQ(m.max_error_ratio.value_or(-1), 0.0) << cand.id() << " " << p.to_string();
      ++measured;
    }
  }
  std::printf("%s %s: %d measurements of %zu candidates (%d skipped for their requirements)\n",
              std::string(dtype_name(tl.dtype)).c_str(), tl.layout.c_str(), measured, space.candidates.size(), skipped);
  EXPECT_GT(measured, 0);
}

INSTANTIATE_TEST_SUITE_P(TypesAndLayouts, TypedTemplates, ::testing::ValuesIn(type_layouts()), param_name);

// --- warptile in INT32 ------------------------------------------------------------------------

// warptile points in INT32: the 128x128 tiles of the 2048^3 winners (16- and 4-byte loads, with and
// without thin edges), 128x256 (the 4096^3 winner's shape, its most registers) and 128x64 tiles of
// 64 to 512 threads, and 96x96 tiles of 288 threads (passes of loads that do not divide the tiles),
// all with thin edges. Some of them spill in INT32 as in FP32 (the 64x64 warp tiles with thin edges,
// 128x256): the tuner skips such builds, but they must compute the same results.
constexpr const char* k_warptile_i32_preset = R"(name = "warptile-i32"
description = "warptile points validated in INT32"
[[templates.warptile]]
BM = [128]
BN = [128]
BK = [16]
WM = [64]
WN = [64]
WNITER = [2]
TM = [4]
PAD = [4]
VEC = [1, 4]
SWIZZLE = [8]
THIN_EDGE = [0, 4]

[[templates.warptile]]
BM = [128]
BN = [256, 64]
BK = [32]
WM = [64, 32]
WN = [64]
WNITER = [2]
TM = [4]
PAD = [4]
VEC = [4]
SWIZZLE = [1]
THIN_EDGE = [4]

[[templates.warptile]]
BM = [96]
BN = [96]
BK = [32]
WM = [32]
WN = [32]
WNITER = [2]
TM = [4]
PAD = [0]
VEC = [1, 4]
SWIZZLE = [1]
THIN_EDGE = [4]
)";

/// The warptile INT32 candidates of k_warptile_i32_preset in `layout`, compiled for the device.
struct WarptileI32Kernels {
  std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  test::TempDir dir;
  SearchSpace space;
  std::deque<BinaryRecord> binaries;  // the kernels point at them
  std::vector<KernelUnderTest> kernels;

  WarptileI32Kernels(const DeviceInfo& device, const std::string& layout) {
    test::write_file(dir / "warptile_i32.toml", k_warptile_i32_preset);
    Target target = target_of(device);
    target.layouts = {layout};
    target.dtypes = {DType::i32};
    space = enumerate_space(templates, load_preset(dir / "warptile_i32.toml"), target);
    Store store(dir / "cache.db");
    const NvrtcCompiler nvrtc;
    CompileService compiler(store, nvrtc, device.arch(), 0);
    for (size_t i = 0; i < space.candidates.size(); ++i) compiler.submit(space.candidates[i], i);
    std::vector<std::pair<size_t, BinaryRecord>> built;
    while (auto compiled = compiler.next()) {
      const Candidate& cand = *compiled->candidate;
      EXPECT_TRUE(compiled->binary.ok) << cand.id() << ":\n" << compiled->binary.log;
      EXPECT_EQ(cand.tmpl->dtype_of(cand.values), DType::i32) << cand.id();
      if (compiled->binary.ok) built.emplace_back(compiled->index, compiled->binary);
    }
    std::sort(built.begin(), built.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [index, binary] : built) {
      const Candidate& cand = space.candidates[index];
      binaries.push_back(std::move(binary));
      kernels.push_back({&binaries.back(), cand.shape, cand.requirements, cand.id()});
    }
  }
};

class WarptileInt32 : public ::testing::TestWithParam<std::string> {};

// Every point validates exactly against the INT32 reference (the validation's three cases: beta != 0,
// beta == 0 over the poison, and inputs whose products and sums overflow) on ragged shapes, one row
// of C, thin last tile rows and columns (257 = 2 x 128 + 1, 100 = 96 + 4), a long K, and batches
// (packed, and broadcasting A or B); both in the tuner's validation layout (leading dimensions 8
// wider than the matrices: the 16-byte builds are skipped there, saying why) and in workspaces whose
// leading dimensions are rounded up to 4, where the 16-byte builds run too.
TEST_P(WarptileInt32, EveryPointValidatesExactlyOnRaggedShapesAndBatches) {
  CMT_REQUIRE_GPU();
  const std::string layout = GetParam();
  const DeviceInfo device = select_device(0);
  WarptileI32Kernels built(device, layout);
  ASSERT_EQ(built.kernels.size(), 10u) << layout;

  const auto ops = parse_layout(layout);
  std::vector<Problem> problems;
  for (const Shape& s : {Shape{257, 129, 300}, Shape{1, 77, 33}, Shape{100, 100, 100}, Shape{131, 390, 1029}})
    for (const BatchShape& bs : k_batch_shapes) {
      Problem p = Problem::make(s.m, s.n, s.k, ops->first, ops->second, bs.batch, DType::i32);
      if (bs.broadcast_a) p.stride_a = 0;
      if (bs.broadcast_b) p.stride_b = 0;
      ASSERT_EQ(stride_problem(p), "") << p.to_string();
      problems.push_back(p);
    }
  const uint64_t seed = test_seed();
  GpuMeasurer measurer(device, quick_settings(), seed);
  CublasHandle cublas(measurer.stream());
  Validator validator(measurer.stream());
  std::vector<std::unique_ptr<ProblemWorkspace>> aligned;
  for (const Problem& p : problems)
    aligned.push_back(std::make_unique<ProblemWorkspace>(p, seed + 1 + aligned.size(), measurer.stream(), cublas, 4));

  MeasureLimits limits;
  limits.kernel_timeout_ms = 20000;
  int measured = 0, skipped = 0, aligned_validated = 0;
  for (const KernelUnderTest& kernel : built.kernels) {
    for (size_t i = 0; i < problems.size(); ++i) {
      const Problem& p = problems[i];
      const std::string what = kernel.label + " on " + p.to_string();
      const Measurement m = measurer.measure(kernel, p, limits);
      ASSERT_FALSE(measurer.context_lost()) << what << ": " << m.reason;
      if (m.outcome == Outcome::skipped) {
        EXPECT_FALSE(kernel.requirements.none()) << what << ": " << m.reason;
        EXPECT_TRUE(has(m.reason, "needs")) << what << ": " << m.reason;
        ++skipped;
      } else {
        EXPECT_EQ(m.outcome, Outcome::ok) << what << ": " << to_string(m.outcome) << ": " << m.reason;
        EXPECT_EQ(m.max_error_ratio.value_or(-1), 0.0) << what << ": INT32 is exact";
        ++measured;
      }

      const ProblemWorkspace& ws = *aligned[i];
      ASSERT_FALSE(unmet_requirements(kernel.requirements, ws.validation(), DType::i32).has_value()) << what << ": ld rounded to 4";
      std::string why_not;
      const auto launch = measurer.kernel_launcher(kernel, &why_not);
      ASSERT_TRUE(launch) << what << ": " << why_not;
      const ValidationResult r = validator.validate(*launch, ws, limits.kernel_timeout_ms);
      ASSERT_FALSE(is_sticky_error(r.status)) << what << ": CUDA context lost: " << r.reason;
      EXPECT_TRUE(r.passed) << what << " (ld rounded to 4, lda " << ws.validation().lda << "): " << r.reason;
      EXPECT_EQ(r.max_error_ratio, 0.0) << what;
      ++aligned_validated;
    }
  }
  std::printf("warptile i32 %s: %d measurements, %d skipped for their requirements, %d validations with ld %% 4 == 0\n",
              layout.c_str(), measured, skipped, aligned_validated);
  EXPECT_GT(measured, 0);
  EXPECT_GT(skipped, 0) << "the 16-byte builds on leading dimensions that are not multiples of 4";
}

// The wrap on a long K, element by element against uint32 arithmetic on the host, as Int32Wrap checks
// the reference: inputs near 2^20 (every product overflows), alpha and beta != 1, a batch whose B is
// broadcast, thin last tile rows and columns (257 = 2 x 128 + 1 rows, 131 = 128 + 3 columns), and
// K = 4099, a partial last k tile. The whole of C, padding columns included, must equal what the
// reference writes. The 4-byte builds run on ragged leading dimensions, the 16-byte ones on
// multiples of 4.
TEST_P(WarptileInt32, WrapsLikeUint32OnTheHost) {
  CMT_REQUIRE_GPU();
  const std::string layout = GetParam();
  const DeviceInfo device = select_device(0);
  WarptileI32Kernels built(device, layout);
  ASSERT_FALSE(built.kernels.empty());
  GpuMeasurer measurer(device, quick_settings(), 11);
  const cudaStream_t stream = measurer.stream();
  const bool ta = layout[0] == 't', tb = layout[1] == 't';
  std::mt19937 rng(21);
  const int m = 257, n = 131, k = 4099, batch = 3;
  const int32_t alpha = -5, beta = 3;
  int kernels_checked = 0;
  for (const bool vec4 : {false, true}) {
    const int pad = vec4 ? 4 : 1;  // the 16-byte builds need ld % 4 == 0 and 16-byte aligned matrices
    const int lda = ((ta ? m : k) + 3 + pad - 1) / pad * pad, ldb = ((tb ? k : n) + 5 + pad - 1) / pad * pad;
    const int ldc = (n + 2 + pad - 1) / pad * pad;
    const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    const int64_t stride_a = a_rows * lda, stride_c = int64_t{m} * ldc;  // B broadcast: stride_b = 0
    std::vector<int32_t> a(stride_a * batch), b(b_rows * ldb), c0(stride_c * batch);
    std::uniform_int_distribution<int32_t> near(-(1 << 20), 1 << 20), small(-1000, 1000);
    for (auto& v : a) v = near(rng);
    for (auto& v : b) v = near(rng);
    for (auto& v : c0) v = small(rng);
    DeviceBuffer da(a.size() * 4), db(b.size() * 4), dref(c0.size() * 4), dc(c0.size() * 4);
    CMT_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CMT_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    CMT_CUDA_CHECK(cudaMemcpy(dref.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
    GemmArgs g{m, n, k, alpha, da.get(), lda, db.get(), ldb, beta, dref.get(), ldc};
    g.stride_a = stride_a;
    g.stride_b = 0;
    g.stride_c = stride_c;
    g.batch = batch;
    g.trans_a = ta;
    g.trans_b = tb;
    g.dtype = DType::i32;
    ASSERT_EQ(reference_gemm_i32(g, stream), cudaSuccess);
    CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<int32_t> ref(c0.size());
    CMT_CUDA_CHECK(cudaMemcpy(ref.data(), dref.get(), ref.size() * 4, cudaMemcpyDeviceToHost));

    // The reference against the host, on a grid of elements (the products overflow nearly everywhere).
    int overflowed = 0, sampled = 0;
    for (int bi = 0; bi < batch; ++bi)
      for (int i = 0; i < m; i += 16)
        for (int j = 0; j < n; j += 13) {
          uint32_t acc = 0;
          long long exact = 0;
          for (int kk = 0; kk < k; ++kk) {
            const int32_t av = ta ? a[bi * stride_a + int64_t{kk} * lda + i] : a[bi * stride_a + int64_t{i} * lda + kk];
            const int32_t bv = tb ? b[int64_t{j} * ldb + kk] : b[int64_t{kk} * ldb + j];
            acc += static_cast<uint32_t>(av) * static_cast<uint32_t>(bv);
            exact += static_cast<long long>(av) * bv;
          }
          const int64_t e = bi * stride_c + int64_t{i} * ldc + j;
          const int32_t want = static_cast<int32_t>(static_cast<uint32_t>(alpha) * acc +
                                                    static_cast<uint32_t>(beta) * static_cast<uint32_t>(c0[e]));
          ASSERT_EQ(ref[e], want) << "reference C[b=" << bi << "][" << i << "][" << j << "] " << layout;
          overflowed += static_cast<long long>(want) != alpha * exact + static_cast<long long>(beta) * c0[e];
          ++sampled;
        }
    EXPECT_GT(overflowed, sampled * 9 / 10) << "the inputs should overflow nearly everywhere";

    for (const KernelUnderTest& kernel : built.kernels) {
      if ((kernel.requirements.align_bytes > 4) != vec4) continue;
      CMT_CUDA_CHECK(cudaMemcpy(dc.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
      std::string why_not;
      const auto launch = measurer.kernel_launcher(kernel, &why_not);
      ASSERT_TRUE(launch) << kernel.label << ": " << why_not;
      GemmArgs gk = g;
      gk.c = dc.get();
      ASSERT_EQ((*launch)(gk), cudaSuccess) << kernel.label;
      CMT_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<int32_t> got(c0.size());
      CMT_CUDA_CHECK(cudaMemcpy(got.data(), dc.get(), got.size() * 4, cudaMemcpyDeviceToHost));
      int64_t wrong = 0, first = -1;
      for (size_t e = 0; e < got.size(); ++e)
        if (got[e] != ref[e] && wrong++ == 0) first = static_cast<int64_t>(e);
      EXPECT_EQ(wrong, 0) << kernel.label << " " << layout << ": first wrong at offset " << first << " (C[b="
                          << first / stride_c << "][" << first % stride_c / ldc << "][" << first % ldc << "] is "
                          << (first >= 0 ? got[first] : 0) << ", expected " << (first >= 0 ? ref[first] : 0) << ")";
      ++kernels_checked;
    }
  }
  EXPECT_EQ(kernels_checked, static_cast<int>(built.kernels.size())) << "every build, 4- or 16-byte";
}

INSTANTIATE_TEST_SUITE_P(Layouts, WarptileInt32, ::testing::Values("nn", "nt", "tn", "tt"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cmt
