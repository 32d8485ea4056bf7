// The exported header's own decoder of its machine code (export/runtime/image_loader.h), compiled as
// the header pastes it: it unpacks exactly what the tool packs with liblz4 (export/image_codec.hpp),
// refuses damaged text without reading out of bounds, and picks the image that runs on a GPU.
#include <gtest/gtest.h>

#include "export/runtime/header_includes.h"

#include <random>
#include <string>
#include <vector>

#include "export/image_codec.hpp"

namespace loader {
namespace detail {
#include "export/runtime/image_loader.h"
}  // namespace detail
}  // namespace loader

namespace cmt {
namespace {

/// The header's decoder: base64 then LZ4, into raw_bytes bytes; nullopt where it refuses.
std::optional<std::vector<char>> header_unpack(const std::string& text, size_t raw_bytes) {
  std::string block;
  if (!loader::detail::base64_unpack(text.c_str(), &block)) return std::nullopt;
  std::vector<char> out(raw_bytes);
  if (!loader::detail::lz4_unpack(block, out.data(), out.size())) return std::nullopt;
  return out;
}

std::vector<std::vector<char>> samples() {
  std::mt19937 rng(7);
  std::vector<std::vector<char>> out = {{}, {'x'}, std::vector<char>(15, 'a'), std::vector<char>(100000, '\0')};
  for (const size_t size : {16u, 255u, 256u, 4096u, 70000u, 300000u}) {
    std::vector<char> random(size), structured(size);
    for (size_t i = 0; i < size; ++i) {
      random[i] = static_cast<char>(rng());
      // Like machine code: runs of zeros and repeated 16-byte words with a few bytes changed.
      structured[i] = (i / 64) % 3 == 0 ? '\0' : static_cast<char>((i % 16) * 7 + ((i / 256) % 5));
    }
    out.push_back(random);
    out.push_back(structured);
  }
  return out;
}

TEST(HeaderImageLoader, UnpacksExactlyWhatLz4Packs) {
  for (const auto& bytes : samples()) {
    SCOPED_TRACE(bytes.size());
    const PackedImage packed = pack_image(bytes);
    EXPECT_EQ(packed.raw_bytes, bytes.size());
    const auto header = header_unpack(packed.text, bytes.size());
    ASSERT_TRUE(header.has_value());
    EXPECT_EQ(*header, bytes);
    const auto tool = unpack_image(packed.text, bytes.size());
    ASSERT_TRUE(tool.has_value());
    EXPECT_EQ(*tool, bytes);
  }
}

TEST(HeaderImageLoader, DamagedTextIsRefusedNotOverrun) {
  std::mt19937 rng(11);
  const auto all = samples();
  const std::vector<char>& bytes = all.back();
  const std::string text = pack_image(bytes).text;
  EXPECT_FALSE(header_unpack(text, bytes.size() + 1).has_value()) << "the size is checked";
  EXPECT_FALSE(header_unpack(text, bytes.size() - 1).has_value());
  EXPECT_FALSE(header_unpack(text.substr(0, text.size() / 2), bytes.size()).has_value()) << "a cut block";
  EXPECT_FALSE(header_unpack("not base64!", 4).has_value());
  int refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string damaged = text;
    damaged[rng() % damaged.size()] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng() % 26];
    const auto out = header_unpack(damaged, bytes.size());   // under ASan, a read or write out of bounds fails here
    refused += !out.has_value() || *out != bytes;
  }
  EXPECT_GT(refused, 0);
}

TEST(HeaderImageLoader, RankPicksTheCubinThatRunsElsePtx) {
  using loader::detail::image_rank;
  EXPECT_EQ(image_rank("sm_90", 9, 0), 3);
  EXPECT_EQ(image_rank("sm_90a", 9, 0), 3);
  EXPECT_EQ(image_rank("sm_80", 8, 6), 2) << "a cubin runs on a later minor of its major";
  EXPECT_EQ(image_rank("sm_86", 8, 0), 0) << "not on an earlier one";
  EXPECT_EQ(image_rank("sm_90a", 9, 1), 0) << "sm_90a code runs on 9.0 alone";
  EXPECT_EQ(image_rank("sm_90", 10, 0), 0) << "nor on another major";
  EXPECT_EQ(image_rank("sm_100a", 10, 0), 3);
  EXPECT_EQ(image_rank("compute_75", 9, 0), 1) << "PTX runs where the driver compiles it";
  EXPECT_EQ(image_rank("compute_75", 7, 5), 1);
  EXPECT_EQ(image_rank("compute_90", 8, 0), 0) << "not on an older GPU";
  EXPECT_EQ(image_rank("", 9, 0), 0);
  EXPECT_EQ(image_rank("gfx90a", 9, 0), 0);
}

}  // namespace
}  // namespace cmt
