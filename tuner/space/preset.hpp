// Search-space presets: configs/*.toml.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tune_settings.hpp"
#include "core/types.hpp"

namespace cmt {

struct PresetTemplate {
  std::string name;                                     // template name
  std::map<std::string, std::vector<int64_t>> values;   // overrides of the descriptor's values
  int line = 0;                                         // line of [templates.NAME] in the preset file
  std::map<std::string, int> value_lines{};             // line of each override, for messages
};

struct Preset {
  std::filesystem::path file;
  std::string name;
  std::string description;
  std::vector<PresetTemplate> templates;   // sorted by template name
  TuneSettings tune;
  std::string content_hash;                // hash of the file's bytes
};

/// Parses a preset. Errors are UsageError "FILE:LINE: KEY: message".
Preset load_preset(const std::filesystem::path& file);
/// The folder of the built-in presets: $CMTUNE_CONFIGS, else the source tree's configs/.
std::filesystem::path default_configs_dir();
/// Resolves --config: a path, or a bare preset name such as "quick" in the configs folder.
std::filesystem::path resolve_preset(const std::string& name_or_path);

}  // namespace cmt
