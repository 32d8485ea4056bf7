// The record stage (record/): the one ranking of trials, trial records, and the per-problem state
// kept in step with the store.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "record/problem_state.hpp"
#include "record/ranking.hpp"
#include "record/trial.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

TrialRecord trial(const std::string& key, double median, std::optional<double> retimed = std::nullopt,
                  Outcome outcome = Outcome::ok, const std::string& tmpl = "t", Requirements req = {}) {
  TrialRecord t;
  t.trial_key = key;
  t.template_name = tmpl;
  t.params = key;
  t.problem = {256, 256, 256};
  t.outcome = outcome;
  t.median_ms = median;
  t.retime_median_ms = retimed;
  if (retimed) t.ratio_to_cublas = 1.0 / *retimed;
  t.requirements = req;
  return t;
}

TEST(Ranking, ReTimedTrialsRankFirstThenByTime) {
  const auto a = trial("a", 0.5);                  // fastest back to back, never re-timed
  const auto b = trial("b", 0.9, 1.2);             // re-timed
  const auto c = trial("c", 0.8, 1.0);             // re-timed, faster
  const auto wrong = trial("w", 0.1, std::nullopt, Outcome::wrong);
  EXPECT_TRUE(ranks_before(c, b));
  EXPECT_TRUE(ranks_before(b, a));
  EXPECT_FALSE(ranks_before(a, b));
  EXPECT_EQ(rank_time(a), 0.5);
  EXPECT_EQ(rank_time(b), 1.2);
  std::vector<std::string> order;
  for (const auto& t : ranked_passing({a, wrong, b, c})) order.push_back(t.trial_key);
  EXPECT_EQ(order, (std::vector<std::string>{"c", "b", "a"}));
}

// Calibration ranks the trials a pass holds in memory, export and query the store's: the order is
// total, so both give one ranking whatever order the trials come in. Equal times go to the trial
// recorded first.
TEST(Ranking, EqualTimesRankByTheFirstRecordedInAnyOrder) {
  std::vector<TrialRecord> trials = {trial("tie-late", 1.0, 1.0), trial("slow", 2.0, 2.0), trial("tie-early", 1.0, 1.0),
                                     trial("tie-back-to-back", 1.0), trial("fast", 0.5, 0.5)};
  const std::map<std::string, int64_t> ids = {{"tie-early", 3}, {"tie-late", 7}, {"slow", 1}, {"fast", 9},
                                              {"tie-back-to-back", 2}};
  for (auto& t : trials) t.id = ids.at(t.trial_key);
  const std::vector<std::string> expected = {"fast", "tie-early", "tie-late", "slow", "tie-back-to-back"};
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(trials.begin(), trials.end(), rng);
    std::vector<std::string> order;
    for (const auto& t : ranked_passing(trials)) order.push_back(t.trial_key);
    EXPECT_EQ(order, expected);
    std::map<std::string, std::string> winners;
    for (const auto& w : choose_winners(trials, std::nullopt)) winners[w.scope] = w.params;
    EXPECT_EQ(winners["overall"], "fast");
    trials.erase(std::find_if(trials.begin(), trials.end(), [](const TrialRecord& t) { return t.trial_key == "fast"; }));
    for (const auto& w : choose_winners(trials, std::nullopt))
      if (w.scope == "overall") EXPECT_EQ(w.params, "tie-early");
    trials.push_back(trial("fast", 0.5, 0.5));
    trials.back().id = 9;
  }
}

TEST(Ranking, WinnersPerScope) {
  const Requirements vec4{16, 4};
  std::vector<TrialRecord> trials = {trial("fast-vec4", 1.0, 1.0, Outcome::ok, "multistage", vec4),
                                     trial("slow-portable", 1.5, 1.6, Outcome::ok, "warptile"),
                                     trial("mid-portable", 1.2, 1.4, Outcome::ok, "multistage"),
                                     trial("broken", 0.1, std::nullopt, Outcome::launch_error, "naive")};
  for (size_t i = 0; i < trials.size(); ++i) trials[i].id = static_cast<int64_t>(i + 1);
  BaselineRecord baseline;
  baseline.median_ms = 2.0;
  const auto winners = choose_winners(trials, baseline);
  std::map<std::string, std::string> by_scope;
  for (const auto& w : winners) by_scope[w.scope] = w.params;
  EXPECT_EQ(by_scope, (std::map<std::string, std::string>{{"overall", "fast-vec4"},
                                                          {"portable", "mid-portable"},
                                                          {"template:multistage", "fast-vec4"},
                                                          {"template:warptile", "slow-portable"}}));
  for (const auto& w : winners) {
    if (w.scope != "overall") continue;
    EXPECT_EQ(w.median_ms, 1.0);
    EXPECT_EQ(w.ratio_to_cublas, 1.0);  // the re-timing's own ratio, not the baseline's 2.0
    EXPECT_EQ(w.trial_id, 1);
  }
  trials[0].retime_median_ms.reset();
  trials[0].ratio_to_cublas.reset();
  for (const auto& w : choose_winners(trials, baseline))
    if (w.scope == "template:multistage") EXPECT_EQ(w.params, "mid-portable") << "re-timed ranks first";
  for (const auto& w : choose_winners({trials[0]}, baseline)) EXPECT_EQ(w.ratio_to_cublas, 2.0);  // baseline / time
}

