// The tuning loop's bookkeeping: trials committed, resume, --retune, --budget, winners.
// The GPU does not run here, so a scripted Measurer stands in for it; compilation (NVRTC) and the
// database (SQLite) are real. The real measurer is covered by the GPU tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "core/hash.hpp"
#include "space/space.hpp"
#include "test_support.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "tune/calibration.hpp"
#include "tune/tuner.hpp"

namespace cmt {
namespace {

/// Times derived from the kernel's label: coalesced BLOCK=32 is fastest, naive slowest.
class ScriptedMeasurer final : public Measurer {
 public:
  Measurement measure(const KernelUnderTest& k, const Problem&, const MeasureLimits& limits) override {
    ++measured;
    last_abandon_bar = limits.abandon_above_ms;
    last_timeout = limits.kernel_timeout_ms;
    Measurement m;
    const double ms = time_of(k.label);
    m.outcome = Outcome::ok;
    m.timing = SampleStats{ms, ms * 0.99, ms, 0.01, 10};
    m.max_error_ratio = 0.01;
    m.max_abs_error = 1e-6;
    return m;
  }
  SampleStats measure_cublas(const Problem&) override {
    ++cublas;
    SampleStats s;
    s.median = s.min = 1.0;
    s.count = 10;
    return s;
  }
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem&, double) override {
    ++retimed;
    std::vector<RetimeResult> out;
    for (const auto& k : kernels) {
      RetimeResult r;
      r.ok = true;
      r.stats.median = time_of(k.label) * retime_factor;
      r.stats.count = 30;
      out.push_back(r);
    }
    RetimeResult cublas_result;
    cublas_result.ok = true;
    cublas_result.stats.median = 1.0;
    cublas_result.stats.count = 30;
    out.push_back(cublas_result);
    return out;
  }
  bool context_lost() const override { return false; }

