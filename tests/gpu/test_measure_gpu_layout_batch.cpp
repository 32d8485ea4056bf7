// The measuring side on every layout (nn, nt, tn, tt) and batch shape: one matrix, a packed batch,
// and batches that broadcast A or B (stride 0), on ragged sizes.
//
// - cuBLAS as a kernel, and a naive kernel written here (independent of cuBLAS: it checks the
//   row-major op mapping of the references), pass validation through GpuMeasurer, and cuBLAS times.
// - Deliberately wrong launchers fail, each with the reason that names what it did: an element of
//   the last matrix of C wrong, a write into the guard gap after C[0], an element left unwritten
//   when beta == 0 (the NaN poison), a broadcast operand read as packed.
// - A requirement the layout's strides miss skips the candidate with the reason.
// - Every quick.toml candidate of a template that declares the layout validates and times through
//   GpuMeasurer::measure on every problem it serves (batched problems only for batched families; the
//   batches of 5, 7 and 19 leave fused_batch's blocks partly empty, and one block fewer problems
//   than it takes),
//   in the tuner's layouts (validation leading dimensions 8 wider than the matrix; beta == 0 over
//   NaN), and in workspaces whose leading dimensions are rounded up to 4 (the vectorised paths).
//   Every layout has templates that serve it: one that none serves fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/device.hpp"
#include "cuda/gpu.hpp"
#include "gpu/naive_gemm.hpp"
#include "measure/gpu/gpu_measurer.hpp"
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
// Ragged in every dimension; one row of C; square.
const Shape k_shapes[] = {{257, 129, 300}, {1, 77, 33}, {100, 100, 100}};

struct BatchShape {
  const char* name;
  int64_t batch;
  bool broadcast_a, broadcast_b;
};
// With the problems per block of quick.toml's fused_batch (2, 4, 8): 7 and 5 leave a partial last
// block (or one block with fewer problems than it takes), 19 several full blocks and a partial one.
const BatchShape k_batch_shapes[] = {
    {"one matrix", 1, false, false},
    {"7 packed", 7, false, false},
    {"5 with stride_a = 0", 5, true, false},
    {"5 with stride_b = 0", 5, false, true},
    {"19 packed", 19, false, false},
};

/// Every problem of one layout: each shape in each batch shape.
std::vector<Problem> problems_of(const std::string& layout) {
  const auto ops = parse_layout(layout);
  std::vector<Problem> out;
  for (const Shape& s : k_shapes)
    for (const BatchShape& bs : k_batch_shapes) {
      Problem p = Problem::make(s.m, s.n, s.k, ops->first, ops->second, bs.batch);
      if (bs.broadcast_a) p.stride_a = 0;
      if (bs.broadcast_b) p.stride_b = 0;
      EXPECT_EQ(stride_problem(p), "") << p.to_string();
      out.push_back(p);
    }
  return out;
}

std::vector<std::string> layout_names() { return {"nn", "nt", "tn", "tt"}; }

TuneSettings quick_settings() {
  TuneSettings settings;
  try {
    settings = load_preset(resolve_preset("quick")).tune;
  } catch (const std::exception&) {
    // the defaults, only slower
  }
  settings.allow_spills = true;  // measure every candidate; spilling is about speed, not correctness
  return settings;
}

