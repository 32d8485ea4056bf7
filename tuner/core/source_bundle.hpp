// A kernel template's source with every file it includes: what NVRTC compiles, what the compile
// cache hashes, and what `cm-tune export` pastes into a header. Only quoted includes of files in
// the template's own folder are followed (NVRTC has no standard library, and an exported header
// must be self-contained).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmt {

struct SourceBundle {
  std::string main_name;                                     // e.g. "blocktile2d.cuh"
  std::string main_text;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text), sorted by name
};

/// The file named by `#include "name"` on this line, or nullopt when the line is no quoted include.
std::optional<std::string> quoted_include(std::string_view line);

/// Reads `main_file` and, recursively, every file it includes with a quoted include, from the same
/// folder. UsageError "FILE:LINE: #include ..." for an include outside the folder or a missing file.
/// `what` names the main file in the error when it cannot be read.
SourceBundle load_source_bundle(const std::filesystem::path& main_file, const std::string& what);

/// Hash of a bundle: the main file and every include, each name and text delimited. A binary's
/// compile-cache key and the sources table of the database both use it.
std::string source_bundle_hash(const SourceBundle& bundle);

/// A bundle as one text: each `#include "x"` replaced by x's text (first occurrence only,
/// recursively, in include order) and `#pragma once` dropped. UsageError for an angle include or an
/// include that is not part of the bundle.
std::string flatten_source(const SourceBundle& bundle);

}  // namespace cmt
