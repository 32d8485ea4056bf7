// Parsing of --sizes: "256..4096", "256..4096:256", "1000,1023", "4096x1024x512" and mixes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// The largest M, N or K accepted (--sizes, query's --size/--m/--n/--k); also keeps M*ld within
/// int64 and grid limits sane.
constexpr int64_t k_max_dimension = 1 << 20;

/// Parses a size list. A..B doubles from A up to B; A..B:S steps by S; N is N x N x N;
/// MxNxK is rectangular; @FILE reads a sizes file (read_sizes_file). Duplicates are dropped, first
/// occurrence kept. Throws UsageError naming the bad token (and a file's line).
std::vector<Problem> parse_sizes(std::string_view text);

/// A sizes file: one item of the size list per line (usually MxNxK), '#' starts a comment, blank
/// lines are skipped. UsageError for a file that cannot be read, holds no sizes, or a bad line
/// ("FILE:LINE: ...").
std::vector<Problem> read_sizes_file(const std::string& path);

}  // namespace cmt
