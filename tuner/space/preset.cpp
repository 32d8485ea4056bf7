#include "space/preset.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <system_error>
#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "space/toml_reader.hpp"
#include "core/hash.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

using detail::in_file_order;
using detail::join_keys;
using detail::line_of;

constexpr std::string_view k_preset_keys[] = {"name", "description", "tune", "templates"};

/// Reads one preset file; every error is "FILE:LINE: KEY: message".
class PresetReader : public detail::TomlFileReader {
 public:
  explicit PresetReader(const fs::path& file) : TomlFileReader(file.string()), m_file(file) {}

  Preset read() {
    const std::string text = read_text_file(m_file, "preset");
    const toml::table root = parse(text);

    Preset preset;
    preset.file = m_file;
    preset.content_hash = hash_hex(text);
    preset.name = m_file.stem().string();   // a preset without a name is called after its file

    for (const auto& [key, node] : in_file_order(root)) {
      const std::string k(key->str());
      if (k == "name") {
        preset.name = string_value(*node, k);
        if (preset.name.empty()) fail(line_of(*node), k, "must not be empty");
      } else if (k == "description") {
        preset.description = string_value(*node, k);
      } else if (k == "tune") {
        preset.tune = read_tune(*node);
      } else if (k == "templates") {
        preset.templates = read_templates(*node);
      } else {
        fail(static_cast<int>(key->source().begin.line), k, fmt::format("unknown key (known: {})", join_keys(k_preset_keys)));
      }
    }
    if (!root.get("templates")) fail(1, "templates", "required table [templates.NAME] is missing: the preset names no template");
    return preset;
  }

 private:

  std::string string_value(const toml::node& node, std::string_view key) const {
    if (!node.is_string()) fail(line_of(node), key, "must be a string");
    return node.as_string()->get();
  }

  int int_value(const toml::node& node, const std::string& key, int lo) const {
    if (!node.is_integer()) fail(line_of(node), key, "must be an integer");
    const int64_t v = node.as_integer()->get();
    if (v < lo || v > std::numeric_limits<int>::max())
      fail(line_of(node), key, fmt::format("must be an integer >= {}, got {}", lo, v));
    return static_cast<int>(v);
  }

  double double_value(const toml::node& node, const std::string& key, double lo, bool inclusive) const {
    if (!node.is_number()) fail(line_of(node), key, "must be a number");
    const double v = node.value<double>().value_or(0.0);
    if (!(inclusive ? v >= lo : v > lo)) fail(line_of(node), key, fmt::format("must be {} {}, got {}", inclusive ? ">=" : ">", lo, v));
    return v;
  }

  TuneSettings read_tune(const toml::node& node) const {
    const toml::table* table = node.as_table();
    if (!table) fail(line_of(node), "tune", "must be a table");
    TuneSettings tune;
    for (const auto& [key_ptr, value_ptr] : in_file_order(*table)) {
      const std::string k(key_ptr->str());
      const toml::node& v = *value_ptr;
      const std::string key = "tune." + k;
      if (k == "budget_ms") {
        tune.budget_ms = double_value(v, key, 0.0, false);
      } else if (k == "min_samples") {
        tune.min_samples = int_value(v, key, 1);
      } else if (k == "max_samples") {
        tune.max_samples = int_value(v, key, 1);
      } else if (k == "warmup") {
        tune.warmup = int_value(v, key, 0);
      } else if (k == "retime_top") {
        tune.retime_top = int_value(v, key, 0);
      } else if (k == "retime_rounds") {
        tune.retime_rounds = int_value(v, key, 0);
      } else if (k == "abandon_factor") {
        tune.abandon_factor = double_value(v, key, 1.0, true);
      } else if (k == "allow_spills") {
        if (!v.is_boolean()) fail(line_of(v), key, "must be true or false");
        tune.allow_spills = v.as_boolean()->get();
      } else {
        fail(static_cast<int>(key_ptr->source().begin.line), key,
             "unknown key (known: budget_ms, min_samples, max_samples, warmup, retime_top, retime_rounds, abandon_factor, "
             "allow_spills)");
      }
    }
    if (tune.max_samples < tune.min_samples) {
      const toml::node* at = table->get("max_samples") ? table->get("max_samples") : table->get("min_samples");
      fail(line_of(*at), "tune.max_samples",
           fmt::format("max_samples ({}) must be >= min_samples ({})", tune.max_samples, tune.min_samples));
    }
    return tune;
  }


