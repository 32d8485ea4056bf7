// cm-tune compile as a real child process, sent SIGINT or SIGTERM at moments spread over its
// start-up (parsing, loading the preset, creating the database, starting the compiler threads) and
// its compiles (NVRTC running on two threads). Every run must end as documented: 130 or 143 with
// what was compiled kept, or 0 when it finished first; never a death by a signal, exit 4 (NVRTC's
// own handler used to exit(4) from inside the signal) or a run that goes on.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <regex>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "test_support.hpp"


namespace cmt {
namespace {

using namespace std::chrono_literals;

/// Whether the process has a handler for SIGINT: cm-tune installs it before any library's
/// initializer runs. Before that (the dynamic linker loading the libraries) no program can catch
/// a signal, so the moments are counted from here.
bool catches_sigint(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGINT - 1)) & 1;
  return false;
}

std::string sqlite_one(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::string out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      if (const auto* t = sqlite3_column_text(st, 0)) out = reinterpret_cast<const char*>(t);
    sqlite3_finalize(st);
  }
  if (out.empty()) out = std::string("error: ") + sqlite3_errmsg(h);
  sqlite3_close(h);
  return out;
}

struct Ending {
  int code = -1;        // the exit code, 128 + the signal that killed it, or -1: still running
  bool killed = false;  // by a signal
  bool caught = false;  // it had a SIGINT handler before it ended
};

/// Starts cm-tune compile, waits until it catches SIGINT, sleeps `after`, sends `sig` and waits at
/// most `limit` for it to end (then kills it: a hang fails the test, it does not stall it).
Ending compile_and_signal(const std::vector<std::string>& args, const std::filesystem::path& out,
                          const std::filesystem::path& err, std::chrono::milliseconds after, int sig,
                          std::chrono::seconds limit) {
  const pid_t pid = test::spawn_cmtune(args, out, err);

  Ending ending;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const auto ended = [&] { return waitpid(pid, &status, WNOHANG) == pid; };
  bool gone = false;
  while (!(gone = ended()) && !(ending.caught = catches_sigint(pid)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  if (!gone) {
    std::this_thread::sleep_for(after);
    ::kill(pid, sig);
    while (!(gone = ended()) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  }
  if (!gone) {
    ::kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return ending;
  }
  ending.killed = WIFSIGNALED(status);
  ending.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ending;
}

TEST(CompileSignals, SigintOrSigtermAtAnyMomentEndsTheRunCleanlyKeepingWhatCompiled) {
  test::TempDir dir;
  // Cheap kernels on two threads: start-up and a whole compile fit in about 0.7 s (Release), so
  // the moments below cover both, the compiles included (NVRTC's front end used to install its
  // own handler around each).
  test::write_file(dir / "cheap.toml", test::cheap_preset("cheap"));
  const std::vector<int> moments_ms{0, 5, 10, 20, 35, 50, 75, 100, 130, 170, 220, 280, 350, 450, 600, 800};
  int interrupted = 0, finished = 0;
  for (size_t i = 0; i < moments_ms.size() * 2; ++i) {
    const int sig = i % 2 ? SIGTERM : SIGINT;
    const auto after = std::chrono::milliseconds(moments_ms[i / 2]);
    const auto db = dir / ("run" + std::to_string(i) + ".db");
    const std::string what = fmt::format("{} {} ms after the handler", sig == SIGINT ? "SIGINT" : "SIGTERM", after.count());
    const Ending e = compile_and_signal(
        {"--db", db.string(), "compile", "--config", (dir / "cheap.toml").string(), "--arch", "sm_90", "-j", "2"},
        dir / "out.txt", dir / "err.txt", after, sig, 120s);
    const std::string out = test::read_file(dir / "out.txt"), err = test::read_file(dir / "err.txt");
    ASSERT_TRUE(e.caught) << what << ": cm-tune compile ended or ran 120 s without catching SIGINT\n" << err;
    ASSERT_NE(e.code, -1) << what << ": still running after 120 s\n" << err;
    ASSERT_FALSE(e.killed) << what << ": died of signal " << e.code - 128 << "\n" << err;
    ASSERT_TRUE(e.code == 0 || e.code == 128 + sig) << what << ": exit " << e.code << "\n" << out << err;
    EXPECT_EQ(err.find("error"), std::string::npos) << what << "\n" << err;
    if (e.code == 0) {
      ++finished;
      EXPECT_NE(out.find("compiled 4 (4 fresh"), std::string::npos) << what << "\n" << out;
    } else {
      ++interrupted;
      EXPECT_NE(err.find(fmt::format("stopped by {}", sig == SIGINT ? "SIGINT" : "SIGTERM")), std::string::npos)
          << what << "\n" << err;
    }
    if (!std::filesystem::exists(db)) {  // stopped before the database was opened
      EXPECT_NE(e.code, 0) << what;
      continue;
    }
    EXPECT_EQ(sqlite_one(db, "PRAGMA integrity_check"), "ok") << what;
    // Everything the summary counts as compiled is in the cache (and nothing else).
    std::smatch m;
    if (std::regex_search(out, m, std::regex(R"(compiled (\d+) \()")))
      EXPECT_EQ(sqlite_one(db, "SELECT count(*) FROM binaries WHERE ok = 1"), m[1].str()) << what << "\n" << out;
    else
      EXPECT_EQ(sqlite_one(db, "SELECT count(*) FROM binaries"), "0") << what << "\n" << out << err;
  }
  EXPECT_GT(interrupted, 0);
  std::cout << interrupted << " runs stopped by the signal, " << finished << " finished first\n";
}

}  // namespace
}  // namespace cmt
