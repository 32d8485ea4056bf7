// Parsing of --sizes: "256..4096", "256..4096:256", "1000,1023", "4096x1024x512", "64x64x64:nt*4096"
// and mixes, and the --layout and --batch options that apply to every size.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// The largest M, N or K accepted (--sizes, query's --size/--m/--n/--k); also keeps M*ld within
/// int64 and grid limits sane.
constexpr int64_t k_max_dimension = 1 << 20;
/// The largest batch accepted.
constexpr int64_t k_max_batch = 1 << 20;

/// Parses a size list. A..B doubles from A up to B; A..B:S steps by S; N is N x N x N;
/// MxNxK is rectangular, and may carry a layout, a batch and strides as Problem::to_string spells
/// them (512x512x64:tn*16:sb=0); @FILE reads a sizes file (read_sizes_file). Duplicates are dropped, first
/// occurrence kept. Throws UsageError naming the bad token (and a file's line).
std::vector<Problem> parse_sizes(std::string_view text);

/// A sizes file: one item of the size list per line (usually MxNxK), '#' starts a comment, blank
/// lines are skipped. UsageError for a file that cannot be read, holds no sizes, or a bad line
/// ("FILE:LINE: ...").
std::vector<Problem> read_sizes_file(const std::string& path);

/// Every problem in every layout of `layouts` ("nn,tn", "all"; empty: as given), with every batch
/// count of `batches` ("1,16"; empty: as given) with packed strides, and in every element type of
/// `dtypes` ("f32,f64", "all"; empty: as given); then stride_a or stride_b 0 where `broadcast` names
/// "a" or "b" (empty: none). Duplicates are dropped, first kept. Throws UsageError naming the bad
/// option value.
std::vector<Problem> expand_problems(const std::vector<Problem>& problems, std::string_view layouts,
                                     std::string_view batches, std::string_view broadcast = {},
                                     std::string_view dtypes = {});

/// The element types of a --dtype value ("f32,i32", "all"), in order, without duplicates;
/// UsageError naming a bad one.
std::vector<DType> parse_dtype_list(std::string_view dtypes);

}  // namespace cmt
