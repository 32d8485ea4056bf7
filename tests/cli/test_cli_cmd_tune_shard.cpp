// tune --shard I/N with the scripted measuring process (tests/worker/scripted_worker.cpp): the
// shards of one count measure disjoint sets of candidates, each with cuBLAS's baseline of every
// problem it measures, and together exactly the trials of the same run unsharded; a shard past the
// space has nothing to measure and says so; a bad --shard is one line.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "cli_support.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

class TuneShard : public test::ScriptedTune {
 protected:
  TuneShard() : ScriptedTune("shard", "32, 64, 128") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_HASHED", "1");   // each candidate and problem its own time
  }
  test::SplitResult tune(const std::string& db, const std::string& extra) const {
    return test::run_split(m_dir, "--quiet --db " + db + " tune --sizes 64,96x80x72:nt --config " + preset() +
                                      " --no-calibrate --seed 3 --jobs 2 --json " + extra);
  }
  /// (candidate, problem) -> median of every trial in a database, and the problems with a baseline.
  std::pair<std::map<std::pair<std::string, std::string>, double>, std::set<std::string>> trials(const std::string& db) const {
    Store store(m_dir / db, OpenMode::read);
    std::map<std::pair<std::string, std::string>, double> out;
    std::set<std::string> baselines;
    for (const auto& d : store.devices()) {
      for (const auto& t : store.trials(d.id)) {
        EXPECT_TRUE(t.median_ms.has_value()) << t.params;
        out[{t.template_name + "[" + t.params + "]", t.problem.to_string()}] = t.median_ms.value_or(0);
        if (store.find_baseline(d.id, t.problem)) baselines.insert(t.problem.to_string());
      }
    }
    return {out, baselines};
  }
};

TEST_F(TuneShard, SharesAreDisjointAndTogetherTheUnshardedRun) {
  const auto whole = tune("whole.db", "");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["shard"], "0/1");
  const auto all = trials("whole.db").first;
  ASSERT_EQ(all.size(), 6u);   // 3 candidates in each layout, each on its layout's problem

  std::map<std::pair<std::string, std::string>, double> joined;
  for (int i = 0; i < 2; ++i) {
    const std::string db = "shard" + std::to_string(i) + ".db";
    const auto r = tune(db, "--shard " + std::to_string(i) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["shard"], std::to_string(i) + "/2");
    const auto [share, baselines] = trials(db);
    EXPECT_FALSE(share.empty());
    for (const auto& [key, median] : share) {
      EXPECT_TRUE(joined.emplace(key, median).second) << "in both shards: " << key.first;
      EXPECT_TRUE(baselines.count(key.second)) << "a shard times cuBLAS on each problem it measures: " << key.second;
    }
  }
  EXPECT_EQ(joined, all);   // the same trials, with the scripted worker's same times
}

TEST_F(TuneShard, AShardPastTheSpaceMeasuresNothingAndSaysSo) {
  const auto r = test::run_split(m_dir, "--db s.db tune --sizes 64 --config " + preset() +
                                            " --no-calibrate --seed 3 --jobs 2 --shard 5/6");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("shard 5/6: the space has 3 candidates, none of them in this shard"), std::string::npos) << r.err;
  EXPECT_TRUE(trials("s.db").first.empty());
}

TEST_F(TuneShard, ABadShardIsOneLineBeforeAnythingRuns) {
  for (const char* bad : {"2/2", "1", "a/b", "0/0"}) {
    const auto r = test::run_split(m_dir, std::string("--db bad.db tune --sizes 64 --config ") + preset() + " --shard " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.err.rfind("cm-tune: error: --shard '", 0), 0u) << r.err;
    EXPECT_FALSE(std::filesystem::exists(m_dir / "bad.db")) << bad;
  }
}

}  // namespace
}  // namespace cmt
