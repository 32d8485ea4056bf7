#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cli/sizes.hpp"
#include "test_support.hpp"

#include <fstream>

namespace cmt {
namespace {

std::vector<std::string> as_strings(const std::vector<Problem>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.to_string());
  return out;
}

TEST(Sizes, PowersOfTwoRange) {
  EXPECT_EQ(as_strings(parse_sizes("256..4096")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048", "4096x4096x4096"}));
}

TEST(Sizes, SteppedRange) {
  EXPECT_EQ(as_strings(parse_sizes("256..1024:256")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "768x768x768", "1024x1024x1024"}));
  EXPECT_EQ(parse_sizes("100..350:100").size(), 3u);  // 100, 200, 300: the end need not be hit
}

TEST(Sizes, ListsRectanglesAndMixes) {
  EXPECT_EQ(as_strings(parse_sizes("1000,1023,2049")),
            (std::vector<std::string>{"1000x1000x1000", "1023x1023x1023", "2049x2049x2049"}));
  EXPECT_EQ(as_strings(parse_sizes("4096x1024x512")), (std::vector<std::string>{"4096x1024x512"}));
  EXPECT_EQ(as_strings(parse_sizes("256..1024, 1023,4096x1024x512")),
            (std::vector<std::string>{"256x256x256", "512x512x512", "1024x1024x1024", "1023x1023x1023", "4096x1024x512"}));
}

TEST(Sizes, DuplicatesDroppedInOrder) {
  EXPECT_EQ(as_strings(parse_sizes("512,256..512,512x512x512")),
            (std::vector<std::string>{"512x512x512", "256x256x256"}));
}

void expect_bad(const std::string& text, const std::string& token) {
  try {
    parse_sizes(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + token + "'"), std::string::npos) << e.what();
  }
}

TEST(Sizes, BadTokensAreNamed) {
  expect_bad("256,abc,512", "abc");
  expect_bad("256..", "256..");
  expect_bad("4096..256", "4096..256");
  expect_bad("256..1024:0", "256..1024:0");
  expect_bad("4096x1024", "4096x1024");
  expect_bad("4096x1024x512x2", "4096x1024x512x2");
  expect_bad("0", "0");
  expect_bad("-5", "-5");
  expect_bad("1,,2", "");
  expect_bad("12.5", "12.5");
  expect_bad("99999999999", "99999999999");
  EXPECT_THROW(parse_sizes(""), UsageError);
}

void write(const std::filesystem::path& file, const std::string& text) { std::ofstream(file) << text; }

TEST(Sizes, FilesHoldOneSizePerLineWithComments) {
  test::TempDir dir;
  write(dir / "shapes.txt", "# a suite\n256x256x256\n\n  1x4096x8192   # GEMV-like\r\n1000\n256x256x256\n");
  EXPECT_EQ(as_strings(parse_sizes("@" + (dir / "shapes.txt").string())),
            (std::vector<std::string>{"256x256x256", "1x4096x8192", "1000x1000x1000"}));
  // Mixed with other items; duplicates across them dropped.
  EXPECT_EQ(as_strings(parse_sizes("512,@" + (dir / "shapes.txt").string() + ",256")),
            (std::vector<std::string>{"512x512x512", "256x256x256", "1x4096x8192", "1000x1000x1000"}));
}

TEST(Sizes, BadFilesNameTheFileAndLine) {
  test::TempDir dir;
  write(dir / "bad.txt", "256x256x256\n# fine\n4096x1024\n");
  const std::string bad = (dir / "bad.txt").string();
  const std::string what = test::usage_error([&] { parse_sizes("@" + bad); });
  EXPECT_NE(what.find(bad + ":3:"), std::string::npos) << what;
  EXPECT_NE(what.find("'4096x1024'"), std::string::npos) << what;

  write(dir / "empty.txt", "# nothing\n\n");
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "empty.txt").string()); }).find("holds no sizes"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "missing.txt").string()); }).find("cannot read it"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + dir.path().string()); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(test::usage_error([&] { parse_sizes("@"); }).find("no file named"), std::string::npos);
  write(dir / "nested.txt", "@other.txt\n");
  EXPECT_NE(test::usage_error([&] { parse_sizes("@" + (dir / "nested.txt").string()); }).find("may not name another"),
            std::string::npos);
}

}  // namespace
}  // namespace cmt
