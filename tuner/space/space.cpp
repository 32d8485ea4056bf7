#include "space/space.hpp"

#include <algorithm>
#include <set>
#include <fmt/format.h>

#include "core/error.hpp"

namespace cmt {

namespace {

// Guards against a preset whose grid would take minutes to walk (and gigabytes to hold).
constexpr int64_t k_max_grid_points = int64_t{1} << 24;

std::string template_names(const std::vector<TemplateDesc>& templates) {
  std::string out;
  for (const auto& t : templates) out += (out.empty() ? "" : ", ") + t.name;
  return out.empty() ? "none" : out;
}

/// The preset's template names, each once (a template may have several grids), sorted.
std::string preset_template_names(const Preset& preset) {
  std::set<std::string> names;
  for (const auto& t : preset.templates) names.insert(t.name);
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

/// The value list of each parameter, in declared order: the preset's override or the descriptor's.
std::vector<std::vector<int64_t>> value_lists(const TemplateDesc& desc, const PresetTemplate& entry) {
  std::vector<std::vector<int64_t>> lists;
  for (const ParamDesc& param : desc.params) {
    const auto it = entry.values.find(param.name);
    lists.push_back(it != entry.values.end() ? it->second : param.values);
  }
  return lists;
}

/// Launch shapes and requirements feed straight into kernel launches; a nonsensical one is a descriptor bug.
void check_shape(const TemplateDesc& desc, const ParamValues& values, const LaunchShape& shape, const Requirements& req) {
  auto bad = [&](std::string_view key, int64_t got, std::string_view want) {
    throw UsageError(fmt::format("template '{}' ({}): {} is {} at {}; it must be {} (add a constraint to exclude this point)",
                                 desc.name, desc.descriptor_path.string(), key, got, params_to_string(values), want));
  };
  if (shape.threads < 1) bad("launch.threads", shape.threads, ">= 1");
  if (shape.tile_m < 1) bad("launch.tile_m", shape.tile_m, ">= 1");
  if (shape.tile_n < 1) bad("launch.tile_n", shape.tile_n, ">= 1");
  if (shape.dynamic_smem < 0) bad("launch.dynamic_smem", shape.dynamic_smem, ">= 0");
  if (shape.grid_z < 1 || shape.grid_z > 64) bad("launch.grid_z", shape.grid_z, "1 to 64");
  if (shape.problems_per_block < 1 || shape.problems_per_block > k_max_problems_per_block)
    bad("launch.problems_per_block", shape.problems_per_block, fmt::format("1 to {}", k_max_problems_per_block));
  if (req.align_bytes < 1 || (req.align_bytes & (req.align_bytes - 1)) != 0)
    bad("requires.align_bytes", req.align_bytes, "a power of two");
  if (req.ld_multiple < 1) bad("requires.ld_multiple", req.ld_multiple, ">= 1");
}

/// Walks one template's grid (last parameter fastest), appending valid candidates.
TemplateSpaceStats enumerate_template(const TemplateDesc& desc, const PresetTemplate& entry, const Preset& preset,
                                      const Target& target, std::vector<Candidate>& out) {
  TemplateSpaceStats stats;
  stats.template_name = desc.name;
  for (const Constraint& c : desc.constraints) stats.pruned.push_back({c.reason, 0});

  std::vector<std::vector<int64_t>> lists = value_lists(desc, entry);
  const auto grid_points = [&] {
    int64_t points = 1;
    for (const auto& list : lists) {
      points *= static_cast<int64_t>(list.size());
      if (points > k_max_grid_points)
        throw UsageError(fmt::format("{}:{}: templates.{}: the grid has more than {} points; narrow the value lists",
                                     preset.file.string(), entry.line, desc.name, k_max_grid_points));
    }
    return points;
  };
  const int64_t raw = grid_points();
  stats.raw = raw;
  // The implicit DTYPE takes only the types both the family and the target's problems have; the
  // points of the others are pruned as types not asked for (all of them when none is left).
  const bool typed = desc.dtypes != std::vector<DType>{DType::f32};
  const bool laid_out = desc.layouts != std::vector<std::string>{"nn"};
  std::vector<DType> dtypes;
  for (const DType d : desc.dtypes)
    if (std::find(target.dtypes.begin(), target.dtypes.end(), d) != target.dtypes.end()) dtypes.push_back(d);
  if (dtypes.empty()) {
    stats.pruned.push_back({"an element type that was not asked for", raw});
    return stats;
  }
  for (size_t p = 0; p < desc.params.size(); ++p) {
    if (desc.params[p].name != "DTYPE" || !desc.params[p].implicit) continue;
    std::vector<int64_t> keep;
    for (const int64_t v : lists[p])
      if (std::find(dtypes.begin(), dtypes.end(), static_cast<DType>(v)) != dtypes.end()) keep.push_back(v);
    lists[p] = std::move(keep);
  }
  const int64_t typed_points = grid_points();
  if (typed) stats.pruned.push_back({"an element type that was not asked for", raw - typed_points});
  // The implicit TRANS_A and TRANS_B take only the values of the layouts both the family and the
  // target's problems have; a pair that is neither (tn and nt wanted: tt, nn) is pruned below. Points
  // of layouts not asked for: those the narrowed lists leave out, and those walked below.
  std::vector<std::string> layouts;
  for (const std::string& l : desc.layouts)
    if (std::find(target.layouts.begin(), target.layouts.end(), l) != target.layouts.end()) layouts.push_back(l);
  for (size_t p = 0; p < desc.params.size(); ++p) {
    if (!desc.params[p].implicit || desc.params[p].name == "DTYPE") continue;
    const size_t which = desc.params[p].name == "TRANS_A" ? 0 : 1;
    std::vector<int64_t> keep;
    for (const int64_t v : lists[p])
      if (std::any_of(layouts.begin(), layouts.end(), [&](const std::string& l) { return (l[which] == 't') == (v != 0); }))
        keep.push_back(v);
    lists[p] = std::move(keep);
  }
  int64_t layout_pruned = layouts.empty() ? typed_points : typed_points - grid_points();
  if (layouts.empty()) {  // the family computes none of the layouts asked for
    stats.pruned.push_back({"a layout that was not asked for", layout_pruned});
    return stats;
  }

  walk_grid(desc, lists, [&](const ParamValues& values) {
    if (std::find(layouts.begin(), layouts.end(), desc.layout_of(values)) == layouts.end()) {
      ++layout_pruned;
      return true;
    }
    if (const auto failed = desc.failed_constraint(values, target)) {
      ++stats.pruned[*failed].count;
      return true;
    }
    Candidate cand;
    cand.tmpl = &desc;
    cand.values = values;
    cand.shape = desc.launch_shape(values, target);
    cand.requirements = desc.requirements(values, target);
    check_shape(desc, values, cand.shape, cand.requirements);
    out.push_back(std::move(cand));
    ++stats.valid;
    return true;
  });
  if (laid_out) stats.pruned.push_back({"a layout that was not asked for", layout_pruned});
  return stats;
}

}  // namespace

void walk_grid(const TemplateDesc& desc, const std::vector<std::vector<int64_t>>& lists,
               const std::function<bool(const ParamValues&)>& visit) {
  int64_t points = 1;
  for (const auto& list : lists) points *= static_cast<int64_t>(list.size());
  std::vector<size_t> index(lists.size(), 0);
  ParamValues values;
  for (size_t p = 0; p < lists.size(); ++p) values.emplace_back(desc.params[p].name, 0);
  for (int64_t point = 0; point < points; ++point) {
    for (size_t p = 0; p < lists.size(); ++p) values[p].second = lists[p][index[p]];
    if (!visit(values)) return;
    // Odometer step: the last parameter varies fastest.
    for (size_t p = lists.size(); p-- > 0;) {
      if (++index[p] < lists[p].size()) break;
      index[p] = 0;
    }
  }
}

std::string Candidate::id() const {
  return kernel_label(tmpl ? tmpl->name : std::string("?"), params_to_string(values));
}

std::optional<Candidate> layout_variant(const Candidate& candidate, std::string_view layout, const Target& target) {
  const TemplateDesc& desc = *candidate.tmpl;
  if (desc.layout_of(candidate.values) == layout) return candidate;
  if (!desc.supports_layout(layout)) return std::nullopt;
  Candidate out;
  out.tmpl = &desc;
  out.values = candidate.values;
  for (auto& [name, value] : out.values) {
    if (name == "TRANS_A") value = layout[0] == 't' ? 1 : 0;
    if (name == "TRANS_B") value = layout[1] == 't' ? 1 : 0;
  }
  if (desc.layout_of(out.values) != layout || desc.failed_constraint(out.values, target)) return std::nullopt;
  out.shape = desc.launch_shape(out.values, target);
  out.requirements = desc.requirements(out.values, target);
  check_shape(desc, out.values, out.shape, out.requirements);
  return out;
}

const TemplateDesc* find_template(const std::vector<TemplateDesc>& templates, const std::string& name) {
  for (const auto& t : templates)
    if (t.name == name) return &t;
  return nullptr;
}

void validate_preset(const Preset& preset, const std::vector<TemplateDesc>& templates) {
  const std::string file = preset.file.string();
  // Check in file order, so the error reported is the first one in the file.
  std::vector<const PresetTemplate*> entries;
  for (const auto& entry : preset.templates) entries.push_back(&entry);
  std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) { return a->line < b->line; });
  for (const PresetTemplate* entry : entries) {
    const TemplateDesc* desc = find_template(templates, entry->name);
    if (!desc)
      throw UsageError(fmt::format("{}:{}: templates.{}: unknown template '{}' (known: {})", file, entry->line, entry->name,
                                   entry->name, template_names(templates)));
    std::vector<std::pair<int, std::string>> unknown;   // (line, parameter)
    for (const auto& [param, list] : entry->values) {
      const bool known = std::any_of(desc->params.begin(), desc->params.end(), [&](const ParamDesc& p) { return p.name == param; });
      const auto line = entry->value_lines.find(param);
      if (!known) unknown.emplace_back(line != entry->value_lines.end() ? line->second : entry->line, param);
    }
    if (unknown.empty()) continue;
    std::sort(unknown.begin(), unknown.end());
    std::string names;
    for (const auto& p : desc->params) names += (names.empty() ? "" : ", ") + p.name;
    const auto& [line, param] = unknown.front();
    throw UsageError(fmt::format("{}:{}: templates.{}.{}: unknown parameter '{}' of template '{}' (parameters: {})", file,
                                 line, entry->name, param, param, entry->name, names));
  }
}

