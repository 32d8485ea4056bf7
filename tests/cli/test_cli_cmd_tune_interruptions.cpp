// cm-tune tune as a real child process, stopped by faults, signals and kill -9. The measuring
// process is the scripted worker (CMTUNE_MEASURE_WORKER, tests/worker/scripted_worker.cpp), since
// there is no GPU here; compilation (NVRTC), the database (SQLite), the processes, pipes and
// signals are real. The GPU test TuneFaults.* runs the same faults on a GPU with the real worker.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "test_support.hpp"


namespace cmt {
namespace {

/// template, parameters, "problem outcome". Timed counts as one outcome whether it was kept (ok) or
/// abandoned: which of the two depends on the best time known when it ran, so on the order in which
/// candidates finish compiling, and a rerun finds the cached ones first.
using TrialSet = std::set<std::tuple<std::string, std::string, std::string>>;

/// cm-tune started with posix_spawn, stdout and stderr to files, so a test can signal it.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::filesystem::path& out, const std::filesystem::path& err) {
    m_pid = test::spawn_cmtune(args, out, err);
  }
  void signal(int sig) const { ::kill(m_pid, sig); }
  /// The exit code, or 128 + the signal that killed it.
  int wait() {
    int status = 0;
    waitpid(m_pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return m_pid; }

 private:
  pid_t m_pid = -1;
};

std::string query_one(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const auto* t = sqlite3_column_text(st, c);
        out += (c ? "|" : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      out += "\n";
    }
  } else {
    out = std::string("error: ") + sqlite3_errmsg(h);
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

TrialSet trial_set(const std::string& db) {
  TrialSet set;
  std::istringstream rows(query_one(db, "SELECT template_name, params, m || 'x' || n || 'x' || k || ' ' || "
                                        "CASE WHEN outcome IN ('ok', 'abandoned') THEN 'timed' ELSE outcome END FROM trials"));
  for (std::string line; std::getline(rows, line);) {
    const size_t a = line.find('|'), b = line.find('|', a + 1);
    set.insert({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return set;
}

int count_lines(const std::filesystem::path& file, const std::string& prefix_word) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(" " + prefix_word + " ") != std::string::npos;
  return n;
}

class TuneInterruptions : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CMTUNE_MEASURE_WORKER", CMTUNE_SCRIPTED_WORKER, 1);
    setenv("CMTUNE_SCRIPT_LOG", (m_dir / "worker.log").c_str(), 1);
    test::write_file(m_dir / "preset.toml", test::cheap_preset("interruptions"));
  }
  void TearDown() override {
    unsetenv("CMTUNE_MEASURE_WORKER");
    unsetenv("CMTUNE_SCRIPT_LOG");
    unsetenv("CMTUNE_SCRIPT_DELAY_MS");
  }
  std::vector<std::string> args(const std::string& db, const std::string& extra_templates = "") const {
    std::vector<std::string> a{"--db", db};
    if (!extra_templates.empty()) {
      a.insert(a.end(), {"--templates", default_templates_dir().string(), "--templates", extra_templates});
    }
    a.insert(a.end(), {"tune", "--sizes", "64,96x80x72,128", "--config", (m_dir / "preset.toml").string(),
                       "--no-calibrate", "--seed", "3", "--jobs", "2"});
    return a;
  }
  int run(const std::vector<std::string>& a) {
    Child c(a, m_dir / "out.txt", m_dir / "err.txt");
    return c.wait();
  }
  std::string err() const { return test::read_file(m_dir / "err.txt"); }
  std::string out() const { return test::read_file(m_dir / "out.txt"); }
  static std::filesystem::path default_templates_dir() { return std::filesystem::path(CMTUNE_SOURCE_DIR) / "templates"; }

  /// A clean run's trials, for comparison (computed once per test that needs it).
  TrialSet clean_trials() {
    const std::string db = (m_dir / "clean.db").string();
    EXPECT_EQ(run(args(db)), 0) << err();
    return trial_set(db);
  }

  /// Starts a tune that measures slowly, waits until `measured` measurements are logged, then
  /// sends `sig`; returns the exit code.
  int stop_after(const std::string& db, int measured, int sig) {
    setenv("CMTUNE_SCRIPT_DELAY_MS", "120", 1);
    std::filesystem::remove(m_dir / "worker.log");
    Child c(args(db), m_dir / "out.txt", m_dir / "err.txt");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (count_lines(m_dir / "worker.log", "measure") < measured && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.signal(sig);
    const int code = c.wait();
    unsetenv("CMTUNE_SCRIPT_DELAY_MS");
    return code;
  }

  test::TempDir m_dir;
};

TEST_F(TuneInterruptions, FaultingCandidatesAreRecordedAndTheRunCompletes) {
  const std::string db = (m_dir / "faults.db").string();
  std::vector<std::string> a = args(db, std::string(CMTUNE_TEST_FIXTURES) + "/faults");
  test::write_file(m_dir / "preset.toml", R"(name = "faults"
description = "every fault mixed with good candidates"
[templates.faulty]
[templates.coalesced]
BLOCK = [16, 32]
)");
  ASSERT_EQ(run(a), 0) << err();
  // Each fault is its outcome on every problem; the good candidates win. (FAULT=0 is correct:
  // timed, then kept or abandoned depending on whether coalesced BLOCK=32 ran before it.)
  const std::string rows = query_one(db,
      "SELECT params, CASE WHEN outcome IN ('ok', 'abandoned') THEN 'timed' ELSE outcome END AS o, count(*) "
      "FROM trials WHERE template_name = 'faulty' GROUP BY params, o ORDER BY params");
  EXPECT_EQ(rows, "FAULT=0|timed|3\nFAULT=1|crashed|3\nFAULT=2|crashed|3\nFAULT=3|timeout|3\nFAULT=4|crashed|3\n");
  EXPECT_EQ(query_one(db, "SELECT DISTINCT template_name || ' ' || params FROM winners WHERE scope = 'overall'"), "coalesced BLOCK=32\n");
  EXPECT_EQ(query_one(db, "SELECT status FROM runs"), "done\n");
  // One measuring process to start with, and one after each of the 12 faults.
  std::set<std::string> pids;
  std::ifstream log(m_dir / "worker.log");
  for (std::string line; std::getline(log, line);) pids.insert(line.substr(0, line.find(' ')));
  EXPECT_EQ(pids.size(), 13u);
  EXPECT_NE(err().find("12 restarts after faults"), std::string::npos) << err();
}

TEST_F(TuneInterruptions, SigintCommitsPrintsTheSummaryAndExits130) {
  const TrialSet clean = clean_trials();
  const std::string db = (m_dir / "sigint.db").string();
  EXPECT_EQ(stop_after(db, 3, SIGINT), 130) << err();
  EXPECT_NE(err().find("stopped by SIGINT"), std::string::npos) << err();
  EXPECT_NE(out().find("problem"), std::string::npos) << "the summary table: " << out();
  EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok\n");
  EXPECT_EQ(query_one(db, "SELECT status FROM runs"), "interrupted\n");
  const TrialSet partial = trial_set(db);
  EXPECT_GE(partial.size(), 3u);
  EXPECT_LT(partial.size(), clean.size());
  // The rerun measures only what is missing and ends with the clean run's trials and winners.
  ASSERT_EQ(run(args(db)), 0) << err();
  EXPECT_EQ(trial_set(db), clean);
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM trials WHERE retime_median_ms IS NOT NULL"),
            query_one((m_dir / "clean.db").string(), "SELECT count(*) FROM trials WHERE retime_median_ms IS NOT NULL"));
}

TEST_F(TuneInterruptions, SigtermExits143) {
  const std::string db = (m_dir / "sigterm.db").string();
  EXPECT_EQ(stop_after(db, 2, SIGTERM), 143) << err();
  EXPECT_NE(err().find("stopped by SIGTERM"), std::string::npos) << err();
  EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok\n");
}

TEST_F(TuneInterruptions, KillNineAtAnyMomentThenARerunEqualsACleanRun) {
  const TrialSet clean = clean_trials();
  const std::string db = (m_dir / "killed.db").string();
  // Killed right after starting, then after 1, 4 and 7 measurements: every kill leaves a database
  // that is intact, and each rerun goes on from where the last one stopped.
  for (const int measured : {0, 1, 4, 7}) {
    EXPECT_EQ(stop_after(db, measured, SIGKILL), 128 + SIGKILL);
    if (std::filesystem::exists(db))  // a kill at once may come before the database is created
      EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok\n") << "after " << measured;
  }
  const size_t before = trial_set(db).size();
  ASSERT_EQ(run(args(db)), 0) << err();
  const TrialSet after = trial_set(db);
  EXPECT_EQ(after, clean);
  EXPECT_GT(after.size(), before);
  // No duplicates: one row per trial.
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM trials"), std::to_string(clean.size()) + "\n");
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM trials WHERE retime_median_ms IS NOT NULL"),
            query_one((m_dir / "clean.db").string(), "SELECT count(*) FROM trials WHERE retime_median_ms IS NOT NULL"));
}

TEST_F(TuneInterruptions, TwoTunesOfDifferentSizesIntoOneDatabaseBothSucceed) {
  const TrialSet clean = clean_trials();
  const std::string db = (m_dir / "shared.db").string();
  std::vector<std::string> first = args(db), second = args(db);
  first[std::find(first.begin(), first.end(), "--sizes") - first.begin() + 1] = "64";
  ASSERT_EQ(run(first), 0) << err();  // the database exists, as in the reported case
  first[std::find(first.begin(), first.end(), "--sizes") - first.begin() + 1] = "64,96x80x72";
  second[std::find(second.begin(), second.end(), "--sizes") - second.begin() + 1] = "128";
  setenv("CMTUNE_SCRIPT_DELAY_MS", "40", 1);  // long enough that the two overlap
  Child a(first, m_dir / "a.out", m_dir / "a.err");
  Child b(second, m_dir / "b.out", m_dir / "b.err");
  EXPECT_EQ(a.wait(), 0) << test::read_file(m_dir / "a.err");
  EXPECT_EQ(b.wait(), 0) << test::read_file(m_dir / "b.err");
  EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok\n");
  EXPECT_EQ(trial_set(db), clean);
}

TEST_F(TuneInterruptions, MeasureWorkerByHandIsOneLine) {
  const auto r = test::run_command(test::cmtune_binary() + " measure-worker 2>&1 3<&- 4<&-");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("cm-tune: error: measure-worker is the measuring process that tune starts", 0), 0u) << r.output;
}

TEST_F(TuneInterruptions, NoDeviceFromTheWorkerIsOneLineExit3) {
  const std::string db = (m_dir / "none.db").string();
  std::vector<std::string> a = args(db);
  a.insert(a.end(), {"--device", "none"});
  EXPECT_EQ(run(a), 3);
  EXPECT_EQ(err(), "cm-tune: error: no CUDA device (scripted)\n");
}

}  // namespace
}  // namespace cmt
