// Several `cm-tune tune`s into one database at once, with calibration: the measuring process is the
// scripted worker (no GPU here); NVRTC, SQLite and the processes are real. The tunes of different
// sizes share the calibration shapes, so they measure the same kernels on the same problems and
// write the same trial keys. Every tune must succeed, and `db check` must find every trial, winner
// and run consistent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <sqlite3.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// One value of a query on a database, "" when it returns nothing.
std::string scalar(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "NULL";
  } else if (st == nullptr) {
    out = std::string("error: ") + sqlite3_errmsg(h);
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

class ConcurrentTunes : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CMTUNE_MEASURE_WORKER", CMTUNE_SCRIPTED_WORKER, 1);
    test::write_file(m_dir / "small.toml", test::cheap_preset("small"));
  }
  void TearDown() override { unsetenv("CMTUNE_MEASURE_WORKER"); }

  /// A database holding the quick preset's compiled kernels and nothing else, made once per test
  /// run (in the shared test cache, named by the templates' digest, so an edited template makes a
  /// new one) by a tune whose results are then deleted: each round copies it, so that the rounds
  /// measure rather than compile.
  fs::path quick_seed() {
    const fs::path seed =
        test::shared_cache_dir() / fmt::format("tune-quick-compiled-{}.db", test::templates_digest().substr(0, 16));
    if (fs::exists(seed)) return seed;
    const fs::path made = m_dir / "seed.db";
    const auto tuned = test::run_command(fmt::format("{} --db '{}' tune --config quick --sizes 128 --jobs 2 2>&1",
                                                     test::cmtune_binary(), made.string()));
    EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
    sqlite3* h = nullptr;
    sqlite3_open(made.c_str(), &h);
    char* error = nullptr;
    sqlite3_exec(h,
                 "DELETE FROM winners; DELETE FROM baselines; DELETE FROM trials; DELETE FROM runs; "
                 "PRAGMA wal_checkpoint(TRUNCATE);",
                 nullptr, nullptr, &error);
    EXPECT_EQ(error, nullptr) << error;
    sqlite3_free(error);
    sqlite3_close(h);
    const fs::path temp = seed.string() + fmt::format(".{}", ::getpid());
    fs::copy_file(made, temp, fs::copy_options::overwrite_existing);
    fs::rename(temp, seed);   // whole or not at all, for a test run beside this one
    return seed;
  }

  /// Starts `sizes.size()` tunes at once into `db`, one per size, and checks that each succeeds,
  /// that every run is closed as done, that each requested size has its winner, and that db check
  /// passes.
  void race(const fs::path& db, const std::string& config, const std::vector<std::string>& sizes,
            const std::string& what) {
    std::vector<pid_t> pids;
    for (size_t i = 0; i < sizes.size(); ++i)
      pids.push_back(test::spawn_cmtune({"--db", db.string(), "tune", "--config", config, "--sizes", sizes[i], "--jobs",
                                         "1", "--seed", std::to_string(i + 1)},
                                        m_dir / fmt::format("{}.out", i), m_dir / fmt::format("{}.err", i)));
    for (size_t i = 0; i < pids.size(); ++i)
      EXPECT_EQ(wait_for(pids[i]), 0) << what << ", tune of " << sizes[i] << ": "
                                      << test::read_file(m_dir / fmt::format("{}.err", i));
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status <> 'done'"), "0") << what;
    for (const std::string& size : sizes)
      EXPECT_EQ(scalar(db, fmt::format("SELECT count(*) FROM winners WHERE scope = 'overall' AND m = {0} AND n = {0} "
                                       "AND k = {0} AND layout = 'nn' AND batch = 1",
                                       size)),
                "1")
          << what << ": the winner of " << size;
    const auto check = test::run_command(fmt::format("{} --db '{}' db check 2>&1", test::cmtune_binary(), db.string()));
    EXPECT_EQ(check.exit_code, 0) << what << ": " << check.output;
  }

  test::TempDir m_dir;
};

TEST_F(ConcurrentTunes, TwoAndFourCalibratingTunesOfAnExistingDatabaseAllSucceed) {
  const fs::path seed = quick_seed();
  const std::vector<std::string> all = {"128", "256", "512", "1024"};
  for (const size_t tunes : {size_t{2}, size_t{4}}) {
    for (int round = 0; round < 20; ++round) {
      const fs::path db = m_dir / fmt::format("existing-{}-{}.db", tunes, round);
      fs::copy_file(seed, db);
      race(db, "quick", {all.begin(), all.begin() + static_cast<long>(tunes)},
           fmt::format("{} tunes, round {}", tunes, round));
      if (HasFailure()) return;   // one round's failures say it; twenty would bury them
      fs::remove(db);
    }
  }
}

TEST_F(ConcurrentTunes, FourCalibratingTunesOfANewDatabaseAllSucceed) {
  for (int round = 0; round < 3; ++round) {
    race(m_dir / fmt::format("new-{}.db", round), (m_dir / "small.toml").string(), {"128", "256", "512", "1024"},
         fmt::format("new database, round {}", round));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace cmt
