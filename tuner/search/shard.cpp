#include "search/shard.hpp"

#include <charconv>
#include <fmt/format.h>
#include <optional>

#include "core/error.hpp"

namespace cmt {

namespace {

/// A whole number without sign, spaces or a suffix; nullopt otherwise.
std::optional<size_t> whole(std::string_view s) {
  size_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string Shard::to_string() const { return fmt::format("{}/{}", index, count); }

Shard parse_shard(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("--shard '{}': {}", printable(text), why));
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) throw bad("expected I/N, e.g. 0/4 (shard I of N, I from 0 to N - 1)");
  const auto index = whole(text.substr(0, slash));
  const auto count = whole(text.substr(slash + 1));
  if (!index || !count) throw bad("expected I/N with whole numbers, e.g. 0/4 (shard I of N, I from 0 to N - 1)");
  if (*count == 0) throw bad("N must be at least 1");
  if (*index >= *count) throw bad(fmt::format("I must be from 0 to {} (shards count from 0)", *count - 1));
  return Shard{*index, *count};
}

bool in_shard(size_t position, const Shard& shard) { return position % shard.count == shard.index; }

std::vector<size_t> shard_positions(size_t size, const Shard& shard) {
  std::vector<size_t> out;
  for (size_t p = shard.index; p < size; p += shard.count) out.push_back(p);
  return out;
}

}  // namespace cmt
