// Parsing of --sizes: "256..4096", "256..4096:256", "1000,1023", "4096x1024x512" and mixes.
#pragma once

#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// Parses a size list. A..B doubles from A up to B; A..B:S steps by S; N is N x N x N;
/// MxNxK is rectangular. Duplicates are dropped, first occurrence kept.
/// Throws UsageError naming the bad token.
std::vector<Problem> parse_sizes(std::string_view text);

}  // namespace cmt
