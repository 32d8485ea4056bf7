#include "space/template_desc.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "core/error.hpp"
#include "space/toml_reader.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

using detail::line_of;
using detail::read_text;

constexpr std::string_view k_top_keys[] = {"name", "kernel", "summary", "param", "launch", "requires", "constraint"};
constexpr std::string_view k_param_keys[] = {"name", "values", "help"};
constexpr std::string_view k_launch_keys[] = {"threads", "tile_m", "tile_n", "dynamic_smem", "grid_z"};
constexpr std::string_view k_requires_keys[] = {"align_bytes", "ld_multiple"};
constexpr std::string_view k_constraint_keys[] = {"check", "reason"};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

template <size_t N>
std::string join_keys(const std::string_view (&keys)[N]) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}


/// Reads one descriptor; every error is "FILE:LINE: KEY: message".
class DescriptorReader : public detail::TomlFileReader {
 public:
  explicit DescriptorReader(const fs::path& file) : TomlFileReader(file.string()), m_file(file) {}

  TemplateDesc read() {
    const toml::table root = parse(read_text(m_file, "template descriptor"));
    check_keys(root, "", k_top_keys);

    TemplateDesc desc;
    desc.descriptor_path = m_file;
    desc.name = required_string(root, "name", "");
    desc.kernel = required_string(root, "kernel", "");
    desc.summary = required_string(root, "summary", "");
    const std::string stem = m_file.stem().string();
    if (desc.name != stem)
      fail(line_of(*root.get("name")), "name", fmt::format("'{}' must equal the file's stem '{}'", desc.name, stem));
    if (!is_identifier(desc.kernel))
      fail(line_of(*root.get("kernel")), "kernel", fmt::format("'{}' is not a C++ identifier", desc.kernel));

    read_params(root, desc);
    read_constraints(root, desc);

    const toml::table* launch = required_table(root, "launch");
    check_keys(*launch, "launch", k_launch_keys);
    desc.threads = expression(*launch, "launch", "threads", std::nullopt, desc);
    desc.tile_m = expression(*launch, "launch", "tile_m", std::nullopt, desc);
    desc.tile_n = expression(*launch, "launch", "tile_n", std::nullopt, desc);
    desc.dynamic_smem = expression(*launch, "launch", "dynamic_smem", "0", desc);
    desc.grid_z = expression(*launch, "launch", "grid_z", "1", desc);

    // [requires] is optional: its absence means plain 4-byte alignment and any leading dimension.
    static const toml::table k_empty;
    const toml::table* req = &k_empty;
    if (const toml::node* node = root.get("requires")) {
      req = node->as_table();
      if (!req) fail(line_of(*node), "requires", "must be a table");
      check_keys(*req, "requires", k_requires_keys);
    }
    desc.align_bytes = expression(*req, "requires", "align_bytes", "4", desc);
    desc.ld_multiple = expression(*req, "requires", "ld_multiple", "1", desc);

    desc.source_path = m_file.parent_path() / (stem + ".cuh");
    if (!fs::is_regular_file(desc.source_path))
      throw UsageError(fmt::format("{}: the kernel source '{}' is missing (it must sit beside the descriptor)", m_display,
                                   desc.source_path.string()));
    return desc;
  }

 private:

  static std::string path_of(std::string_view table_key, std::string_view key) {
    return table_key.empty() ? std::string(key) : fmt::format("{}.{}", table_key, key);
  }

  template <size_t N>
  void check_keys(const toml::table& table, std::string_view table_key, const std::string_view (&known)[N]) const {
    for (auto&& [key, node] : table) {
      if (std::find(std::begin(known), std::end(known), key.str()) == std::end(known))
        fail(static_cast<int>(key.source().begin.line), path_of(table_key, key.str()),
             fmt::format("unknown key (known: {})", join_keys(known)));
    }
  }

