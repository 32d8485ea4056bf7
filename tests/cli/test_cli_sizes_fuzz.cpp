// Seeded random testing of the --sizes parser (tuner/cli/sizes.hpp), sizes files included. The
// helpers and how to replay or extend a run are in tests/model/test_fuzz_support.hpp.
//
// Properties: parsing never crashes (the sanitizer build checks memory and undefined behaviour);
// every refusal is a one-line UsageError naming --sizes or the sizes file; an accepted list is
// non-empty, holds no duplicate, every dimension is within 1..k_max_dimension, and reads back the
// same from its canonical spelling (MxNxK,...).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/sizes.hpp"
#include "core/error.hpp"
#include "model/test_fuzz_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

using fuzz::Rng;

/// Runs a scope in another working directory: "@name" reads a file relative to it, and the fuzzed
/// names must resolve in an empty folder of the test's own, not wherever ctest runs.
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : m_old(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() {
    std::error_code ec;
    fs::current_path(m_old, ec);
  }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

 private:
  fs::path m_old;
};

/// The size lists of the tests and the documentation (every "--sizes LIST" the docs show).
std::vector<std::string> size_seeds() {
  std::set<std::string> seeds = {"256..4096", "256..4096:256", "1000,1023", "4096x1024x512", "256..1024, 1023,4096x1024x512",
                                 "512,256..512,512x512x512", "100..350:100", "1x4096x8192", "1048576", "1..1048576",
                                 "1..1048576:1048575", "7X9x11", " 64 ,\t128 ", "@s.txt", "1,@s.txt,2..8"};
  const std::regex option("--sizes[ =]([0-9][0-9.,:xX]*)");
  std::vector<fs::path> docs = {fs::path(CMTUNE_SOURCE_DIR) / "README.md"};
  for (const auto& entry : fs::directory_iterator(fs::path(CMTUNE_SOURCE_DIR) / "docs")) docs.push_back(entry.path());
  for (const fs::path& doc : docs) {
    const std::string text = test::read_file(doc);
    for (std::sregex_iterator it(text.begin(), text.end(), option), end; it != end; ++it) seeds.insert((*it)[1]);
  }
  return {seeds.begin(), seeds.end()};
}

const std::vector<std::string>& size_dictionary() {
  static const std::vector<std::string> tokens = {
      "..", ":", ",", "x", "X", "@", "@s.txt", "@.", "@/", "#", " ", "\t", "\n", "\r\n", "...", "::", "x0", "0x", "-",
      "+", "1..", "..2", "@@", "\x00", "\xff", "1e3", "256..4096:256", "4096x1024x512"};
  return tokens;
}

/// A sizes file's text: a few lines of items, comments and blanks.
std::string sizes_file(Rng& rng, const std::vector<std::string>& corpus) {
  static const std::vector<std::string> lines = {"# shapes", "", "256x256x256", "  1x4096x8192   # GEMV-like\r",
                                                 "1000", "4096x1024x512", "64..256:64", "\t"};
  std::string text;
  for (size_t n = 1 + rng.below(6); n > 0; --n) {
    const std::string& line = rng.pick(lines);
    text += (rng.chance(0.3) ? fuzz::mutate(rng, line, size_dictionary(), corpus) : line) + "\n";
  }
  return text;
}

