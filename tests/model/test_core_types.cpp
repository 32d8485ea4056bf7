// Problem keys with layouts, batches and strides: the canonical spelling, its parser, the memory
// layouts the measurement uses, and the store's round trip and migration of older databases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/types.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "migration_check.hpp"
#include "test_support.hpp"
#include "measure/protocol.hpp"
#include "record/trial.hpp"

namespace fs = std::filesystem;
using namespace cmt;

namespace {

constexpr int64_t k_dim = 1 << 20;

Problem parse(const std::string& text) { return parse_problem(text, k_dim, k_dim); }

TEST(ProblemKey, NnBatchOneKeepsTheSpellingOfEarlierVersions) {
  EXPECT_EQ(Problem::make(1024, 1024, 1024).to_string(), "1024x1024x1024");
  EXPECT_EQ((Problem{7, 8, 9}).to_string(), "7x8x9");
  // Trial keys hash this spelling, so trials of earlier databases still resume.
  EXPECT_EQ(trial_key("GPU-x", "bin", Problem{7, 8, 9}), trial_key("GPU-x", "bin", Problem::make(7, 8, 9)));
}

TEST(ProblemKey, LayoutBatchAndStridesAreSpelledOnlyWhenTheyDiffer) {
  EXPECT_EQ(Problem::make(64, 32, 16, true, false).to_string(), "64x32x16:tn");
  EXPECT_EQ(Problem::make(64, 32, 16, false, true, 8).to_string(), "64x32x16:nt*8");
  Problem p = Problem::make(64, 32, 16, true, true, 8);
  EXPECT_EQ(p.stride_a, 64 * 16);
  EXPECT_EQ(p.stride_b, 16 * 32);
  EXPECT_EQ(p.stride_c, 64 * 32);
  p.stride_b = 0;
  EXPECT_EQ(p.to_string(), "64x32x16:tt*8:sb=0");
  p.stride_c = 5000;
  EXPECT_EQ(p.to_string(), "64x32x16:tt*8:sb=0:sc=5000");
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 64 * 32 * 16 * 8);
}

TEST(ProblemKey, ParsingInvertsTheSpelling) {
  for (const std::string text : {"1x1x1", "1024x1024x1024", "64x32x16:tn", "64x32x16:nt*8", "64x32x16:tt*8:sb=0",
                                 "64x32x16*8:sa=0:sc=5000", "100x100x100*2000"})
    EXPECT_EQ(parse(text).to_string(), text);
  EXPECT_EQ(parse("300").to_string(), "300x300x300");
  EXPECT_EQ(parse("5x6x7:TN").to_string(), "5x6x7:tn") << "layouts in either case";
  EXPECT_EQ(parse("5x6x7:nn"), Problem::make(5, 6, 7)) << "nn is the default";
  // Problems differ by every field.
  EXPECT_NE(parse("64x64x64:tn"), parse("64x64x64:nt"));
  EXPECT_NE(parse("64x64x64*2"), parse("64x64x64"));
  EXPECT_NE(parse("64x64x64*2:sb=0"), parse("64x64x64*2"));
  EXPECT_LT(parse("64x64x64"), parse("64x64x64:nt"));
}

