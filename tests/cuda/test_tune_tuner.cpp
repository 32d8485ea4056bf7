// The tuning loop's bookkeeping: trials committed, resume, --retune, --budget, winners.
// The GPU does not run here, so a scripted Measurer stands in for it; compilation (NVRTC) and the
// database (SQLite) are real. The real measurer is covered by the GPU tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/dtype.hpp"
#include "core/hash.hpp"
#include "search/calibration.hpp"
#include "space/space.hpp"
#include "test_support.hpp"
#include "tune/tuner.hpp"

namespace cmt {
namespace {

/// Times derived from the kernel's label: coalesced BLOCK=32 is fastest, naive slowest.
class ScriptedMeasurer final : public Measurer {
 public:
  Measurement measure(const KernelUnderTest& k, const Problem& p, const MeasureLimits& limits) override {
    ++measured;
    last_abandon_bar = limits.abandon_above_ms;
    last_timeout = limits.kernel_timeout_ms;
    limits_of[p] = limits;
    Measurement m;
    const double ms = time_of(k.label);
    m.outcome = Outcome::ok;
    m.timing = SampleStats{ms, ms * 0.99, ms, 0.01, 10};
    m.max_error_ratio = 0.01;
    m.max_abs_error = 1e-6;
    return m;
  }
  SampleStats measure_cublas(const Problem& p) override {
    ++cublas;
    // As the GPU measurer: a type without a cuBLAS baseline has none to time.
    if (!type_info(p.dtype).cublas_baseline) ADD_FAILURE() << "cuBLAS asked for on " << p.to_string();
    SampleStats s;
    s.median = s.min = 1.0;
    s.count = 10;
    return s;
  }
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& p, double) override {
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
    cublas_result.ok = type_info(p.dtype).cublas_baseline;
    if (cublas_result.ok) {
      cublas_result.stats.median = 1.0;
      cublas_result.stats.count = 30;
    } else {
      cublas_result.error = "cuBLAS has no i32 GEMM: no baseline";
    }
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
  std::map<Problem, MeasureLimits> limits_of;  // the last measurement's of each problem
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
  /// A request of blocktile2d's 64 x 64 point alone (a real NVRTC build of each type and layout)
  /// for these problems, enumerated for their layouts and types.
  TuneRequest blocktile2d_request(const std::vector<Problem>& problems, const std::vector<std::string>& layouts,
                                  const std::vector<DType>& dtypes) {
    m_preset.templates.clear();
    m_preset.templates.push_back({"blocktile2d", {{"BM", {64}}, {"BN", {64}}, {"BK", {8}}, {"TM", {8}}, {"TN", {4}}}});
    Target target = test::sm90();
    target.layouts = layouts;
    target.dtypes = dtypes;
    m_space = enumerate_space(m_templates, m_preset, target);
    TuneRequest r;
    r.device = fake_device();
    r.problems = problems;
    r.preset = m_preset;
    r.candidates = m_space.candidates;
    r.seed = 5;
    r.command_line = "cm-tune tune (blocktile2d test)";
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

  // naive and coalesced compute nn alone, unbatched: the shapes of the other layouts and the
  // batches are left out.
  std::vector<CalibrationShape> shapes;
  for (const auto& c : calibration_shapes(r.problems))
    if (c.problem.layout() == "nn" && c.problem.batch == 1) shapes.push_back(c);
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

// A family's candidates are calibrated as shape-specific only when they do not apply to some
// requested problem: one that applies to every requested problem was measured on them already.
TEST_F(TunerResume, CalibrationTakesOnlyCandidatesThatSomeRequestedShapeLeavesOut) {
  const auto desc = m_dir / "templates" / "coalesced.toml";
  const std::string text = "applies = \"M <= 64\"\n" + test::read_file(desc);
  std::ofstream(desc, std::ios::trunc) << text;
  m_templates = load_templates({m_dir / "templates"});
  const TuneRequest r = request();
  const auto coalesced = [&](const std::vector<CalibrationCandidate>& chosen) {
    int n = 0;
    for (const auto& c : chosen) n += r.candidates[c.index].tmpl->name == "coalesced" && !c.leader;
    return n;
  };
  EXPECT_EQ(coalesced(calibration_candidates({}, r.candidates, 1, {Problem{64, 64, 64}}, test::sm90())), 0);
  EXPECT_EQ(coalesced(calibration_candidates({}, r.candidates, 1, {Problem{64, 64, 64}, Problem{100, 50, 30}}, test::sm90())), 2);
}

// f64 and i32 problems through the whole pipeline with the typed generic default (real NVRTC
// builds of each type): f64 against cuBLAS DGEMM as f32 against SGEMM; i32 without a baseline, so
// no cuBLAS call, no baseline row, no ratio (NULL in trials, 0 in winners), winners by time.
// (Their calibration is the next test's.)
TEST_F(TunerResume, F64AndI32ProblemsTuneTheTypedGenericDefault) {
  const Problem f64 = Problem::make(64, 64, 64, false, false, 1, DType::f64);
  const Problem i32 = Problem::make(64, 64, 64, false, false, 1, DType::i32);
  Problem i32_tn = Problem::make(100, 50, 30, true, false, 3, DType::i32);
  i32_tn.stride_b = 0;
  const TuneRequest r = blocktile2d_request({f64, i32, i32_tn}, {"nn", "tn"}, {DType::f64, DType::i32});
  ASSERT_EQ(r.candidates.size(), 4u);  // two types x two layouts

  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  const TuneSummary s = run_tune(store, m_nvrtc, m, r, nullptr);
  EXPECT_TRUE(s.stop_reason.empty()) << s.stop_reason;
  EXPECT_EQ(s.compile_failures, 0);
  EXPECT_EQ(s.trials_measured, 3);
  EXPECT_EQ(m.cublas, 1) << "only f64 has a baseline";
  EXPECT_EQ(m.retimed, 3);
  // No candidate is abandoned before one of the problem's trials has passed, so every problem gets
  // a winner even where cuBLAS (DGEMM on the tensor cores) is faster than every candidate; an i32
  // problem has no cuBLAS time at all. The watchdog: 2 s for these small problems.
  EXPECT_EQ(m.limits_of[i32].abandon_above_ms, 0.0);
  EXPECT_EQ(m.limits_of[i32_tn].abandon_above_ms, 0.0);
  EXPECT_EQ(m.limits_of[f64].abandon_above_ms, 0.0);
  for (const auto& [p, limits] : m.limits_of) EXPECT_EQ(limits.kernel_timeout_ms, 2000.0) << p.to_string();
  ASSERT_EQ(s.problems.size(), 3u);
  const int64_t device_id = store.devices().front().id;
  for (const ProblemSummary& p : s.problems) {
    ASSERT_TRUE(p.winner.has_value()) << p.problem.to_string();
    EXPECT_EQ(p.winner->template_name, "blocktile2d");
    EXPECT_NE(p.winner->params.find(fmt::format("DTYPE={}", static_cast<int>(p.problem.dtype))), std::string::npos)
        << p.winner->params;
    EXPECT_NEAR(p.winner->median_ms, 2.0 * 1.01, 1e-9);
    const auto trials = store.trials(device_id, p.problem);
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0].problem, p.problem);
    EXPECT_TRUE(trials[0].retime_median_ms.has_value());
    if (p.problem.dtype == DType::f64) {
      ASSERT_TRUE(p.baseline.has_value());
      EXPECT_NEAR(p.winner->ratio_to_cublas, 1.0 / 2.02, 1e-9);
      ASSERT_TRUE(trials[0].ratio_to_cublas.has_value());
      EXPECT_TRUE(store.find_baseline(device_id, p.problem).has_value());
    } else {
      EXPECT_FALSE(p.baseline.has_value());
      EXPECT_EQ(p.winner->ratio_to_cublas, 0.0) << "no baseline: 0 in winners";
      EXPECT_FALSE(trials[0].ratio_to_cublas.has_value()) << "no baseline: NULL in trials";
      EXPECT_FALSE(store.find_baseline(device_id, p.problem).has_value());
      for (const auto& w : store.winners(device_id, p.problem)) EXPECT_EQ(w.ratio_to_cublas, 0.0) << w.scope;
    }
  }
  // A rerun measures nothing again and asks nothing of cuBLAS.
  ScriptedMeasurer again;
  const TuneSummary s2 = run_tune(store, m_nvrtc, again, r, nullptr);
  EXPECT_EQ(s2.trials_measured, 0);
  EXPECT_EQ(s2.trials_reused, 3);
  EXPECT_EQ(again.cublas, 0);
  EXPECT_EQ(again.retimed, 0);
}

// One tune serves every layout: an nn-only f64 tune calibrates its leader's builds of nt, tn and tt
// on the shapes of those layouts (and in batches), so each layout gets winners measured in it.
TEST_F(TunerResume, CalibrationMeasuresTheLeadersBuildsOfEveryLayout) {
  TuneRequest r = blocktile2d_request({Problem::make(64, 64, 64, false, false, 1, DType::f64)}, {"nn"}, {DType::f64});
  ASSERT_EQ(r.candidates.size(), 1u) << "nn only";
  r.calibrate = true;
  r.calibration_leaders = 1;
  Store store(m_dir / "tune.db");
  ScriptedMeasurer m;
  const TuneSummary s = run_tune(store, m_nvrtc, m, r, nullptr);
  EXPECT_TRUE(s.stop_reason.empty()) << s.stop_reason;
  EXPECT_EQ(s.compile_failures, 0);
  const auto shapes = calibration_shapes(r.problems);
  ASSERT_EQ(s.calibration.size(), shapes.size());
  std::set<std::string> layouts_seen;
  for (const auto& shape : shapes) {
    const Problem& p = shape.problem;
    EXPECT_EQ(p.dtype, DType::f64);
    const auto trials = store.trials(1, p);
    ASSERT_EQ(trials.size(), 1u) << p.to_string();
    const std::string want = fmt::format("TRANS_A={},TRANS_B={}", p.trans_a ? 1 : 0, p.trans_b ? 1 : 0);
    EXPECT_NE(trials[0].params.find(want), std::string::npos) << p.to_string() << ": " << trials[0].params;
    EXPECT_EQ(trials[0].template_name, "blocktile2d");
    layouts_seen.insert(std::string(p.layout()));
    const auto winners = store.winners(1, p);
    EXPECT_FALSE(winners.empty()) << p.to_string();
  }
  EXPECT_EQ(layouts_seen, (std::set<std::string>{"nn", "nt", "tn", "tt"}));
  ScriptedMeasurer again;
  EXPECT_EQ(run_tune(store, m_nvrtc, again, r, nullptr).trials_measured, 0) << "a rerun measures nothing";
}

// The watchdog of a problem without a cuBLAS baseline follows the time it takes at the device's
// peak rate for its type.
TEST(TunerTimeout, ProblemsWithoutABaselineScaleWithThePeak) {
  DeviceInfo h100;
  h100.cc_major = 9;
  h100.sm_count = 132;
  h100.clock_khz = 1980000;
  const Problem big = Problem::make(16384, 16384, 16384, false, false, 1, DType::i32);
  const double peak_ms = peak_time_ms(h100, big);
  EXPECT_NEAR(peak_ms, big.flops() / (h100.int32_peak_tops() * 1e12) * 1e3, 1e-9);
  EXPECT_GT(peak_ms, 100.0);
  Problem f64 = big;
  f64.dtype = DType::f64;
  // FP64 is held against the tensor cores where the GPU has them, as bench holds it (one peak per type).
  ASSERT_GT(h100.fp64_tensor_peak_tflops(), h100.fp64_peak_tflops());
  EXPECT_NEAR(peak_time_ms(h100, f64), big.flops() / (h100.fp64_tensor_peak_tflops() * 1e12) * 1e3, 1e-9);
  EXPECT_EQ(peak_time_ms(DeviceInfo{}, big), 0.0) << "an unknown device has no peak";

  test::TempDir dir;
  Store store(dir / "t.db");
  DeviceRecord d;
  d.uuid = "GPU-timeout";
  const int64_t device_id = store.upsert_device(d);
  TuneRequest r;
  r.device = h100;
  const ProblemState state(store, device_id, big);
  EXPECT_NEAR(kernel_timeout_ms(r, state), 200.0 * peak_ms, 1e-6);
  const ProblemState small(store, device_id, Problem::make(64, 64, 64, false, false, 1, DType::i32));
  EXPECT_EQ(kernel_timeout_ms(r, small), 2000.0);
  const ProblemState f32(store, device_id, Problem::make(16384, 16384, 16384));
  EXPECT_EQ(kernel_timeout_ms(r, f32), 2000.0) << "f32 waits for cuBLAS's time, as before";
  r.kernel_timeout_s = 3.0;
  EXPECT_EQ(kernel_timeout_ms(r, state), 3000.0);
}

TEST(Calibration, ShapesCoverEveryClassAndLayoutAndAreDeterministic) {
  const std::vector<Problem> requested = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
                                          {4096, 4096, 4096}};
  const auto shapes = calibration_shapes(requested);
  std::set<std::string> classes;
  std::map<std::string, int> per_layout;
  for (const auto& s : shapes) {
    classes.insert(s.shape_class);
    ++per_layout[std::string(s.problem.layout())];
    EXPECT_EQ(std::count(requested.begin(), requested.end(), s.problem), 0) << s.problem.to_string();
    EXPECT_GE(s.problem.m, 1);
    EXPECT_EQ(s.problem.dtype, DType::f32);
    if (s.full_search) EXPECT_EQ(s.problem.layout(), "nn") << "the whole space only in the requested layout";
  }
  EXPECT_EQ(classes, (std::set<std::string>{"ragged", "rectangular", "skinny", "small-k", "large-k", "tiny", "layouts",
                                            "batched"}));
  // Every layout, each with the same shapes, plus the requested squares in the three it lacks.
  ASSERT_EQ(per_layout.size(), 4u);
  EXPECT_EQ(per_layout["nt"], per_layout["nn"] + 5);
  EXPECT_EQ(per_layout["tn"], per_layout["nt"]);
  EXPECT_EQ(per_layout["tt"], per_layout["nt"]);
  for (const auto& s : shapes)
    if (s.shape_class == "layouts") {
      EXPECT_NE(s.problem.layout(), "nn");
      Problem nn = s.problem;
      nn.trans_a = nn.trans_b = false;
      EXPECT_EQ(std::count(requested.begin(), requested.end(), nn), 1) << s.problem.to_string();
    }
  const auto again = calibration_shapes(requested);
  ASSERT_EQ(again.size(), shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(again[i].problem, shapes[i].problem);
  EXPECT_TRUE(calibration_shapes({}).empty());
}

TEST(Calibration, AnUnbatchedTuneCalibratesBatchesOfEveryLayoutWithBOnceBroadcast) {
  const std::vector<Problem> requested = {{256, 256, 256}, {4096, 4096, 4096}};
  std::map<std::string, std::vector<Problem>> batched;
  for (const auto& s : calibration_shapes(requested))
    if (s.shape_class == "batched") batched[std::string(s.problem.layout())].push_back(s.problem);
  ASSERT_EQ(batched.size(), 4u);
  for (const auto& [layout, problems] : batched) {
    ASSERT_EQ(problems.size(), 7u) << layout;
    EXPECT_EQ(problems[0].batch, 4096) << "the smallest matrices in the largest batch";
    EXPECT_EQ(problems[0].m, 38) << "32, ragged";
    EXPECT_EQ(problems[1].m, 32) << "and aligned";
    EXPECT_EQ(problems[3].batch, 16);
    EXPECT_EQ(problems[3].m, 561) << "512 (an eighth of 4096), ragged";
    EXPECT_EQ(problems[4].m, 512) << "and aligned";
    EXPECT_EQ(problems[6].stride_b, 0) << "B broadcast";
    EXPECT_EQ(std::count_if(problems.begin(), problems.end(), [](const Problem& p) { return p.m % 16 == 0; }), 4);
  }
  // The largest batched matrix follows the requested scale: an eighth of it, at least 32.
  std::vector<Problem> small;
  for (const auto& s : calibration_shapes({{64, 64, 64}}))
    if (s.shape_class == "batched" && s.problem.layout() == "nn") small.push_back(s.problem);
  ASSERT_EQ(small.size(), 7u);
  EXPECT_EQ(small[3].m, 38) << "32, ragged";
}

TEST(Calibration, BatchedProblemsGetRaggedBatchesOfTheirSizesAndCounts) {
  Problem broadcast = Problem::make(512, 512, 512, false, true, 16);
  broadcast.stride_b = 0;
  const std::vector<Problem> requested = {Problem::make(32, 32, 64, false, true, 16384),
                                          Problem::make(128, 128, 128, false, true, 1024), broadcast};
  std::vector<Problem> batched;
  const auto shapes = calibration_shapes(requested);
  ASSERT_FALSE(shapes.empty());
  EXPECT_EQ(shapes.front().problem.layout(), "nt") << "the requested problems' layout first";
  for (const auto& s : shapes) {
    if (s.shape_class != "batched" || s.problem.layout() != "nt") continue;
    EXPECT_GE(s.problem.batch, 2);
    batched.push_back(s.problem);
  }
  // 32x32x64 has the scale of a 40^3 cube: the smallest matrices are ragged ~47^3 (and aligned 48^3)
  // in the largest batch; the largest (512^3) ragged ~561^3 (and aligned 512^3) in the smallest
  // batch; and B broadcast once.
  ASSERT_EQ(batched.size(), 7u);
  EXPECT_EQ(batched[0].batch, 16384);
  EXPECT_LT(batched[0].m, 64);
  EXPECT_NE(batched[0].m % 16, 0) << "ragged";
  EXPECT_EQ(batched[1].m % 16, 0) << "aligned";
  EXPECT_EQ(batched[3].batch, 16);
  EXPECT_GT(batched[3].m, 512);
  EXPECT_EQ(batched[6].stride_b, 0);
  EXPECT_EQ(std::count_if(batched.begin(), batched.end(), [](const Problem& p) { return p.stride_b == 0; }), 1);
  EXPECT_EQ(stride_problem(batched[6]), "");
}

// Each type is calibrated on its own: its shapes follow its own problems' scales, in its own type.
TEST(Calibration, EachTypeIsCalibratedOnItsOwnShapes) {
  const Problem f32 = Problem::make(512, 512, 512);
  const Problem f64 = Problem::make(2048, 2048, 2048, false, false, 1, DType::f64);
  const Problem i32 = Problem::make(2048, 2048, 2048, false, false, 1, DType::i32);
  const auto mixed = calibration_shapes({f32, f64, i32});
  const auto alone32 = calibration_shapes({f32});
  const auto alone64 = calibration_shapes({f64});
  ASSERT_EQ(mixed.size(), alone32.size() + alone64.size() + calibration_shapes({i32}).size());
  for (size_t i = 0; i < alone32.size(); ++i) EXPECT_EQ(mixed[i].problem, alone32[i].problem);
  for (size_t i = 0; i < alone64.size(); ++i) EXPECT_EQ(mixed[alone32.size() + i].problem, alone64[i].problem);
  for (const auto& s : alone64) EXPECT_EQ(s.problem.dtype, DType::f64);
  EXPECT_NE(alone64.front().problem.m, alone32.front().problem.m) << "the f64 problem's scale, not the f32 one's";
}

}  // namespace
}  // namespace cmt
