#include "core/source_bundle.hpp"

#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/// The rest of a preprocessor line after `#` and `directive` (spaces allowed around `#`), or
/// nullopt when the line is another one.
std::optional<std::string_view> directive_rest(std::string_view line, std::string_view directive) {
  size_t i = 0;
  const auto skip = [&] {
    while (i < line.size() && is_blank(line[i])) ++i;
  };
  skip();
  if (i >= line.size() || line[i] != '#') return std::nullopt;
  ++i;
  skip();
  if (line.substr(i, directive.size()) != directive) return std::nullopt;
  i += directive.size();
  const size_t after = i;
  skip();
  if (i == after && i < line.size() && line[i] != '"' && line[i] != '<') return std::nullopt;  // e.g. #includes
  return line.substr(i);
}

bool is_angle_include(std::string_view line) {
  const auto rest = directive_rest(line, "include");
  return rest && !rest->empty() && rest->front() == '<';
}

bool is_pragma_once(std::string_view line) {
  auto rest = directive_rest(line, "pragma");
  if (!rest) return false;
  if (rest->substr(0, 4) != "once") return false;
  rest->remove_prefix(4);
  while (!rest->empty() && is_blank(rest->front())) rest->remove_prefix(1);
  return rest->empty() || rest->substr(0, 2) == "//";
}

}  // namespace

std::optional<std::string> quoted_include(std::string_view line) {
  const auto rest = directive_rest(line, "include");
  if (!rest || rest->empty() || rest->front() != '"') return std::nullopt;
  const size_t close = rest->find('"', 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::string(rest->substr(1, close - 1));
}

SourceBundle load_source_bundle(const fs::path& main_file, const std::string& what) {
  SourceBundle bundle;
  bundle.main_name = main_file.filename().string();
  bundle.main_text = read_text_file(main_file, what);
  const fs::path folder = main_file.parent_path();
  std::map<std::string, std::string> headers;  // sorted by name, each once

  // Depth-first over quoted includes; a header is recorded before its own includes are read, so
  // include cycles (guarded by #pragma once in the sources) terminate.
  std::function<void(const std::string&, const std::string&)> scan = [&](const std::string& file, const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      const std::optional<std::string> include = quoted_include(line);
      if (!include || *include == bundle.main_name || headers.count(*include)) continue;
      if (include->find('/') != std::string::npos || include->find('\\') != std::string::npos)
        throw UsageError(fmt::format("{}:{}: #include \"{}\": only files in the template folder may be included", file,
                                     number, *include));
      const fs::path path = folder / *include;
      if (!fs::is_regular_file(path))
        throw UsageError(fmt::format("{}:{}: #include \"{}\": no such file in {}", file, number, *include, folder.string()));
      const std::string header_text = read_text_file(path, "included file");
      headers.emplace(*include, header_text);
      scan(path.string(), header_text);
    }
  };
  scan(main_file.string(), bundle.main_text);
  bundle.headers.assign(headers.begin(), headers.end());
  return bundle;
}

std::string source_bundle_hash(const SourceBundle& bundle) {
  Hasher h;
  h.field("cm-tune-source-v1").field(bundle.main_name).field(bundle.main_text);
  h.field(static_cast<int64_t>(bundle.headers.size()));
  for (const auto& [name, text] : bundle.headers) h.field(name).field(text);
  return h.hex();
}

std::string flatten_source(const SourceBundle& bundle) {
  const std::map<std::string, std::string> by_name(bundle.headers.begin(), bundle.headers.end());
  std::set<std::string> included{bundle.main_name};
  std::string out;
  std::function<void(const std::string&, const std::string&)> paste = [&](const std::string& file, const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      if (is_pragma_once(line)) continue;
      if (is_angle_include(line))
        throw UsageError(fmt::format("{}:{}: {}: exported headers only support quoted includes of template files", file,
                                     number, line));
      if (const auto include = quoted_include(line)) {
        if (!included.insert(*include).second) continue;  // first occurrence only
        const auto it = by_name.find(*include);
        if (it == by_name.end())
          throw UsageError(fmt::format("{}:{}: #include \"{}\": not part of the stored source bundle", file, number, *include));
        out += fmt::format("// ---- begin {} (included by {}) ----\n", *include, file);
        paste(*include, it->second);
        out += fmt::format("// ---- end {} ----\n", *include);
        continue;
      }
      out += line;
      out += '\n';
    }
  };
  paste(bundle.main_name, bundle.main_text);
  return out;
}

}  // namespace cmt