TEST(ProblemKey, TheElementTypeIsSpelledUnlessF32AndParsesInEitherOrder) {
  EXPECT_EQ(Problem::make(64, 32, 16, false, false, 1, DType::f64).to_string(), "64x32x16:f64");
  EXPECT_EQ(Problem::make(64, 32, 16, true, false, 8, DType::i32).to_string(), "64x32x16:tn:i32*8");
  EXPECT_EQ(Problem::make(64, 32, 16, false, false, 1, DType::f32).to_string(), "64x32x16") << "f32 keeps old keys";
  for (const std::string text : {"64x32x16:f64", "64x32x16:tn:i32*8", "7x8x9:nt:f64*3:sb=0", "300x300x300:i32"})
    EXPECT_EQ(parse(text).to_string(), text);
  EXPECT_EQ(parse("64x32x16:i32:tn*8").to_string(), "64x32x16:tn:i32*8") << "the type before the layout";
  EXPECT_EQ(parse("5x6x7:F64").dtype, DType::f64) << "types in either case";
  EXPECT_EQ(parse("5x6x7:f32"), parse("5x6x7"));
  EXPECT_NE(parse("64x64x64:f64"), parse("64x64x64"));
  EXPECT_NE(parse("64x64x64:f64"), parse("64x64x64:i32"));
  EXPECT_LT(parse("64x64x64"), parse("64x64x64:f64"));
  // Trial keys hash the spelling: each type is its own trial.
  EXPECT_NE(trial_key("GPU-x", "bin", parse("7x8x9:f64")), trial_key("GPU-x", "bin", parse("7x8x9")));
  EXPECT_EQ(dtype_bytes(DType::f64), 8);
  EXPECT_EQ(dtype_bytes(DType::i32), 4);
  EXPECT_FALSE(parse_dtype("f16"));
  const auto why = [](const std::string& text) { return test::usage_error([&] { parse_problem(text, k_dim, 100, "in --sizes"); }); };
  EXPECT_EQ(why("8x8x8:f64:i32"), "bad size '8x8x8:f64:i32' in --sizes: the element type is given twice");
  EXPECT_EQ(why("8x8x8:tn:nt"), "bad size '8x8x8:tn:nt' in --sizes: the layout is given twice");
  EXPECT_EQ(why("8x8x8:f16"),
            "bad size '8x8x8:f16' in --sizes: unknown item 'f16' (a layout nn, nt, tn or tt, or a type f32, f64, i32 or tf32x3)");
}

TEST(ProblemKey, BadSpellingsNameTheTokenAndWhy) {
  const auto why = [](const std::string& text) { return test::usage_error([&] { parse_problem(text, k_dim, 100, "in --sizes"); }); };
  EXPECT_EQ(why("64x64x64:xy"), "bad size '64x64x64:xy' in --sizes: unknown item 'xy' (a layout nn, nt, tn or tt, or a type f32, f64, i32 or tf32x3)");
  EXPECT_EQ(why("64x64x64:"), "bad size '64x64x64:' in --sizes: unknown item '' (a layout nn, nt, tn or tt, or a type f32, f64, i32 or tf32x3)");
  EXPECT_EQ(why("64x64x64*0"), "bad size '64x64x64*0' in --sizes: batch 0 is outside [1, 100]");
  EXPECT_EQ(why("64x64x64*101"), "bad size '64x64x64*101' in --sizes: batch 101 is outside [1, 100]");
  EXPECT_EQ(why("64x64x64*"), "bad size '64x64x64*' in --sizes: batch '' is not a whole number");
  EXPECT_EQ(why("64x64x64:sb=0"), "bad size '64x64x64:sb=0' in --sizes: unknown item 'sb=0' (a layout nn, nt, tn or tt, or a type f32, f64, i32 or tf32x3)");
  EXPECT_EQ(why("64x64x64*1:sb=0"), "bad size '64x64x64*1:sb=0' in --sizes: strides need a batch above 1 (*BATCH)");
  EXPECT_EQ(why("64x64x64*4:sd=0"), "bad size '64x64x64*4:sd=0' in --sizes: unknown item 'sd=0' after the batch (sa=, sb= or sc=)");
  EXPECT_EQ(why("64x64x64*4:sb=1:sb=2"), "bad size '64x64x64*4:sb=1:sb=2' in --sizes: sb is given twice");
  EXPECT_EQ(why("64x64x64*4:sc=100"),
            "bad size '64x64x64*4:sc=100' in --sizes: the stride of C (100) must be at least M*N = 4096, or the "
            "matrices of C overlap");
  EXPECT_EQ(why("64x64x64*4:sa=-1"), "bad size '64x64x64*4:sa=-1' in --sizes: sa -1 is outside [0, 1125899906842624]");
  EXPECT_EQ(why("64x64"), "bad size '64x64' in --sizes: a rectangular size is MxNxK");
}

