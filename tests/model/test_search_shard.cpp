// Shards (search/shard.hpp): `--shard I/N` parses or says why not, and the shares of one count are
// deterministic, disjoint and together complete, for any count, also past the number of items.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "search/shard.hpp"

namespace cmt {
namespace {

std::string shard_error(const std::string& text) {
  try {
    (void)parse_shard(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Shard, ParsesIOfNCountingFromZero) {
  const Shard s = parse_shard("2/8");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 8u);
  EXPECT_EQ(s.to_string(), "2/8");
  EXPECT_EQ(parse_shard("0/1").count, 1u);
  EXPECT_EQ(Shard{}.to_string(), "0/1");
}

TEST(Shard, BadTextIsOneLineSayingWhy) {
  EXPECT_NE(shard_error("3").find("expected I/N"), std::string::npos);
  EXPECT_NE(shard_error("a/4").find("whole numbers"), std::string::npos);
  EXPECT_NE(shard_error("-1/4").find("whole numbers"), std::string::npos);
  EXPECT_NE(shard_error("1/4x").find("whole numbers"), std::string::npos);
  EXPECT_NE(shard_error(" 1/4").find("whole numbers"), std::string::npos);
  EXPECT_NE(shard_error("1/").find("whole numbers"), std::string::npos);
  EXPECT_NE(shard_error("0/0").find("at least 1"), std::string::npos);
  EXPECT_NE(shard_error("4/4").find("from 0 to 3"), std::string::npos);
  EXPECT_NE(shard_error("99999999999999999999999/4").find("whole numbers"), std::string::npos);
  for (const char* bad : {"3", "4/4", "0/0", "x/y"}) {
    const std::string e = shard_error(bad);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find("--shard"), std::string::npos) << e;
  }
}

TEST(Shard, SharesAreDeterministicDisjointAndCompleteForEveryCount) {
  for (const size_t size : {0u, 1u, 7u, 64u}) {
    for (size_t count = 1; count <= size + 3; ++count) {
      std::vector<int> owners(size, 0);
      size_t largest = 0, smallest = size;
      for (size_t index = 0; index < count; ++index) {
        const Shard shard{index, count};
        const std::vector<size_t> share = shard_positions(size, shard);
        EXPECT_EQ(share, shard_positions(size, shard));   // the same share every time
        for (size_t i = 0; i < share.size(); ++i) {
          ASSERT_LT(share[i], size);
          if (i > 0) EXPECT_LT(share[i - 1], share[i]);   // in order
          EXPECT_TRUE(in_shard(share[i], shard));
          ++owners[share[i]];
        }
        largest = std::max(largest, share.size());
        smallest = std::min(smallest, share.size());
        if (index >= size) EXPECT_TRUE(share.empty()) << index << "/" << count << " of " << size;
      }
      for (size_t p = 0; p < size; ++p) EXPECT_EQ(owners[p], 1) << "position " << p << ", " << count << " shards";
      if (count <= size) EXPECT_LE(largest - smallest, 1u) << count << " shards of " << size;   // balanced
    }
  }
}

}  // namespace
}  // namespace cmt