  static double time_of(const std::string& label) {
    if (label.find("naive") != std::string::npos) return 4.0;
    if (label.find("BLOCK=32") != std::string::npos) return 0.5;
    return 2.0;
  }
  int measured = 0, cublas = 0, retimed = 0;
  double last_abandon_bar = 0;
  double last_timeout = 0;
  double retime_factor = 1.01;  // interleaved time / back-to-back time
};

DeviceInfo fake_device() {
  DeviceInfo d;
  d.name = "Scripted GPU";
  d.uuid = "GPU-00000000-0000-0000-0000-000000000001";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  return d;
}

class TunerResume : public ::testing::Test {
 protected:
  void SetUp() override {
    test::copy_builtin_templates(m_dir / "templates");
    m_templates = load_templates({m_dir / "templates"});
    m_preset.name = "test";
    m_preset.templates.push_back({"coalesced", {{"BLOCK", {16, 32}}}});
    m_preset.templates.push_back({"naive", {}});
  }
  TuneRequest request() {
    TuneRequest r;
    r.device = fake_device();
    r.problems = {{64, 64, 64}, {100, 50, 30}};
    r.preset = m_preset;
    m_space = enumerate_space(m_templates, m_preset, test::sm90());
    r.candidates = m_space.candidates;
    r.seed = 5;
    r.command_line = "cm-tune tune (test)";
    return r;
  }
  test::TempDir m_dir;
  const NvrtcCompiler m_nvrtc;
  std::vector<TemplateDesc> m_templates;
  Preset m_preset;
  SearchSpace m_space;
};

TEST_F(TunerResume, CommitsTrialsPicksWinnersAndResumes) {
  const std::string db = (m_dir / "tune.db").string();
  {
    Store store(db);
    ScriptedMeasurer m;
    const TuneSummary s = run_tune(store, m_nvrtc, m, request(), nullptr);
    EXPECT_EQ(s.trials_measured, 6);
    EXPECT_EQ(m.measured, 6);
    EXPECT_EQ(m.retimed, 2);
    ASSERT_EQ(s.problems.size(), 2u);
    for (const auto& p : s.problems) {
      ASSERT_TRUE(p.winner.has_value());
      EXPECT_EQ(p.winner->template_name, "coalesced");
      EXPECT_EQ(p.winner->params, "BLOCK=32");
      EXPECT_NEAR(p.winner->ratio_to_cublas, 1.0 / 0.505, 1e-9);  // from the interleaved re-timing
      EXPECT_EQ(p.ok, 3);
      EXPECT_GT(p.winner->shape.threads, 0);
      EXPECT_GT(p.winner->shape.tile_m, 0);
    }
  }
  {  // A new process, same database: nothing is measured again.
    Store store(db);
    ScriptedMeasurer m;
    const TuneSummary s = run_tune(store, m_nvrtc, m, request(), nullptr);
    EXPECT_EQ(s.trials_measured, 0);
    EXPECT_EQ(s.trials_reused, 6);
    EXPECT_EQ(m.measured, 0);
    EXPECT_EQ(m.cublas, 0);
    EXPECT_EQ(m.retimed, 0);
    EXPECT_TRUE(s.problems[0].winner.has_value());
  }
  {  // --retune measures everything again and replaces the rows.
    Store store(db);
    ScriptedMeasurer m;
    TuneRequest r = request();
    r.retune = true;
    const TuneSummary s = run_tune(store, m_nvrtc, m, r, nullptr);
    EXPECT_EQ(s.trials_measured, 6);
    const int64_t device_id = store.devices().front().id;
    EXPECT_EQ(store.trials(device_id, Problem{64, 64, 64}).size(), 3u);
    // The abandon bar is 3x the best time known for the problem.
    EXPECT_NEAR(m.last_abandon_bar, 3.0 * 0.5, 1e-9);
  }
}

// A kernel that was not re-timed must not win on its back-to-back median against leaders whose
// interleaved times came out slower than that median.
TEST_F(TunerResume, ReTimedLeadersRankBeforeTrialsThatWereNotReTimed) {
  m_preset.tune.retime_top = 1;
  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  m.retime_factor = 5.0;  // BLOCK=32: 0.5 ms back to back, 2.5 ms interleaved; BLOCK=16: 2.0 ms
  const TuneSummary s = run_tune(store, m_nvrtc, m, request(), nullptr);
  for (const auto& p : s.problems) {
    ASSERT_TRUE(p.winner.has_value());
    EXPECT_EQ(p.winner->params, "BLOCK=32");
    EXPECT_NEAR(p.winner->median_ms, 2.5, 1e-9);
  }
}

TEST_F(TunerResume, CompileErrorsAreRecordedTrials) {
  {
    std::ofstream f(m_dir / "templates" / "naive.cuh", std::ios::app);
    f << "\nstatic_assert(false, \"planted error\");\n";
  }
  m_templates = load_templates({m_dir / "templates"});
  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  const TuneSummary s = run_tune(store, m_nvrtc, m, request(), nullptr);
  EXPECT_EQ(s.compile_failures, 1);
  EXPECT_EQ(m.measured, 4);
  const int64_t device_id = store.devices().front().id;
  int compile_errors = 0;
  for (const auto& t : store.trials(device_id, Problem{100, 50, 30}))
    if (t.outcome == Outcome::compile_error) {
      ++compile_errors;
      EXPECT_EQ(t.template_name, "naive");
      EXPECT_NE(t.log.find("planted error"), std::string::npos) << t.log;
    }
  EXPECT_EQ(compile_errors, 1);
}

TEST_F(TunerResume, BudgetSamplesSeeded) {
  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  TuneRequest r = request();
  r.budget = 2;
  const TuneSummary s = run_tune(store, m_nvrtc, m, r, nullptr);
  EXPECT_EQ(s.candidates, 2);
  EXPECT_EQ(s.trials_measured, 4);
}

TEST_F(TunerResume, AppliesLimitsAFamilyAndCalibrationMeasuresLeadersOnItsShapes) {
  // coalesced now serves only problems of at most 64 rows.
  const auto desc = m_dir / "templates" / "coalesced.toml";
  std::string text = test::read_file(desc);
  text = "applies = \"M <= 64\"\n" + text;
  std::ofstream(desc) << text;
  m_templates = load_templates({m_dir / "templates"});
  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  TuneRequest r = request();
  r.calibrate = true;
  r.calibration_leaders = 1;
  const TuneSummary s = run_tune(store, m_nvrtc, m, r, nullptr);
  EXPECT_TRUE(s.stop_reason.empty()) << s.stop_reason;

  const std::vector<CalibrationShape> shapes = calibration_shapes(r.problems);
  ASSERT_FALSE(shapes.empty());
  ASSERT_EQ(s.calibration.size(), shapes.size());
  std::map<Problem, std::set<std::string>> measured;
  for (const auto& t : store.trials(1)) measured[t.problem].insert(t.template_name + "[" + t.params + "]");
  // The requested problems: coalesced only where it applies (64 x 64 x 64), naive everywhere.
  const Problem small{64, 64, 64}, tall{100, 50, 30};
  EXPECT_EQ(measured[small].size(), 3u);
  EXPECT_EQ(measured[tall], (std::set<std::string>{"naive[BLOCK=16]"}));
  // Calibration: the leaders on every shape, also where their family does not apply (the dispatch
  // may run them anywhere): naive, the best at 100 x 50 x 30, and the best at 64 x 64 x 64, a
  // coalesced candidate. The other coalesced candidate, measured because its family has `applies`,
  // only on the shapes it applies to.
  std::string leader_small;
  double best_small = 1e300;
  for (const auto& t : store.trials(1, small))
    if (t.outcome == Outcome::ok && *t.median_ms < best_small) {
      best_small = *t.median_ms;
      leader_small = t.template_name + "[" + t.params + "]";
    }
  ASSERT_EQ(leader_small.rfind("coalesced[", 0), 0u) << "the scripted times make a coalesced candidate the best at 64^3";
  const std::string other = leader_small == "coalesced[BLOCK=32]" ? "coalesced[BLOCK=16]" : "coalesced[BLOCK=32]";
  for (const auto& shape : shapes) {
    const auto& names = measured[shape.problem];
    EXPECT_TRUE(names.count("naive[BLOCK=16]")) << shape.problem.to_string();
    EXPECT_TRUE(names.count(leader_small)) << shape.problem.to_string();
    const bool applies = shape.problem.m <= 64;
    EXPECT_EQ(names.count(other) == 1, applies) << shape.problem.to_string();
  }
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const auto& c) { return c.problem.m <= 64; }));
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const auto& c) { return c.problem.m > 64; }));
  // A rerun measures nothing again, calibration included.
  ScriptedMeasurer again;
  const TuneSummary s2 = run_tune(store, m_nvrtc, again, r, nullptr);
  EXPECT_EQ(s2.trials_measured, 0);
  EXPECT_EQ(again.measured, 0);
}