  std::vector<PresetTemplate> read_templates(const toml::node& node) const {
    const toml::table* table = node.as_table();
    if (!table) fail(line_of(node), "templates", "must be a table of [templates.NAME] tables");
    if (table->empty()) fail(line_of(node), "templates", "the preset names no template");
    std::vector<PresetTemplate> out;
    for (const auto& [key_ptr, value_ptr] : in_file_order(*table)) {
      const std::string key = fmt::format("templates.{}", key_ptr->str());
      // [templates.NAME] is one grid; [[templates.NAME]] repeated gives several grids whose union is searched.
      std::vector<const toml::table*> grids;
      if (const toml::array* array = value_ptr->as_array()) {
        for (const toml::node& item : *array) {
          if (!item.as_table()) fail(line_of(item), key, "must be a table of parameter value lists");
          grids.push_back(item.as_table());
        }
        if (grids.empty()) fail(line_of(*value_ptr), key, "names no grid");
      } else if (const toml::table* params = value_ptr->as_table()) {
        grids.push_back(params);
      } else {
        fail(line_of(*value_ptr), key, "must be a table of parameter value lists");
      }
      for (const toml::table* params : grids) {
        PresetTemplate entry;
        entry.name = std::string(key_ptr->str());
        entry.line = grids.size() > 1 || value_ptr->as_array() ? line_of(*params) : static_cast<int>(key_ptr->source().begin.line);
        for (const auto& [param_key, values] : in_file_order(*params)) {
          const std::string param(param_key->str());
          entry.values[param] = value_list(*values, key + "." + param);
          entry.value_lines[param] = static_cast<int>(param_key->source().begin.line);
        }
        out.push_back(std::move(entry));
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const PresetTemplate& a, const PresetTemplate& b) { return a.name < b.name; });
    return out;
  }

  fs::path m_file;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Preset load_preset(const fs::path& file) { return PresetReader(file).read(); }

fs::path default_configs_dir() {
  if (const char* env = std::getenv("CMTUNE_CONFIGS"); env && *env) return fs::path(env);
  return fs::path(CMTUNE_SOURCE_DIR "/configs");
}

fs::path resolve_preset(const std::string& name_or_path) {
  if (name_or_path.empty()) throw UsageError("--config: the preset name is empty");
  const auto folder = [&] { return UsageError(fmt::format("--config {} is a folder, not a preset file", name_or_path)); };
  std::error_code ec;
  const bool is_path = name_or_path.find('/') != std::string::npos || ends_with(name_or_path, ".toml");
  if (is_path) {
    // Anything else is read as it is: a pipe (--config <(...)) is a preset too, and a file that cannot
    // be read says why when it is read.
    const fs::file_status status = fs::status(name_or_path, ec);
    if (fs::is_directory(status)) throw folder();
    if (status.type() == fs::file_type::not_found)
      throw UsageError(fmt::format("--config: preset file '{}' does not exist", name_or_path));
    return fs::path(name_or_path);
  }
  const fs::path dir = default_configs_dir();
  const fs::path file = dir / (name_or_path + ".toml");
  if (fs::is_regular_file(file, ec)) return file;
  if (fs::is_directory(name_or_path, ec)) throw folder();   // --config configs
  // Say which presets do exist, so a typo is easy to fix.
  std::vector<std::string> known;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".toml") known.push_back(it->path().stem().string());
  std::sort(known.begin(), known.end());
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw UsageError(fmt::format("--config: unknown preset '{}': no file {} (available: {})", name_or_path, file.string(),
                               list.empty() ? "none" : list));
}

}  // namespace cmt