  std::string required_string(const toml::table& table, std::string_view key, std::string_view table_key) const {
    const toml::node* node = table.get(key);
    if (!node) fail(line_of(table), path_of(table_key, key), "required key is missing");
    if (!node->is_string()) fail(line_of(*node), path_of(table_key, key), "must be a string");
    return node->as_string()->get();
  }

  const toml::table* required_table(const toml::table& root, std::string_view key) const {
    const toml::node* node = root.get(key);
    if (!node) fail(1, key, fmt::format("required table [{}] is missing", key));
    if (!node->is_table()) fail(line_of(*node), key, "must be a table");
    return node->as_table();
  }

  /// Parses an expression key, checking that it names only parameters of desc.
  Expr expression(const toml::table& table, std::string_view table_key, std::string_view key,
                  std::optional<std::string_view> fallback, const TemplateDesc& desc) const {
    const std::string key_path = path_of(table_key, key);
    const toml::node* node = table.get(key);
    if (!node && !fallback) fail(line_of(table), key_path, "required key is missing");
    int line = node ? line_of(*node) : line_of(table);
    std::string text;
    if (!node) {
      text = std::string(*fallback);
    } else if (node->is_string()) {
      text = node->as_string()->get();
    } else if (node->is_integer()) {
      // A bare integer is a constant expression; accepting it saves quoting "0".
      text = std::to_string(node->as_integer()->get());
    } else {
      fail(line, key_path, "must be a string holding an expression");
    }
    Expr expr;
    try {
      expr = Expr::parse(text);
    } catch (const UsageError& e) {
      fail(line, key_path, e.what());
    }
    for (const std::string& ident : expr.identifiers()) {
      const bool known = std::any_of(desc.params.begin(), desc.params.end(), [&](const ParamDesc& p) { return p.name == ident; });
      if (!known) {
        std::vector<std::string> names;
        for (const auto& p : desc.params) names.push_back(p.name);
        fail(line, key_path, fmt::format("'{}' names unknown parameter '{}' (parameters: {})", text, ident, join(names)));
      }
    }
    return expr;
  }


  /// Each element of an array of tables, with its index, as "KEY[i]".
  std::vector<std::pair<std::string, const toml::table*>> table_array(const toml::table& root, std::string_view key) const {
    std::vector<std::pair<std::string, const toml::table*>> out;
    const toml::node* node = root.get(key);
    if (!node) return out;
    const toml::array* array = node->as_array();
    if (!array) fail(line_of(*node), key, fmt::format("must be an array of tables ([[{}]])", key));
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      const std::string item_key = fmt::format("{}[{}]", key, i);
      if (!item.is_table()) fail(line_of(item), item_key, "must be a table");
      out.emplace_back(item_key, item.as_table());
    }
    return out;
  }

  void read_params(const toml::table& root, TemplateDesc& desc) const {
    const auto tables = table_array(root, "param");
    if (tables.empty()) fail(1, "param", "a template needs at least one [[param]]");
    for (const auto& [key, table] : tables) {
      check_keys(*table, key, k_param_keys);
      ParamDesc param;
      param.name = required_string(*table, "name", key);
      if (!is_identifier(param.name))
        fail(line_of(*table->get("name")), key + ".name", fmt::format("'{}' is not a C++ identifier", param.name));
      for (const auto& other : desc.params)
        if (other.name == param.name) fail(line_of(*table->get("name")), key + ".name", fmt::format("parameter '{}' is declared twice", param.name));
      const toml::node* values = table->get("values");
      if (!values) fail(line_of(*table), key + ".values", "required key is missing");
      param.values = value_list(*values, key + ".values");
      if (table->get("help")) param.help = required_string(*table, "help", key);
      desc.params.push_back(std::move(param));
    }
  }

  void read_constraints(const toml::table& root, TemplateDesc& desc) const {
    for (const auto& [key, table] : table_array(root, "constraint")) {
      check_keys(*table, key, k_constraint_keys);
      Constraint constraint;
      constraint.check = expression(*table, key, "check", std::nullopt, desc);
      constraint.reason = required_string(*table, "reason", key);
      desc.constraints.push_back(std::move(constraint));
    }
  }

  fs::path m_file;
};

