// Assertions the CLI tests share about a failed run of the real cm-tune binary: its exit code and
// its one line on stderr.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace cmt::test
