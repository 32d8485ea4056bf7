#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cli/sizes.hpp"

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

}  // namespace
}  // namespace cmt