/// Parses `#include "name"` from one line; nullopt when the line is not a quoted include.
std::optional<std::string> quoted_include(std::string_view line) {
  size_t i = 0;
  auto skip = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  skip();
  if (i >= line.size() || line[i] != '#') return std::nullopt;
  ++i;
  skip();
  if (line.substr(i, 7) != "include") return std::nullopt;
  i += 7;
  skip();
  if (i >= line.size() || line[i] != '"') return std::nullopt;
  const size_t close = line.find('"', i + 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::string(line.substr(i + 1, close - i - 1));
}

int64_t eval_field(const TemplateDesc& desc, const Expr& expr, std::string_view key, const ParamValues& values) {
  try {
    return expr.eval(values);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("template '{}' ({}): {} at {}: {}", desc.name, desc.descriptor_path.string(), key,
                                 params_to_string(values), e.what()));
  }
}

}  // namespace

LaunchShape TemplateDesc::launch_shape(const ParamValues& values) const {
  LaunchShape shape;
  shape.threads = eval_field(*this, threads, "launch.threads", values);
  shape.tile_m = eval_field(*this, tile_m, "launch.tile_m", values);
  shape.tile_n = eval_field(*this, tile_n, "launch.tile_n", values);
  shape.dynamic_smem = eval_field(*this, dynamic_smem, "launch.dynamic_smem", values);
  shape.grid_z = eval_field(*this, grid_z, "launch.grid_z", values);
  return shape;
}

Requirements TemplateDesc::requirements(const ParamValues& values) const {
  Requirements req;
  req.align_bytes = eval_field(*this, align_bytes, "requires.align_bytes", values);
  req.ld_multiple = eval_field(*this, ld_multiple, "requires.ld_multiple", values);
  return req;
}

std::string TemplateDesc::name_expression(const ParamValues& values) const {
  std::string args;
  for (const auto& [name, value] : values) args += fmt::format("{}{}", args.empty() ? "" : ", ", value);
  return fmt::format("{}<{}>", kernel, args);
}

SourceBundle TemplateDesc::load_source() const {
  SourceBundle bundle;
  bundle.main_name = source_path.filename().string();
  bundle.main_text = read_text(source_path, fmt::format("source of template '{}'", name));
  const fs::path folder = source_path.parent_path();
  std::map<std::string, std::string> headers;   // sorted by name, each once

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
      const std::string header_text = read_text(path, "included file");
      headers.emplace(*include, header_text);
      scan(path.string(), header_text);
    }
  };
  scan(source_path.string(), bundle.main_text);
  bundle.headers.assign(headers.begin(), headers.end());
  return bundle;
}

TemplateDesc load_template(const fs::path& descriptor) { return DescriptorReader(descriptor).read(); }

std::vector<TemplateDesc> load_templates(const std::vector<fs::path>& folders) {
  std::vector<TemplateDesc> out;
  for (const fs::path& folder : folders) {
    if (!fs::is_directory(folder)) throw UsageError(fmt::format("templates folder '{}' does not exist", folder.string()));
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) out.push_back(load_template(file));
  }
  std::stable_sort(out.begin(), out.end(), [](const TemplateDesc& a, const TemplateDesc& b) { return a.name < b.name; });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].name == out[i - 1].name)
      throw UsageError(fmt::format("template '{}' is defined twice: {} and {}", out[i].name,
                                   out[i - 1].descriptor_path.string(), out[i].descriptor_path.string()));
  }
  return out;
}

fs::path default_templates_dir() {
  if (const char* env = std::getenv("CMTUNE_TEMPLATES"); env && *env) return fs::path(env);
  return fs::path(CMTUNE_SOURCE_DIR "/templates");
}

}  // namespace cmt