TEST(ProblemLayouts, TimingIsTightAndValidationPadsAndGuardsEveryMatrix) {
  // TN: A stored K x M, B stored K x N.
  const Problem tn = Problem::make(100, 60, 30, true, false, 5);
  const Layout t = timing_layout(tn);
  EXPECT_EQ(t.lda, 100);
  EXPECT_EQ(t.ldb, 60);
  EXPECT_EQ(t.ldc, 60);
  EXPECT_EQ(t.stride_a, 30 * 100);
  EXPECT_EQ(t.stride_b, 30 * 60);
  EXPECT_EQ(t.stride_c, 100 * 60);
  // NT: A M x K, B stored N x K.
  const Layout nt = timing_layout(Problem::make(100, 60, 30, false, true));
  EXPECT_EQ(nt.lda, 30);
  EXPECT_EQ(nt.ldb, 30);
  EXPECT_EQ(nt.stride_a, 0) << "unbatched: no strides";

  const Layout v = validation_layout(tn);
  EXPECT_EQ(v.lda, 108);
  EXPECT_EQ(v.ldb, 68);
  EXPECT_EQ(v.ldc, 68);
  for (const int64_t s : {v.stride_a, v.stride_b, v.stride_c}) EXPECT_EQ(s % 64, 0) << "each matrix 256-byte aligned";
  EXPECT_GE(v.stride_a, 30 * 108);
  EXPECT_GE(v.stride_c, 100 * 68 + c_guard_after(68)) << "a guard region between the matrices of C";

  Problem broadcast = tn;
  broadcast.stride_b = 0;
  EXPECT_EQ(timing_layout(broadcast).stride_b, 0);
  EXPECT_EQ(validation_layout(broadcast).stride_b, 0) << "a broadcast stays a broadcast";
  EXPECT_EQ(batch_span(5, 0, 30, 60), 30 * 60);
  EXPECT_EQ(batch_span(5, 2000, 30, 60), 4 * 2000 + 30 * 60);
}

TEST(ProblemLayouts, StridesThatBreakAlignmentAreUnmetRequirements) {
  const Requirements vec4{16, 4};
  Layout l{12, 8, 8, 92, 0, 80};
  EXPECT_FALSE(unmet_requirements(vec4, l)) << "every stride a multiple of 4 floats";
  l.stride_a = 90;
  const auto why = unmet_requirements(vec4, l);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "needs 16-byte aligned matrices (the stride of A is 90 floats)");
  EXPECT_FALSE(unmet_requirements(Requirements{}, l)) << "no requirements: any stride";
}

// ---- the store ----

DeviceRecord device(const std::string& uuid) {
  DeviceRecord d;
  d.uuid = uuid;
  d.name = "GPU";
  d.cc_major = 9;
  d.nvrtc_version = "13.0";
  return d;
}

TrialRecord trial(const std::string& key, int64_t device_id, int64_t run, const Problem& p) {
  TrialRecord t;
  t.trial_key = key;
  t.run_id = run;
  t.device_id = device_id;
  t.template_name = "tmpl";
  t.params = "V=1";
  t.name_expression = "k<1>";
  t.binary_key = "bin";
  t.problem = p;
  t.outcome = Outcome::ok;
  t.median_ms = 1.0;
  t.shape = {128, 64, 64, 0, 1};
  return t;
}

TEST(ProblemStore, LayoutsBatchesAndStridesAreSeparateProblems) {
  test::TempDir dir;
  Store store(dir / "t.db");
  const int64_t dev = store.upsert_device(device("GPU-keys"));
  const int64_t run = store.begin_run(RunRecord{});
  Problem bcast = Problem::make(64, 64, 64, true, false, 16);
  bcast.stride_b = 0;
  const std::vector<Problem> problems = {Problem::make(64, 64, 64), Problem::make(64, 64, 64, true, false),
                                         Problem::make(64, 64, 64, true, false, 16), bcast,
                                         Problem::make(64, 64, 64, false, false, 1, DType::f64),
                                         Problem::make(64, 64, 64, true, false, 16, DType::i32)};
  for (size_t i = 0; i < problems.size(); ++i) {
    store.insert_trial(trial(fmt::format("t{}", i), dev, run, problems[i]));
    BaselineRecord b;
    b.device_id = dev;
    b.problem = problems[i];
    b.median_ms = b.min_ms = 1.0 + static_cast<double>(i);
    b.run_id = run;
    store.put_baseline(b);
  }
  const std::vector<Problem> tuned = store.tuned_problems(dev);
  ASSERT_EQ(tuned.size(), problems.size());
  for (const Problem& p : problems) {
    EXPECT_NE(std::find(tuned.begin(), tuned.end(), p), tuned.end()) << p.to_string();
    const auto trials = store.trials(dev, p);
    ASSERT_EQ(trials.size(), 1u) << p.to_string();
    EXPECT_EQ(trials[0].problem, p);
    const auto baseline = store.find_baseline(dev, p);
    ASSERT_TRUE(baseline) << p.to_string();
    EXPECT_EQ(baseline->problem, p);
  }
  EXPECT_DOUBLE_EQ(store.find_baseline(dev, bcast)->median_ms, 4.0);
}

