#include "space/toml_reader.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "core/error.hpp"

namespace cmt::detail {

int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& table) {
  std::vector<std::pair<const toml::key*, const toml::node*>> out;
  for (auto&& [key, node] : table) out.emplace_back(&key, &node);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return out;
}

toml::table TomlFileReader::parse(const std::string& text) const {
  try {
    return toml::parse(text, std::string_view(m_display));
  } catch (const toml::parse_error& e) {
    throw UsageError(fmt::format("{}:{}: TOML syntax error at column {}: {}", m_display, e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }
}

void TomlFileReader::fail(int line, std::string_view key, const std::string& message) const {
  throw UsageError(fmt::format("{}:{}: {}: {}", m_display, line, key, message));
}

std::vector<int64_t> TomlFileReader::value_list(const toml::node& node, const std::string& key) const {
  const toml::array* array = node.as_array();
  if (!array) fail(line_of(node), key, "must be an array of non-negative integers");
  if (array->empty()) fail(line_of(node), key, "values must not be empty");
  std::vector<int64_t> values;
  for (const toml::node& item : *array) {
    if (!item.is_integer() || item.as_integer()->get() < 0) fail(line_of(item), key, "values must be non-negative integers");
    const int64_t v = item.as_integer()->get();
    // Values become C++ `int` template arguments.
    if (v > std::numeric_limits<int>::max()) fail(line_of(item), key, fmt::format("value {} does not fit an int", v));
    if (std::find(values.begin(), values.end(), v) != values.end())
      fail(line_of(item), key, fmt::format("value {} appears twice", v));
    values.push_back(v);
  }
  return values;
}

}  // namespace cmt::detail
