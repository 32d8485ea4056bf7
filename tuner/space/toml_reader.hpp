// What the descriptor and preset readers share: errors as "FILE:LINE: KEY: message", and integer
// value lists.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <toml++/toml.h>
#include <vector>

namespace cmt::detail {

/// The line a TOML node starts on.
int line_of(const toml::node& node);

/// Entries of a table in the order they appear in the file (toml++ keeps tables sorted by key), so
/// that the first error reported is the first one in the file and declared order is kept.
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& table);

/// "a, b, c".
template <size_t N>
std::string join_keys(const std::string_view (&keys)[N]) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

class TomlFileReader {
 public:
  explicit TomlFileReader(std::string display) : m_display(std::move(display)) {}

 protected:
  /// Parses the file's text; a syntax error is UsageError "FILE:LINE: TOML syntax error at column C: ...".
  toml::table parse(const std::string& text) const;
  /// Throws UsageError "FILE:LINE: KEY: message".
  [[noreturn]] void fail(int line, std::string_view key, const std::string& message) const;
  /// A non-empty array of distinct non-negative integers that fit a C++ int (template arguments).
  std::vector<int64_t> value_list(const toml::node& node, const std::string& key) const;

  std::string m_display;  // the file as named in messages
};

}  // namespace cmt::detail