TEST(Trial, KeyDependsOnDeviceBinaryAndProblem) {
  const std::string k = trial_key("GPU-a", "bin1", {64, 64, 64});
  EXPECT_EQ(k, trial_key("GPU-a", "bin1", {64, 64, 64}));
  EXPECT_NE(k, trial_key("GPU-b", "bin1", {64, 64, 64}));
  EXPECT_NE(k, trial_key("GPU-a", "bin2", {64, 64, 64}));
  EXPECT_NE(k, trial_key("GPU-a", "bin1", {64, 64, 65}));
}

TEST(Trial, CompileFailureKeepsTheFirstLogLineAsTheReason) {
  BinaryRecord b;
  b.log = "x.cuh(3): error: planted\nsecond line\n";
  b.registers = 40;
  const Measurement m = compile_failure(b);
  EXPECT_EQ(m.outcome, Outcome::compile_error);
  EXPECT_EQ(m.reason, "x.cuh(3): error: planted");
  EXPECT_EQ(m.log, b.log);
  EXPECT_EQ(m.registers, 40);
}

class ProblemStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceRecord d;
    d.uuid = "GPU-state";
    d.name = "Test GPU";
    m_device = m_store.upsert_device(d);
    RunRecord run;
    m_run = m_store.begin_run(run);
  }
  TrialRecord stored(const std::string& key, double median) {
    TrialRecord t = trial(key, median);
    t.run_id = m_run;
    t.device_id = m_device;
    t.problem = m_problem;
    t.binary_key = "bin-" + key;
    return t;
  }
  test::TempDir m_dir;
  Store m_store{m_dir / "state.db"};
  int64_t m_device = 0, m_run = 0;
  Problem m_problem{256, 256, 256};
};

TEST_F(ProblemStateTest, ReadsOnceRecordsAndChoosesWinners) {
  {
    ProblemState state(m_store, m_device, m_problem);
    EXPECT_FALSE(state.changed());
    EXPECT_FALSE(state.cublas_ms().has_value());
    state.record(m_store, stored("a", 2.0));
    state.record_baseline(m_store, m_run, SampleStats{1.5, 1.4, 1.5, 0.01, 10});
    EXPECT_EQ(state.cublas_ms(), std::optional<double>(1.5));
    EXPECT_EQ(state.best_ms(), 1.5);
    state.record(m_store, stored("b", 1.0));
    EXPECT_EQ(state.best_ms(), 1.0);
    EXPECT_TRUE(state.has_trial(trial_key("x", "y", m_problem)) == false);
    EXPECT_TRUE(state.has_trial("a"));
    EXPECT_TRUE(state.changed());
    const int64_t b_id = state.trials().back().id;
    state.record_retime(m_store, b_id, 1.1, 1.5 / 1.1);
    state.store_winners(m_store);
    const ProblemSummary s = state.summary();
    ASSERT_TRUE(s.winner.has_value());
    EXPECT_EQ(s.winner->params, "b");
    EXPECT_EQ(s.winner->median_ms, 1.1);
    EXPECT_EQ(s.ok, 2);
    ASSERT_TRUE(s.baseline.has_value());
    EXPECT_EQ(s.baseline->lda, 256);
  }
  // A new state reads what the first one stored.
  ProblemState again(m_store, m_device, m_problem);
  EXPECT_TRUE(again.has_winners());
  EXPECT_FALSE(again.changed());
  ASSERT_EQ(again.trials().size(), 2u);
  EXPECT_EQ(again.trials().back().retime_median_ms, std::optional<double>(1.1));
  EXPECT_EQ(again.summary().winner->params, "b");
  EXPECT_EQ(m_store.winners(m_device, m_problem).size(), 3u);  // overall, portable, template:t
}

