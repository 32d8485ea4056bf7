// Rendering of `cm-tune list`: the templates of a preset, their parameters, constraints, launch
// shapes and requirements, and the size of the search space.
#pragma once

#include <string>
#include <vector>

#include "output/table.hpp"
#include "output/value.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/target.hpp"
#include "space/template_desc.hpp"

namespace cmt {

/// Human-readable listing of every template in space.stats (in that order), then the totals. The
/// space was enumerated for `target`; `target_note` says where that came from (may be empty).
std::string render_space_text(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                              const std::string& target_note, const SearchSpace& space);
/// The same content as a record (`list --json`): {"preset": {...}, "target": {...}, "templates": [...],
/// "totals": {...}, "not_in_preset": [...]}.
output::Record space_record(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                            const SearchSpace& space);

/// Every candidate of the space, a row each: id, kernel instantiation, launch shape, requirements
/// (text: one line each; JSON: {"id", "template", "params", "name_expression", "launch", "requires"}).
output::Table candidate_table(const SearchSpace& space);

}  // namespace cmt
