// Rendering of `cm-tune list`: the templates of a preset, their parameters, constraints, launch
// shapes and requirements, and the size of the search space.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "space/preset.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"

namespace cmt {

/// Human-readable listing of every template in space.stats (in that order), then the totals.
std::string render_space_text(const std::vector<TemplateDesc>& templates, const Preset& preset, const SearchSpace& space);
/// The same content as JSON: {"preset": {...}, "templates": [...], "totals": {...}}.
nlohmann::json render_space_json(const std::vector<TemplateDesc>& templates, const Preset& preset, const SearchSpace& space);

/// Every candidate of the space, one line each: id, kernel instantiation, launch shape, requirements.
std::string render_candidates_text(const SearchSpace& space);
/// The same as a JSON array of {"id", "template", "params", "name_expression", "launch", "requires"}.
nlohmann::json render_candidates_json(const SearchSpace& space);

}  // namespace cmt
