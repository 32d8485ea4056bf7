// Enumeration of a preset's search space: the cartesian grid of each template, pruned by constraints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "space/preset.hpp"
#include "space/template_desc.hpp"

namespace cmt {

/// One point of the search space.
struct Candidate {
  const TemplateDesc* tmpl = nullptr;
  ParamValues values;            // template-argument order
  LaunchShape shape;
  Requirements requirements;

  /// "blocktile2d[BM=128,BN=64,...]": stable, human-readable.
  std::string id() const;
};

struct PruneCount {
  std::string reason;
  int64_t count = 0;
};

/// Per-template counts. Each pruned point counts under the first constraint it fails.
struct TemplateSpaceStats {
  std::string template_name;
  int64_t raw = 0;
  int64_t valid = 0;
  std::vector<PruneCount> pruned;   // in constraint order; zero counts kept
};

struct SearchSpace {
  std::vector<Candidate> candidates;          // deterministic order: template name, then grid order
  std::vector<TemplateSpaceStats> stats;
};

/// Finds a template by name; nullptr when absent.
const TemplateDesc* find_template(const std::vector<TemplateDesc>& templates, const std::string& name);

/// Checks the preset against the loaded templates: every template it names exists and every override
/// names a parameter of that template. Errors are UsageError "PRESET:LINE: KEY: message".
void validate_preset(const Preset& preset, const std::vector<TemplateDesc>& templates);

/// Enumerates. only_template restricts to one template (UsageError if unknown or not in the preset).
/// A template named by the preset but not loaded is a UsageError naming the preset file.
SearchSpace enumerate_space(const std::vector<TemplateDesc>& templates, const Preset& preset,
                            const std::optional<std::string>& only_template = std::nullopt);
/// Candidates point into templates, so a temporary vector would leave them dangling.
SearchSpace enumerate_space(std::vector<TemplateDesc>&& templates, const Preset& preset,
                            const std::optional<std::string>& only_template = std::nullopt) = delete;

}  // namespace cmt
