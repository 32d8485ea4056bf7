// Enumeration of a preset's search space: the cartesian grid of each template, pruned by constraints.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "space/preset.hpp"
#include "space/target.hpp"
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

/// Visits every point of the grid spanned by one value list per parameter, in odometer order (the
/// last parameter fastest), as (name, value) pairs in the template's order; stops early when visit
/// returns false. Parameters without values span nothing.
void walk_grid(const TemplateDesc& desc, const std::vector<std::vector<int64_t>>& value_lists,
               const std::function<bool(const ParamValues&)>& visit);

/// The same point of a family in another layout ("nn", "nt", "tn", "tt"): its TRANS_A and TRANS_B set
/// to the layout, its launch shape and requirements recomputed for the target. nullopt when the
/// family does not compute the layout or that build fails one of its constraints. The candidate
/// itself when it already computes the layout.
std::optional<Candidate> layout_variant(const Candidate& candidate, std::string_view layout, const Target& target);

/// Finds a template by name; nullptr when absent.
const TemplateDesc* find_template(const std::vector<TemplateDesc>& templates, const std::string& name);

/// Checks the preset against the loaded templates: every template it names exists and every override
/// names a parameter of that template. Errors are UsageError "PRESET:LINE: KEY: message".
void validate_preset(const Preset& preset, const std::vector<TemplateDesc>& templates);

/// Checks --template against the loaded templates and the preset: UsageError if it names an unknown
/// template or one the preset does not search.
void validate_template_choice(const std::vector<TemplateDesc>& templates, const Preset& preset,
                              const std::optional<std::string>& only_template);

/// Enumerates for a target (whose DEVICE_* limits descriptors may use). only_template restricts to
/// one template (UsageError if unknown or not in the preset). A template named by the preset but not
/// loaded is a UsageError naming the preset file.
SearchSpace enumerate_space(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                            const std::optional<std::string>& only_template = std::nullopt);
/// Candidates point into templates, so a temporary vector would leave them dangling.
SearchSpace enumerate_space(std::vector<TemplateDesc>&& templates, const Preset& preset, const Target& target,
                            const std::optional<std::string>& only_template = std::nullopt) = delete;

}  // namespace cmt