// An i32 problem has no cuBLAS baseline: the best trial sets the abandon bar (from the store too),
// re-timings carry no ratio (NULL), and winners rank by time with a ratio of 0 ("none").
TEST_F(ProblemStateTest, WithoutABaselineTheBestTrialSetsTheBarAndRatiosAreNone) {
  m_problem = Problem::make(256, 256, 256, false, false, 1, DType::i32);
  {
    ProblemState state(m_store, m_device, m_problem);
    EXPECT_EQ(state.best_ms(), 0.0) << "nothing known: no abandoning";
    state.record(m_store, stored("a", 2.0));
    EXPECT_EQ(state.best_ms(), 2.0);
    state.record(m_store, stored("b", 1.0));
    EXPECT_EQ(state.best_ms(), 1.0);
    EXPECT_FALSE(state.cublas_ms().has_value());
    state.record_retime(m_store, state.trials().back().id, 1.2, std::nullopt);
    state.store_winners(m_store);
    const ProblemSummary s = state.summary();
    ASSERT_TRUE(s.winner.has_value());
    EXPECT_EQ(s.winner->params, "b");
    EXPECT_EQ(s.winner->median_ms, 1.2);
    EXPECT_EQ(s.winner->ratio_to_cublas, 0.0);
    EXPECT_FALSE(s.baseline.has_value());
  }
  ProblemState again(m_store, m_device, m_problem);
  EXPECT_EQ(again.best_ms(), 1.0) << "from the stored trials";
  const auto b = std::find_if(again.trials().begin(), again.trials().end(), [](const TrialRecord& t) { return t.params == "b"; });
  ASSERT_NE(b, again.trials().end());
  EXPECT_EQ(b->retime_median_ms, std::optional<double>(1.2));
  EXPECT_FALSE(b->ratio_to_cublas.has_value());
  for (const auto& w : m_store.winners(m_device, m_problem)) EXPECT_EQ(w.ratio_to_cublas, 0.0) << w.scope;
  // The f32 problem of the same shape is another problem: nothing of this one is its.
  EXPECT_TRUE(m_store.winners(m_device, Problem{256, 256, 256}).empty());
}

// Nothing is abandoned before a trial of the problem has passed, even with cuBLAS's time known: a
// problem where cuBLAS beats every candidate still gets a winner. Then the bar is the factor times
// the best of cuBLAS and the trials.
TEST_F(ProblemStateTest, TheAbandonBarWaitsForAPassingTrial) {
  m_problem = Problem::make(256, 256, 256, false, false, 1, DType::f64);
  ProblemState state(m_store, m_device, m_problem);
  state.record_baseline(m_store, m_run, SampleStats{0.5, 0.4, 0.5, 0.01, 10});
  EXPECT_EQ(state.best_ms(), 0.5);
  EXPECT_EQ(state.abandon_bar_ms(3.0), 0.0);
  TrialRecord failed = stored("x", 0.1);
  failed.outcome = Outcome::wrong;
  state.record(m_store, failed);
  EXPECT_EQ(state.abandon_bar_ms(3.0), 0.0) << "a wrong trial is no passing trial";
  state.record(m_store, stored("a", 2.0));
  EXPECT_DOUBLE_EQ(state.abandon_bar_ms(3.0), 1.5) << "3x cuBLAS's 0.5 ms";
  state.store_winners(m_store);
  EXPECT_EQ(state.summary().winner->params, "a");
}

TEST_F(ProblemStateTest, ReMeasuringATrialReplacesItAndDropsItsWinners) {
  ProblemState state(m_store, m_device, m_problem);
  state.record(m_store, stored("a", 1.0));
  state.store_winners(m_store);
  ASSERT_TRUE(state.has_winners());
  TrialRecord again = stored("a", 3.0);
  again.outcome = Outcome::wrong;
  state.record(m_store, again);
  ASSERT_EQ(state.trials().size(), 1u);
  EXPECT_EQ(state.trials().front().outcome, Outcome::wrong);
  EXPECT_FALSE(state.has_winners()) << "the store dropped them with the old row";
  EXPECT_TRUE(m_store.winners(m_device, m_problem).empty());
  EXPECT_EQ(m_store.trials(m_device, m_problem).size(), 1u);
  ASSERT_TRUE(m_store.find_trial(state.trials().front().id).has_value());
  EXPECT_EQ(m_store.find_trial(state.trials().front().id)->trial_key, "a");
}

}  // namespace
}  // namespace cmt