uint64_t test_seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("input seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

/// "C[b=6][128][64]" for a batch, "C[128][64]" for one matrix.
std::string element(const Problem& p, int64_t b, int64_t row, int64_t col) {
  return p.batched() ? "C[b=" + std::to_string(b) + "][" + std::to_string(row) + "][" + std::to_string(col) + "]"
                     : "C[" + std::to_string(row) + "][" + std::to_string(col) + "]";
}

class LayoutBatchValidation : public ::testing::TestWithParam<std::string> {};

TEST_P(LayoutBatchValidation, CublasAndANaiveKernelPassOnEveryBatchShape) {
  CMT_REQUIRE_GPU();
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  const GemmLauncher cublas = measurer.cublas_launcher();
  const GemmLauncher naive = test::naive_gemm_launcher(test::GemmDefect::none, measurer.stream());
  for (const Problem& p : problems_of(GetParam())) {
    const ValidationResult rc = measurer.validate(cublas, p);
    EXPECT_TRUE(rc.passed) << "cuBLAS on " << p.to_string() << ": " << rc.reason;
    EXPECT_LT(rc.max_error_ratio, 1.0) << p.to_string();
    const ValidationResult rn = measurer.validate(naive, p);
    EXPECT_TRUE(rn.passed) << "the naive kernel on " << p.to_string() << ": " << rn.reason;
    ASSERT_FALSE(is_sticky_error(rn.status)) << "CUDA context lost: " << rn.reason;
    // The baseline: strided-batched cuBLAS in the timing layout.
    const SampleStats stats = measurer.measure_cublas(p);
    EXPECT_GT(stats.count, 0) << p.to_string();
    EXPECT_GT(stats.median, 0.0) << p.to_string();
  }
}

TEST_P(LayoutBatchValidation, WrongLaunchersFailWithTheirReason) {
  CMT_REQUIRE_GPU();
  using test::GemmDefect;
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), test_seed());
  int checked = 0;
  for (const Problem& p : problems_of(GetParam())) {
    const bool broadcast = p.batched() && (p.stride_a == 0 || p.stride_b == 0);
    for (const GemmDefect defect : {GemmDefect::wrong_last_element, GemmDefect::write_gap,
                                    GemmDefect::skip_first_when_beta0, GemmDefect::broadcast_as_packed}) {
      if (defect == GemmDefect::broadcast_as_packed && !broadcast) continue;
      const std::string what = std::string(test::to_string(defect)) + " on " + p.to_string();
      const ValidationResult r = measurer.validate(test::naive_gemm_launcher(defect, measurer.stream()), p);
      ASSERT_FALSE(is_sticky_error(r.status)) << what << ": CUDA context lost: " << r.reason;
      EXPECT_EQ(r.status, cudaSuccess) << what << ": " << r.reason;
      EXPECT_FALSE(r.passed) << what << " passed validation";
      const std::string& reason = r.reason;
      switch (defect) {
        case GemmDefect::wrong_last_element:
          EXPECT_NE(reason.find("1 of " + std::to_string(p.m * p.n * p.batch) + " elements wrong"), std::string::npos)
              << what << ": " << reason;
          EXPECT_NE(reason.find("first " + element(p, p.batch - 1, p.m / 2, p.n / 2) + " = "), std::string::npos)
              << what << ": " << reason;
          break;
        case GemmDefect::write_gap:
          EXPECT_NE(reason.find("writes outside C's M x N block"), std::string::npos) << what << ": " << reason;
          EXPECT_NE(reason.find(p.batched() ? "1 floats after C[b=0] (the gap before C[b=1])" : "1 floats after C"),
                    std::string::npos)
              << what << ": " << reason;
          EXPECT_EQ(reason.find("elements wrong"), std::string::npos) << what << ": " << reason;
          break;
        case GemmDefect::skip_first_when_beta0:
          EXPECT_NE(reason.find("beta=0"), std::string::npos) << what << ": " << reason;
          EXPECT_NE(reason.find("first " + element(p, 0, 0, 0) + " = nan"), std::string::npos) << what << ": " << reason;
          break;
        case GemmDefect::broadcast_as_packed:
          EXPECT_NE(reason.find("elements wrong"), std::string::npos) << what << ": " << reason;
          break;
        case GemmDefect::none:
          break;
      }
      std::printf("%s: %s\n", what.c_str(), reason.c_str());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 5 * 3 + 3 * 2);  // 3 shapes x 5 batch shapes x 3 defects, and 2 broadcasts per shape
}

TEST_P(LayoutBatchValidation, RequirementsTheStridesMissSkip) {
  CMT_REQUIRE_GPU();
  const auto ops = parse_layout(GetParam());
  const DeviceInfo device = select_device(0);
  GpuMeasurer measurer(device, quick_settings(), 7);
  // lda, ldb and ldc are multiples of 4, but A's matrices lie 10001 floats apart: not 16-byte aligned.
  Problem p = Problem::make(100, 100, 100, ops->first, ops->second, 3);
  p.stride_a = p.packed_stride_a() + 1;
  ASSERT_EQ(stride_problem(p), "");
  Requirements vec4;
  vec4.align_bytes = 16;
  vec4.ld_multiple = 4;
  // Skipped before the kernel is loaded: no binary is needed.
  const Measurement m = measurer.measure({nullptr, LaunchShape{}, vec4, "vec4"}, p, MeasureLimits{});
  EXPECT_EQ(m.outcome, Outcome::skipped) << m.reason;
  EXPECT_NE(m.reason.find("the stride of A is 10001 floats"), std::string::npos) << m.reason;
  EXPECT_EQ(m.layout.stride_a, 10001);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayoutBatchValidation, ::testing::ValuesIn(layout_names()),
                         [](const auto& info) { return info.param; });

