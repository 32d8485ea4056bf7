// What the descriptor and preset readers share: errors as "FILE:LINE: KEY: message", and integer
// value lists.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <vector>

namespace cmt::detail {

/// The line a TOML node starts on.
int line_of(const toml::node& node);

/// The whole file; UsageError "cannot read WHAT 'FILE'" when it cannot be read.
std::string read_text(const std::filesystem::path& file, const std::string& what);

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
