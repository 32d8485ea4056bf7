// `cm-tune db merge OUT IN...` through the real binary, on databases of real tunes with the scripted
// measuring process (tests/worker/scripted_worker.cpp, times hashed from the kernel and the problem,
// so the same trial measures the same in every database): the header exported from a merge is the
// unsharded run's byte for byte, what it prints, and its one-line refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "cli_support.hpp"
#include "core/hash.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::db_merge_tests {
namespace {

class DbMerge : public test::ScriptedTune {
 protected:
  DbMerge() : ScriptedTune("merge", "32, 64") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_HASHED", "1");
  }

  /// Tunes `sizes` into `db` (in the test's folder), without calibration: every trial is the
  /// scripted worker's hashed time, the same in every database.
  void tune(const std::string& db, const std::string& sizes, const std::string& extra = "") const {
    const auto r = run("--quiet --db " + db + " tune --sizes " + sizes + " --config " + preset() +
                       " --no-calibrate --seed 3 --jobs 2 " + extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  /// The header exported from `db` (in the test's folder).
  std::string header(const std::string& db) const {
    const auto r = run("--quiet --db " + db + " export --out " + db + ".cuh");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::read_file(m_dir / (db + ".cuh"));
  }

  test::SplitResult run(const std::string& args) const { return test::run_split(m_dir, args); }

  std::string bytes(const std::string& file) const { return hash_hex(test::read_file(m_dir / file)); }
};

// One run's work done by two (tune --shard, each its own candidates), its problems tuned apart, or
// its database split apart by problem, then merged: the header is the one run's, byte for byte.
TEST_F(DbMerge, TheHeaderOfAMergeIsTheOneRunsByteForByte) {
  ASSERT_NO_FATAL_FAILURE(tune("all.db", "64,128,96x80x72:tn"));
  ASSERT_NO_FATAL_FAILURE(tune("c0.db", "64,128,96x80x72:tn", "--shard 0/2"));
  ASSERT_NO_FATAL_FAILURE(tune("c1.db", "64,128,96x80x72:tn", "--shard 1/2"));
  ASSERT_NO_FATAL_FAILURE(tune("p1.db", "64"));
  ASSERT_NO_FATAL_FAILURE(tune("p2.db", "128,96x80x72:tn"));
  const std::string expected = header("all.db");
  ASSERT_FALSE(expected.empty());

  // One database into a new OUT.
  ASSERT_EQ(run("db merge one.db all.db").exit_code, 0);
  EXPECT_EQ(header("one.db"), expected);

  // The two shards of the run: each timed cuBLAS on every problem, and merge keeps one baseline of
  // each in baselines (the other beside it, unless both were stored in the same second: the same).
  const auto shards = run("db merge candidates.db c0.db c1.db --json");
  ASSERT_EQ(shards.exit_code, 0) << shards.err;
  const nlohmann::json baselines = nlohmann::json::parse(shards.out).at("baselines");
  EXPECT_EQ(baselines.at("added"), 3);
  EXPECT_TRUE(baselines.at("superseded") == 0 || baselines.at("superseded") == 3) << baselines;
  EXPECT_EQ(header("candidates.db"), expected);

  // Two databases of two runs, one per problem set, in either order.
  const std::string p1 = bytes("p1.db"), p2 = bytes("p2.db");
  const auto merged = run("db merge shards.db p2.db p1.db");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(header("shards.db"), expected);
  EXPECT_EQ(bytes("p1.db"), p1) << "an input is never written";
  EXPECT_EQ(bytes("p2.db"), p2);

  // all.db split by problem into two databases, merged.
  fs::copy_file(m_dir / "all.db", m_dir / "s1.db");
  fs::copy_file(m_dir / "all.db", m_dir / "s2.db");
  for (const auto& [file, keep] : {std::pair<std::string, std::string>{"s1.db", "m = 64"}, {"s2.db", "m <> 64"}})
    Database(m_dir / file)
        .exec(fmt::format("DELETE FROM winners WHERE NOT ({0}); DELETE FROM trials WHERE NOT ({0}); "
                          "DELETE FROM baselines WHERE NOT ({0});",
                          keep));
  ASSERT_EQ(run("db merge split.db s1.db s2.db").exit_code, 0);
  EXPECT_EQ(header("split.db"), expected);

  // Merging a shard again changes nothing.
  const std::string before = bytes("shards.db");
  const auto again = run("db merge shards.db p1.db");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(bytes("shards.db"), before);
  EXPECT_EQ(header("shards.db"), expected);
}

TEST_F(DbMerge, PrintsANoteForAnInputThatAddsNothingAndOneSummaryLine) {
  ASSERT_NO_FATAL_FAILURE(tune("a.db", "64,128"));
  const auto first = run("db merge out.db a.db");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.err, "");
  EXPECT_EQ(test::lines_of(first.out),
            (std::vector<std::string>{
                "merged 1 input into out.db (created): 1 device (1 new); runs 1 added; trials 4 added, 0 duplicate, "
                "0 replaced, 0 superseded; baselines 2 added, 0 replaced, 0 superseded; binaries 2 added, 0 cubins "
                "restored; sources 1 added; winners of 2 problems recomputed"}));

  const auto again = run("db merge out.db a.db");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto lines = test::lines_of(again.out);
  ASSERT_EQ(lines.size(), 2u) << again.out;
  EXPECT_EQ(lines[0].rfind("note: a.db adds nothing: merged into out.db before, as a.db at ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1],
            "merged 1 input into out.db (unchanged): 1 device (0 new); runs 0 added; trials 0 added, 4 duplicate, "
            "0 replaced, 0 superseded; baselines 0 added, 0 replaced, 0 superseded; binaries 0 added, 0 cubins "
            "restored; sources 0 added; winners of 0 problems recomputed");

  const auto json = run("db merge out.db a.db --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc.at("changed"), false);
  EXPECT_EQ(doc.at("inputs").at(0).at("nothing_new"), true);
  EXPECT_EQ(doc.at("inputs").at(0).at("merged_before").at("path"), "a.db");
  EXPECT_EQ(doc.at("inputs").at(0).at("absolute_path"), (m_dir / "a.db").string());
  EXPECT_EQ(doc.at("trials").at("duplicate"), 4);
  EXPECT_EQ(doc.at("content_hash"), Store(m_dir / "a.db", OpenMode::read).content_hash());
}

TEST(DbMergeRefusals, AreOneLineUsageErrorsAndCreateNothing) {
  test::TempDir dir;
  test::tuned_database(dir / "a.db", "GPU-merge-a");
  fs::copy_file(dir / "a.db", dir / "old.db");
  test::downgrade_schema(dir / "old.db", 8);
  fs::create_symlink("a.db", dir / "link.db");
  fs::copy_file(dir / "a.db", dir / "damaged.db");
  std::string damaged_source, damaged_template;
  {
    Database damaged(dir / "damaged.db");
    damaged.exec("UPDATE sources SET main_text = main_text || ' '");
    Statement first = damaged.prepare("SELECT hash, template_name FROM sources ORDER BY hash LIMIT 1");
    ASSERT_TRUE(first.step());
    damaged_source = first.column_text(0), damaged_template = first.column_text(1);
  }
  const auto refused = [&](const std::string& args, const std::string& line) {
    const test::SplitResult r = test::run_split(dir, "db merge " + args);
    SCOPED_TRACE(args);
    test::expect_line(r, 2, line);
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(dir / "out.db"));
  };
  refused("out.db a.db a.db", "merge input a.db is given twice; give each database once");
  refused("out.db a.db link.db", "merge inputs a.db and link.db are the same file; give each database once");
  refused("a.db a.db", "the output a.db is also given as an input; an existing OUT is merged into as an input "
                       "already, and no input is ever written");
  refused("out.db missing.db", "merge input missing.db does not exist");
  refused("out.db old.db",
          fmt::format("merge input old.db has schema version 8, older than this cm-tune's {}; merge never migrates an "
                      "input: copy it, run cm-tune db migrate --db COPY and merge the copy",
                      latest_schema_version()));
  refused("out.db a.db damaged.db",
          fmt::format("merge input damaged.db is damaged: the source {} (template {}) does not match its hash; cm-tune "
                      "db check --db damaged.db lists what else",
                      damaged_source.substr(0, 16), damaged_template));
  const test::SplitResult no_inputs = test::run_split(dir, "db merge out.db");
  EXPECT_EQ(no_inputs.exit_code, 2) << no_inputs.err;
  EXPECT_EQ(std::count(no_inputs.err.begin(), no_inputs.err.end(), '\n'), 1) << no_inputs.err;
  EXPECT_EQ(test::entries(dir.path()), (std::vector<std::string>{"a.db", "damaged.db", "link.db", "old.db"}));
}

// Two merges into one new OUT at once: the one that finds OUT being set up by the other waits for
// it and merges into it. Both succeed, and OUT holds both inputs.
TEST(DbMergeConcurrent, TwoMergesIntoOneNewOutBothSucceed) {
  test::TempDir dir;
  test::tuned_database(dir / "a.db", "GPU-merge-a");
  test::tuned_database(dir / "b.db", "GPU-merge-b");
  for (int round = 0; round < 10; ++round) {
    const std::string out = (dir / fmt::format("out-{}.db", round)).string();
    const pid_t a = test::spawn_cmtune({"db", "merge", out, (dir / "a.db").string()}, dir / "a.out", dir / "a.err");
    const pid_t b = test::spawn_cmtune({"db", "merge", out, (dir / "b.db").string()}, dir / "b.out", dir / "b.err");
    for (const auto& [pid, err] : {std::pair{a, "a.err"}, std::pair{b, "b.err"}}) {
      int status = 0;
      waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": " << test::read_file(dir / err);
    }
    Database merged(out, OpenMode::read);
    Statement devices = merged.prepare("SELECT count(*) FROM devices");
    ASSERT_TRUE(devices.step());
    EXPECT_EQ(devices.column_int(0), 2) << "round " << round;
    const auto check = test::run_command(fmt::format("{} --db '{}' db check 2>&1", test::cmtune_binary(), out));
    EXPECT_EQ(check.exit_code, 0) << check.output;
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace cmt::db_merge_tests