void validate_template_choice(const std::vector<TemplateDesc>& templates, const Preset& preset,
                              const std::optional<std::string>& only_template) {
  if (!only_template) return;
  if (!find_template(templates, *only_template))
    throw UsageError(fmt::format("--template: unknown template '{}' (known: {})", *only_template, template_names(templates)));
  const bool in_preset = std::any_of(preset.templates.begin(), preset.templates.end(),
                                     [&](const PresetTemplate& t) { return t.name == *only_template; });
  if (!in_preset)
    throw UsageError(fmt::format("--template: template '{}' is not in preset '{}' ({}; its templates: {})", *only_template,
                                 preset.name, preset.file.string(), preset_template_names(preset)));
}

SearchSpace enumerate_space(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                            const std::optional<std::string>& only_template) {
  validate_preset(preset, templates);
  validate_template_choice(templates, preset, only_template);

  // Preset.templates is sorted by name already; sort a copy of the order anyway, since a caller may
  // have built the preset by hand, and candidate order must not depend on that.
  std::vector<const PresetTemplate*> order;
  for (const auto& entry : preset.templates) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->name < b->name; });

  SearchSpace space;
  for (size_t i = 0; i < order.size();) {
    // A template may have several grids ([[templates.NAME]]): search their union, once each.
    size_t end = i;
    while (end < order.size() && order[end]->name == order[i]->name) ++end;
    if (only_template && order[i]->name != *only_template) {
      i = end;
      continue;
    }
    const TemplateDesc& desc = *find_template(templates, order[i]->name);
    TemplateSpaceStats total;
    std::set<std::string> seen;
    int64_t duplicates = 0;
    for (; i < end; ++i) {
      std::vector<Candidate> grid;
      const TemplateSpaceStats stats = enumerate_template(desc, *order[i], preset, target, grid);
      if (total.template_name.empty()) {
        total = stats;
      } else {
        total.raw += stats.raw;
        for (size_t c = 0; c < stats.pruned.size(); ++c) total.pruned[c].count += stats.pruned[c].count;
      }
      for (auto& cand : grid) {
        if (!seen.insert(params_to_string(cand.values)).second) {
          ++duplicates;
          continue;
        }
        space.candidates.push_back(std::move(cand));
      }
    }
    total.valid = static_cast<int64_t>(seen.size());
    if (duplicates > 0) total.pruned.push_back({"already in an earlier grid of this preset", duplicates});
    space.stats.push_back(std::move(total));
  }
  return space;
}

}  // namespace cmt
