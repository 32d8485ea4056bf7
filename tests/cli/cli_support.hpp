// Assertions the CLI tests share about a failed run of the real cm-tune binary: its exit code and
// its one line on stderr.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cli/app.hpp"
#include "test_support.hpp"

namespace cmt::test {

/// The fixture templates folder the CLI tests compile and list (tests/fixtures/templates).
inline std::filesystem::path fixture_templates() { return std::filesystem::path(CMTUNE_TEST_FIXTURES) / "templates"; }

/// Every path under a folder, recursively.
inline std::vector<std::string> contents(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) names.push_back(e.path().string());
  return names;
}

/// Asserts the exit code and that stderr is exactly `line` (one line, "cm-tune: error: " prepended).
inline void expect_line(const SplitResult& r, int exit_code, const std::string& line) {
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.err, "cm-tune: error: " + line + "\n");
}

/// Runs `cm-tune args` in a fresh folder and asserts the exit code, one stderr line starting
/// "cm-tune: error: " and holding every needle, and that the folder is still empty (nothing was
/// created, at any depth).
inline void expect_error(const std::string& args, int exit_code, const std::vector<std::string>& needles) {
  TempDir dir;
  const SplitResult r = run_split(dir, args);
  SCOPED_TRACE("cm-tune " + args + "\nstderr: " + r.err + "\nstdout: " + r.out);
  EXPECT_EQ(r.exit_code, exit_code);
  EXPECT_EQ(r.err.rfind("cm-tune: error: ", 0), 0u);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_FALSE(r.err.empty() || r.err.back() != '\n');
  for (const auto& needle : needles) EXPECT_NE(r.err.find(needle), std::string::npos) << "missing: " << needle;
  EXPECT_EQ(contents(dir), std::vector<std::string>{}) << "files were created";
}

/// A fixture for a command that only reads a database: a tuned database (one device, one problem,
/// one winning trial) in a fresh folder, the command run there on it, and refusals checked to leave
/// the folder and the database as they were.
class ReadingCommand : public ::testing::Test {
 protected:
  ReadingCommand(std::string command, std::string uuid) : m_command(std::move(command)), m_uuid(std::move(uuid)) {}
  void SetUp() override {
    tuned_database(m_dir / "tune.db", m_uuid);
    m_db_bytes = read_file(m_dir / "tune.db");
  }

  /// `cm-tune --quiet COMMAND --db tune.db ARGS` in the folder.
  SplitResult run_command(const std::string& args) const {
    return run_split(m_dir, "--quiet " + m_command + " --db tune.db " + args);
  }

  /// Refused as a usage error with exactly this line, the database and the folder as they were.
  void expect_refused(const std::string& args, const std::string& line) const {
    const std::vector<std::string> before = entries(m_dir.path());
    const SplitResult r = run_command(args);
    SCOPED_TRACE(m_command + " " + args);
    expect_line(r, cli::k_exit_usage, line);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(entries(m_dir.path()), before) << "a file was created or removed";
    EXPECT_EQ(read_file(m_dir / "tune.db"), m_db_bytes) << "the database changed";
  }

  TempDir m_dir;
  std::string m_db_bytes;

 private:
  std::string m_command;
  std::string m_uuid;
};

/// A fixture for tunes with the scripted measuring process (tests/worker: no GPU): sets
/// CMTUNE_MEASURE_WORKER for the test (and what set_env adds), unset again after it, and writes
/// preset.toml in a fresh folder: the generic default (blocktile2d) at BN 64, BK 8, TM 8, TN 4 and
/// the given BM values, one build per value, type and layout.
class ScriptedTune : public ::testing::Test {
 protected:
  ScriptedTune(std::string name, std::string bm_values) : m_name(std::move(name)), m_bm(std::move(bm_values)) {}
  void SetUp() override {
    set_env("CMTUNE_MEASURE_WORKER", CMTUNE_SCRIPTED_WORKER);
    write_file(m_dir / "preset.toml", "name = \"" + m_name + "\"\ndescription = \"the generic default, BM " + m_bm +
                                          "\"\n[templates.blocktile2d]\nBM = [" + m_bm +
                                          "]\nBN = [64]\nBK = [8]\nTM = [8]\nTN = [4]\n");
  }
  void TearDown() override {
    for (const std::string& name : m_set) unsetenv(name.c_str());
  }
  /// Sets an environment variable for this test.
  void set_env(const std::string& name, const std::string& value) {
    setenv(name.c_str(), value.c_str(), 1);
    m_set.push_back(name);
  }
  std::string preset() const { return (m_dir / "preset.toml").string(); }
  TempDir m_dir;

 private:
  std::string m_name, m_bm;
  std::vector<std::string> m_set;
};

}  // namespace cmt::test