TEST(ProblemStore, ADatabaseFromBeforeLayoutsKeepsItsRowsAsNnBatchOne) {
  test::TempDir dir;
  const fs::path file = dir / "v2.db";
  // A tuned database, written back in the schema of the version before layouts (2).
  test::tuned_database(file, "GPU-old");
  test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(test::expect_migration_keeps_trials(file, 2, "trials", "layout", m));
  for (const TrialRecord& t : m.after) {
    EXPECT_EQ(t.problem.layout(), "nn");
    EXPECT_EQ(t.problem.batch, 1);
  }
  Store store(file);
  const int64_t dev = store.devices().at(0).id;
  for (const auto& w : store.winners(dev)) {
    EXPECT_EQ(w.problem.layout(), "nn");
    EXPECT_EQ(w.problem.batch, 1);
    const auto binary = store.find_binary(w.binary_key);
    ASSERT_TRUE(binary);
    EXPECT_FALSE(binary->batched) << "kernels built before batching took 11 arguments";
  }
}

TEST(ProblemStore, ADatabaseFromBeforeElementTypesKeepsItsRowsAsF32) {
  test::TempDir dir;
  const fs::path file = dir / "v3.db";
  test::tuned_database(file, "GPU-v3");
  // Add rows with a layout and a batch, as schema 3 could hold them.
  {
    Store store(file);
    const int64_t dev = store.devices().at(0).id;
    const int64_t run = store.begin_run(RunRecord{});
    Problem bcast = Problem::make(64, 64, 64, true, false, 16);
    bcast.stride_b = 0;
    store.insert_trial(trial("v3-batched", dev, run, bcast));
    BaselineRecord b;
    b.device_id = dev;
    b.problem = bcast;
    b.median_ms = b.min_ms = 2.0;
    b.run_id = run;
    store.put_baseline(b);
  }
  test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(test::expect_migration_keeps_trials(file, 3, "trials", "dtype", m));
  for (const TrialRecord& t : m.after) EXPECT_EQ(t.problem.dtype, DType::f32);
  Store store(file);
  const int64_t dev = store.devices().at(0).id;
  Problem bcast = Problem::make(64, 64, 64, true, false, 16);
  bcast.stride_b = 0;
  ASSERT_TRUE(store.find_baseline(dev, bcast));
  EXPECT_DOUBLE_EQ(store.find_baseline(dev, bcast)->median_ms, 2.0);
  EXPECT_FALSE(store.winners(dev).empty());
  for (const auto& w : store.winners(dev)) EXPECT_EQ(w.problem.dtype, DType::f32);
  // The same problem in FP64 is a separate baseline now.
  BaselineRecord f64;
  f64.device_id = dev;
  f64.problem = bcast;
  f64.problem.dtype = DType::f64;
  f64.median_ms = f64.min_ms = 5.0;
  f64.run_id = store.begin_run(RunRecord{});
  store.put_baseline(f64);
  EXPECT_DOUBLE_EQ(store.find_baseline(dev, bcast)->median_ms, 2.0);
  EXPECT_DOUBLE_EQ(store.find_baseline(dev, f64.problem)->median_ms, 5.0);
}

}  // namespace