TEST(SizesFuzz, MutatedSizeListsParseOrFailWithOneLine) {
  const std::vector<std::string> corpus = size_seeds();
  ASSERT_GT(corpus.size(), 15u) << "the documentation's size lists are seeds too";
  test::TempDir dir;
  const ScopedCwd cwd(dir.path());
  const fs::path file = dir / "s.txt";
  const int count = fuzz::iterations(20000);
  fuzz::announce("sizes", count);
  int failures = 0, accepted = 0;
  for (int i = 0; i < count && failures < fuzz::k_max_reported_failures; ++i) {
    Rng rng(fuzz::base_seed(), i);
    // The sizes file some inputs name ("@s.txt"): fuzzed too, or missing.
    std::error_code ec;
    fs::remove(file, ec);
    if (rng.chance(0.8)) test::write_file(file, sizes_file(rng, corpus));
    const std::string input =
        rng.chance(0.85) ? fuzz::mutate(rng, rng.pick(corpus), size_dictionary(), corpus) : fuzz::garbage(rng, size_dictionary());
    std::vector<Problem> sizes;
    fuzz::Outcome outcome;
    if (!fuzz::run_checked([&] { sizes = parse_sizes(input); }, {"--sizes", "s.txt"}, i, input, outcome)) {
      ++failures;
      continue;
    }
    if (!outcome.accepted) continue;
    ++accepted;
    std::string canonical;
    bool in_range = !sizes.empty();
    for (const Problem& p : sizes) {
      for (const int64_t d : {p.m, p.n, p.k}) in_range = in_range && d >= 1 && d <= k_max_dimension;
      canonical += (canonical.empty() ? "" : ",") + p.to_string();
    }
    const bool unique = std::set<Problem>(sizes.begin(), sizes.end()).size() == sizes.size();
    std::vector<Problem> again;
    try {
      again = parse_sizes(canonical);
    } catch (const UsageError& e) {
      ADD_FAILURE() << "iteration " << i << ": the canonical spelling " << canonical << " is refused: " << e.what();
    }
    if (!in_range || !unique || again != sizes) {
      ADD_FAILURE() << "iteration " << i << ": accepted " << canonical << " (in range: " << in_range
                    << ", unique: " << unique << ", reads back the same: " << (again == sizes) << ")\n  input: \""
                    << fuzz::escaped(input) << "\"";
      ++failures;
    }
  }
  EXPECT_GT(accepted, count / 10) << "too few mutated lists were valid: the properties of accepted ones went untested";
}

// ---- Regressions the fuzzing found ----

TEST(SizesFuzz, ASizesFileNamingItselfAfterACommaIsRefused) {
  // Only a line starting with '@' was refused; "1,@self" read the file again and again until the
  // stack overflowed.
  test::TempDir dir;
  const std::string self = (dir / "self.txt").string();
  test::write_file(self, "256\n1,@" + self + "\n");
  const std::string what = test::usage_error([&] { (void)parse_sizes("@" + self); });
  EXPECT_NE(what.find(self + ":2: a sizes file may not name another (@)"), std::string::npos) << what;
}

TEST(SizesFuzz, AFileWithoutLineBreaksIsRefusedNotReadWhole) {
  // A line was read whole, so @/dev/zero took memory until the process died. (Not read here: were
  // the bound gone, this test would take the machine's memory with it.)
  test::TempDir dir;
  test::write_file(dir / "no_breaks.bin", std::string(100000, '\0'));
  const std::string what = test::usage_error([&] { (void)parse_sizes("@" + (dir / "no_breaks.bin").string()); });
  EXPECT_NE(what.find("no_breaks.bin:1: the line is longer than 4096 characters"), std::string::npos) << what;
  // A long line that is not the first: its number.
  test::write_file(dir / "long.txt", "64\n" + std::string(5000, '1') + "\n");
  const std::string line = test::usage_error([&] { (void)parse_sizes("@" + (dir / "long.txt").string()); });
  EXPECT_NE(line.find("long.txt:2: the line is longer than"), std::string::npos) << line;
  // 4096 characters exactly are read (and then refused as a size that is too large).
  test::write_file(dir / "edge.txt", std::string(4096, '1') + "\n");
  const std::string edge = test::usage_error([&] { (void)parse_sizes("@" + (dir / "edge.txt").string()); });
  EXPECT_NE(edge.find("out of range"), std::string::npos) << edge.substr(0, 300);
}

TEST(SizesFuzz, ControlCharactersInABadSizeStayOneLine) {
  const std::string what = test::usage_error([] { (void)parse_sizes("256,12\n8,\x01"); });
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_NE(what.find("bad size '12\\n8' in --sizes"), std::string::npos) << what;
}

}  // namespace
}  // namespace cmt
