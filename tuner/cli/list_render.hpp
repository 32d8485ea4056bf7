// Rendering of `cm-tune list`: the templates of a preset, their parameters, constraints, launch
// shapes and requirements, and the size of the search space.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/target.hpp"
#include "space/template_desc.hpp"

namespace cmt {

/// Human-readable listing of every template in space.stats (in that order), then the totals. The
/// space was enumerated for `target`; `target_note` says where that came from (may be empty).
std::string render_space_text(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                              const std::string& target_note, const SearchSpace& space);
/// The same content as JSON: {"preset": {...}, "target": {...}, "templates": [...], "totals": {...}}.
nlohmann::json render_space_json(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                                 const SearchSpace& space);

/// Every candidate of the space, one line each: id, kernel instantiation, launch shape, requirements.
std::string render_candidates_text(const SearchSpace& space);
/// The same as a JSON array of {"id", "template", "params", "name_expression", "launch", "requires"}.
nlohmann::json render_candidates_json(const SearchSpace& space);

}  // namespace cmt