// The device memory of the largest batches the tuner is meant for (no GPU needed): far below 80 GB.
TEST(LayoutBatchWorkspace, LargeBatchesStayLean) {
  for (const auto& [p, bound_gib] : {std::pair{Problem::make(32, 32, 64, false, false, 16384), 2.0},
                                     std::pair{Problem::make(64, 64, 64, true, true, 4096), 1.0},
                                     std::pair{Problem::make(4096, 4096, 4096), 1.0}}) {
    const double gib = static_cast<double>(ProblemWorkspace::bytes_needed(p)) / (1u << 30);
    std::printf("%s: workspace %.3f GiB\n", p.to_string().c_str(), gib);
    EXPECT_LT(gib, bound_gib) << p.to_string();
  }
  // A broadcast operand is one matrix: the workspace shrinks (its arena only keeps what a kernel that
  // ignored the broadcast would read, and the rest of the workspace covers that here).
  Problem packed = Problem::make(64, 64, 64, false, false, 4096), broadcast = packed;
  broadcast.stride_a = 0;
  EXPECT_LT(ProblemWorkspace::bytes_needed(broadcast), ProblemWorkspace::bytes_needed(packed));
}

// How validation names a place in C's buffer (no GPU needed): the offsets the defects above hit.
TEST(LayoutBatchWorkspace, ValidationNamesElementsAndGuardsOfEveryMatrix) {
  CWorkLayout one;
  one.lead = 1024;
  one.m = 3;
  one.n = 5;
  one.ldc = 13;
  one.tail = 1024 + 13;
  EXPECT_EQ(one.total(), 1024 + 39 + 1037);
  EXPECT_EQ(describe_c_offset(one, 0), "1024 floats before C");
  EXPECT_EQ(describe_c_offset(one, 1023), "1 floats before C");
  EXPECT_EQ(describe_c_offset(one, 1024), "C[0][0]");
  EXPECT_EQ(describe_c_offset(one, 1024 + 13 + 4), "C[1][4]");
  EXPECT_EQ(describe_c_offset(one, 1024 + 13 + 5), "C[1][5] (a padding column)");
  EXPECT_EQ(describe_c_offset(one, 1024 + 39), "1 floats after C");
  EXPECT_EQ(describe_c_offset(one, one.total() - 1), "1037 floats after C");

  // The validation layout of a batch: C[b] starts stride_c after C[b - 1], with a guard gap between.
  const Problem p = Problem::make(3, 5, 7, true, false, 4);
  const Layout v = validation_layout(p);
  ASSERT_GE(v.stride_c, p.m * v.ldc + c_guard_after(v.ldc));
  CWorkLayout batch = one;
  batch.ldc = v.ldc;
  batch.batch = 4;
  batch.stride = v.stride_c;
  batch.tail = c_guard_after(v.ldc);
  const int64_t end0 = batch.lead + p.m * v.ldc;  // the first float past C[0]'s last row
  EXPECT_EQ(describe_c_offset(batch, 1000), "24 floats before the first C");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + v.ldc + 2), "C[b=0][1][2]");
  EXPECT_EQ(describe_c_offset(batch, end0), "1 floats after C[b=0] (the gap before C[b=1])");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + v.stride_c - 1),
            std::to_string(v.stride_c - p.m * v.ldc) + " floats after C[b=0] (the gap before C[b=1])");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + v.stride_c), "C[b=1][0][0]");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + 3 * v.stride_c + 2 * v.ldc + 4), "C[b=3][2][4]");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + 3 * v.stride_c + 2 * v.ldc + 5), "C[b=3][2][5] (a padding column)");
  EXPECT_EQ(describe_c_offset(batch, batch.lead + 3 * v.stride_c + 3 * v.ldc), "1 floats after the last C");
  EXPECT_EQ(describe_c_offset(batch, batch.total() - 1), std::to_string(batch.tail) + " floats after the last C");
}

// --- real template kernels --------------------------------------------------------------------

class LayoutBatchTemplates : public ::testing::TestWithParam<std::string> {};