TEST(Calibration, ShapesCoverEveryClassAndAreDeterministic) {
  const std::vector<Problem> requested = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
                                          {4096, 4096, 4096}};
  const auto shapes = calibration_shapes(requested);
  std::set<std::string> classes;
  for (const auto& s : shapes) {
    classes.insert(s.shape_class);
    EXPECT_EQ(std::count(requested.begin(), requested.end(), s.problem), 0) << s.problem.to_string();
    EXPECT_GE(s.problem.m, 1);
  }
  EXPECT_EQ(classes, (std::set<std::string>{"ragged", "rectangular", "skinny", "small-k", "large-k", "tiny"}));
  const auto again = calibration_shapes(requested);
  ASSERT_EQ(again.size(), shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(again[i].problem, shapes[i].problem);
  EXPECT_TRUE(calibration_shapes({}).empty());
  for (const auto& s : shapes) EXPECT_EQ(s.problem.batch, 1) << "no batches unless batched problems are asked for";
}

TEST(Calibration, BatchedProblemsGetRaggedBatchesOfTheirSizesAndCounts) {
  Problem broadcast = Problem::make(512, 512, 512, false, true, 16);
  broadcast.stride_b = 0;
  const std::vector<Problem> requested = {Problem::make(32, 32, 64, false, true, 16384),
                                          Problem::make(128, 128, 128, false, true, 1024), broadcast};
  std::vector<Problem> batched;
  for (const auto& s : calibration_shapes(requested)) {
    EXPECT_EQ(s.problem.layout(), "nt") << "the requested problems' layout";
    if (s.shape_class != "batched") continue;
    EXPECT_GE(s.problem.batch, 2);
    batched.push_back(s.problem);
  }
  // 32x32x64 has the scale of a 40^3 cube: the smallest matrices are ragged ~47^3 in the largest
  // batch; the largest (512^3) ragged ~561^3 in the smallest batch; and B broadcast once.
  ASSERT_EQ(batched.size(), 5u);
  EXPECT_EQ(batched[0].batch, 16384);
  EXPECT_LT(batched[0].m, 64);
  EXPECT_NE(batched[0].m % 16, 0) << "ragged";
  EXPECT_EQ(batched[2].batch, 16);
  EXPECT_GT(batched[2].m, 512);
  EXPECT_EQ(batched[4].stride_b, 0);
  EXPECT_EQ(std::count_if(batched.begin(), batched.end(), [](const Problem& p) { return p.stride_b == 0; }), 1);
  EXPECT_EQ(stride_problem(batched[4]), "");
}

}  // namespace
}  // namespace cmt