TEST_P(LayoutBatchTemplates, EveryServingQuickCandidateValidates) {
  CMT_REQUIRE_GPU();
  const std::string layout = GetParam();
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  const DeviceInfo device = select_device(0);
  Target target = target_of(device);
  target.layouts = {layout};
  const SearchSpace space = enumerate_space(templates, preset, target);
  // nn: only the families that declare more than nn or batches (every family's nn kernels, one
  // matrix, are test_ragged_correctness's); the other layouts: every family that declares it.
  std::vector<const Candidate*> serving;
  std::set<std::string> families;
  for (const Candidate& c : space.candidates) {
    const TemplateDesc& t = *c.tmpl;
    if (!t.supports_layout(layout) || t.layout_of(c.values) != layout) continue;
    if (layout == "nn" && !t.batched && t.layouts == std::vector<std::string>{"nn"}) continue;
    serving.push_back(&c);
    families.insert(t.name + (t.batched ? " (batched)" : " (not batched)"));
  }
  // Every layout is served (each family declares its `layouts`): none may drop out unnoticed.
  ASSERT_FALSE(serving.empty()) << "no template of quick.toml serves layout " << layout;
  // The family with several problems per block is among them in every layout.
  EXPECT_EQ(families.count("fused_batch (batched)"), 1u) << "quick.toml's fused_batch candidates, layout " << layout;
  std::string names;
  for (const auto& f : families) names += (names.empty() ? "" : ", ") + f;
  std::printf("layout %s: %zu quick candidates of %s\n", layout.c_str(), serving.size(), names.c_str());

  test::TempDir dir;
  Store store(dir / "cache.db");
  const NvrtcCompiler nvrtc;
  CompileService compiler(store, nvrtc, device.arch(), 0);
  for (size_t i = 0; i < serving.size(); ++i) compiler.submit(*serving[i], i);

  const uint64_t seed = test_seed();
  GpuMeasurer measurer(device, quick_settings(), seed);
  CublasHandle cublas(measurer.stream());
  Validator validator(measurer.stream());
  const std::vector<Problem> problems = problems_of(layout);
  // Leading dimensions rounded up to 4 (and strides with them): the paths that need lda % 4 == 0.
  std::vector<std::unique_ptr<ProblemWorkspace>> aligned;
  for (const Problem& p : problems)
    aligned.push_back(std::make_unique<ProblemWorkspace>(p, seed + 1 + aligned.size(), measurer.stream(), cublas, 4));

  MeasureLimits limits;
  limits.kernel_timeout_ms = 20000;  // a hang fails the test instead of stalling it
  std::deque<BinaryRecord> binaries;  // KernelUnderTest points at them
  int measured = 0, batched_measured = 0, skipped = 0;
  while (auto compiled = compiler.next()) {
    const Candidate& cand = *compiled->candidate;
    ASSERT_TRUE(compiled->binary.ok) << cand.id() << " failed to compile:\n" << compiled->binary.log;
    binaries.push_back(compiled->binary);
    const KernelUnderTest kernel{&binaries.back(), cand.shape, cand.requirements, cand.id()};
    for (size_t i = 0; i < problems.size(); ++i) {
      const Problem& p = problems[i];
      if (!cand.tmpl->serves(cand.values, p)) continue;
      const std::string what = cand.id() + " on " + p.to_string();
      const Measurement m = measurer.measure(kernel, p, limits);
      ASSERT_FALSE(measurer.context_lost()) << what << ": " << m.reason;
      if (m.outcome == Outcome::skipped) {
        ++skipped;
        std::printf("skipped %s: %s\n", what.c_str(), m.reason.c_str());
      } else {
        EXPECT_EQ(m.outcome, Outcome::ok) << what << ": " << to_string(m.outcome) << ": " << m.reason;
        ++measured;
        batched_measured += p.batched();
      }

      const ProblemWorkspace& ws = *aligned[i];
      if (unmet_requirements(cand.requirements, ws.timing()) || unmet_requirements(cand.requirements, ws.validation()))
        continue;
      std::string why_not;
      const auto launch = measurer.kernel_launcher(kernel, &why_not);
      if (!launch) continue;  // spills aside (allowed here), what measure skipped above
      const ValidationResult r = validator.validate(*launch, ws, limits.kernel_timeout_ms);
      ASSERT_FALSE(is_sticky_error(r.status)) << what << " (lda " << ws.validation().lda << "): CUDA context lost: " << r.reason;
      EXPECT_TRUE(r.passed) << what << " (ld rounded to 4, lda " << ws.validation().lda << "): " << r.reason;
      ++measured;
      batched_measured += p.batched();
    }
  }
  std::printf("layout %s: %d validations (%d batched), %d skipped\n", layout.c_str(), measured, batched_measured,
              skipped);
  EXPECT_GT(measured, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayoutBatchTemplates, ::testing::ValuesIn(layout_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cmt
