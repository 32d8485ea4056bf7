#include "cli/list_render.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cmt {

namespace {

std::string join_values(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += fmt::format("{}{}", out.empty() ? "" : ", ", v);
  return out;
}

const PresetTemplate* find_entry(const Preset& preset, const std::string& name) {
  for (const auto& entry : preset.templates)
    if (entry.name == name) return &entry;
  return nullptr;
}

/// The values the preset searches for one parameter: its override, else the descriptor's.
const std::vector<int64_t>& used_values(const ParamDesc& param, const PresetTemplate* entry) {
  if (entry) {
    const auto it = entry->values.find(param.name);
    if (it != entry->values.end()) return it->second;
  }
  return param.values;
}

int64_t pruned_total(const TemplateSpaceStats& stats) {
  int64_t total = 0;
  for (const auto& p : stats.pruned) total += p.count;
  return total;
}

struct Totals {
  int64_t raw = 0;
  int64_t valid = 0;
  int64_t pruned = 0;
  std::vector<PruneCount> by_reason;   // summed over templates by reason text, first appearance first
};

Totals totals_of(const SearchSpace& space) {
  Totals totals;
  for (const auto& stats : space.stats) {
    totals.raw += stats.raw;
    totals.valid += stats.valid;
    for (const auto& p : stats.pruned) {
      totals.pruned += p.count;
      auto it = std::find_if(totals.by_reason.begin(), totals.by_reason.end(),
                             [&](const PruneCount& q) { return q.reason == p.reason; });
      if (it == totals.by_reason.end()) {
        totals.by_reason.push_back(p);
      } else {
        it->count += p.count;
      }
    }
  }
  return totals;
}

/// Loaded templates the preset does not search.
std::vector<std::string> not_in_preset(const std::vector<TemplateDesc>& templates, const Preset& preset) {
  std::vector<std::string> out;
  for (const auto& t : templates)
    if (!find_entry(preset, t.name)) out.push_back(t.name);
  return out;
}

std::string format_tune(const TuneSettings& t) {
  return fmt::format("budget_ms={} min_samples={} max_samples={} warmup={} retime_top={} retime_rounds={} abandon_factor={}",
                     t.budget_ms, t.min_samples, t.max_samples, t.warmup, t.retime_top, t.retime_rounds, t.abandon_factor);
}

void render_template_text(std::string& out, const TemplateDesc& desc, const PresetTemplate* entry,
                          const TemplateSpaceStats& stats) {
  out += fmt::format("\ntemplate {}: {}\n", desc.name, desc.summary);
  out += fmt::format("  kernel      {}\n", desc.kernel);
  out += fmt::format("  descriptor  {}\n", desc.descriptor_path.string());
  out += fmt::format("  source      {}\n", desc.source_path.string());
  std::vector<std::string_view> types;
  for (const DType d : desc.dtypes) types.push_back(dtype_name(d));
  out += fmt::format("  operands    layouts {}; {}; types {}\n", fmt::join(desc.layouts, ", "),
                     desc.takes_batch_count() ? "strided-batched (several problems per block on grid z)"
                     : desc.batched           ? "strided-batched (batch on grid z)"
                                              : "not batched (batch 1 only)",
                     fmt::join(types, ", "));

  // Parameters as aligned columns: name, values searched, descriptor defaults when overridden, help.
  size_t name_w = 0;
  size_t values_w = 0;
  size_t default_w = 0;
  std::vector<std::string> defaults;
  for (const ParamDesc& p : desc.params) {
    const std::vector<int64_t>& used = used_values(p, entry);
    defaults.push_back(used == p.values ? "" : fmt::format("(descriptor: {})", join_values(p.values)));
    name_w = std::max(name_w, p.name.size());
    values_w = std::max(values_w, join_values(used).size());
    default_w = std::max(default_w, defaults.back().size());
  }
  out += "  parameters:\n";
  for (size_t i = 0; i < desc.params.size(); ++i) {
    const ParamDesc& p = desc.params[i];
    std::string line = fmt::format("    {:<{}}  {:<{}}", p.name, name_w, join_values(used_values(p, entry)), values_w);
    if (default_w > 0) line += fmt::format("  {:<{}}", defaults[i], default_w);
    if (!p.help.empty()) line += "  " + p.help;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }

  if (!desc.derived.empty()) {
    size_t name_w = 0;
    for (const auto& d : desc.derived) name_w = std::max(name_w, d.name.size());
    out += "  derived:\n";
    for (const auto& d : desc.derived) out += fmt::format("    {:<{}}  {}\n", d.name, name_w, d.expr.text());
  }
  for (const auto& include : desc.includes) out += fmt::format("  includes    {}\n", include.string());
  if (desc.constraints.empty()) {
    out += "  constraints: none\n";
  } else {
    size_t check_w = 0;
    for (const auto& c : desc.constraints) check_w = std::max(check_w, c.check.text().size());
    out += "  constraints:\n";
    for (const auto& c : desc.constraints) out += fmt::format("    {:<{}}  {}\n", c.check.text(), check_w, c.reason);
  }

  out += "  launch:\n";
  out += fmt::format("    threads       {}\n", desc.threads.text());
  out += fmt::format("    tile_m        {}\n", desc.tile_m.text());
  out += fmt::format("    tile_n        {}\n", desc.tile_n.text());
  out += fmt::format("    dynamic_smem  {}\n", desc.dynamic_smem.text());
  out += fmt::format("    grid_z        {}\n", desc.grid_z.text());
  if (desc.problems_per_block) out += fmt::format("    problems_per_block  {}\n", desc.problems_per_block->text());
  out += "  requires:\n";
  out += fmt::format("    align_bytes   {}\n", desc.align_bytes.text());
  out += fmt::format("    ld_multiple   {}\n", desc.ld_multiple.text());

  out += fmt::format("  space: {} raw, {} valid, {} pruned\n", stats.raw, stats.valid, pruned_total(stats));
  size_t count_w = 0;
  for (const auto& p : stats.pruned) count_w = std::max(count_w, std::to_string(p.count).size());
  for (const auto& p : stats.pruned) out += fmt::format("    {:>{}} pruned: {}\n", p.count, count_w, p.reason);
}

nlohmann::json template_json(const TemplateDesc& desc, const PresetTemplate* entry, const TemplateSpaceStats& stats) {
  nlohmann::json params = nlohmann::json::array();
  for (const ParamDesc& p : desc.params) {
    const std::vector<int64_t>& used = used_values(p, entry);
    params.push_back({{"name", p.name},
                      {"values", used},
                      {"default_values", p.values},
                      {"overridden", used != p.values},
                      {"help", p.help}});
  }
  nlohmann::json constraints = nlohmann::json::array();
  for (const auto& c : desc.constraints)
    constraints.push_back({{"check", c.check.text()}, {"reason", c.reason}, {"file", c.file.string()}});
  nlohmann::json derived = nlohmann::json::array();
  for (const auto& d : desc.derived) derived.push_back({{"name", d.name}, {"expression", d.expr.text()}});
  nlohmann::json includes = nlohmann::json::array();
  for (const auto& include : desc.includes) includes.push_back(include.string());
  nlohmann::json pruned = nlohmann::json::array();
  for (const auto& p : stats.pruned) pruned.push_back({{"reason", p.reason}, {"count", p.count}});
  nlohmann::json launch = {{"threads", desc.threads.text()},
                           {"tile_m", desc.tile_m.text()},
                           {"tile_n", desc.tile_n.text()},
                           {"dynamic_smem", desc.dynamic_smem.text()},
                           {"grid_z", desc.grid_z.text()}};
  if (desc.problems_per_block) launch["problems_per_block"] = desc.problems_per_block->text();
  return {
      {"name", desc.name},
      {"kernel", desc.kernel},
      {"summary", desc.summary},
      {"descriptor", desc.descriptor_path.string()},
      {"source", desc.source_path.string()},
      {"layouts", desc.layouts},
      {"batched", desc.batched},
      {"dtypes", [&] {
         nlohmann::json types = nlohmann::json::array();
         for (const DType d : desc.dtypes) types.push_back(std::string(dtype_name(d)));
         return types;
       }()},
      {"params", params},
      {"derived", derived},
      {"includes", includes},
      {"constraints", constraints},
      {"launch", launch},
      {"requires", {{"align_bytes", desc.align_bytes.text()}, {"ld_multiple", desc.ld_multiple.text()}}},
      {"counts", {{"raw", stats.raw}, {"valid", stats.valid}, {"pruned_total", pruned_total(stats)}, {"pruned", pruned}}},
  };
}

}  // namespace

std::string render_space_text(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                              const std::string& target_note, const SearchSpace& space) {
  std::string out = fmt::format("preset {} ({})\n", preset.name, preset.file.string());
  if (!preset.description.empty()) out += fmt::format("  {}\n", preset.description);
  out += fmt::format("  tune: {}\n", format_tune(preset.tune));
  out += fmt::format("  target: {}{}, DEVICE_SMEM_PER_BLOCK={}\n", target.arch,
                     target_note.empty() ? "" : " (" + target_note + ")", target.smem_per_block);

  for (const auto& stats : space.stats) {
    const TemplateDesc* desc = find_template(templates, stats.template_name);
    if (!desc) continue;   // the space was enumerated from these templates, so this does not happen
    render_template_text(out, *desc, find_entry(preset, stats.template_name), stats);
  }

  const Totals totals = totals_of(space);
  out += fmt::format("\ntotal: {} template{}, {} raw, {} valid, {} pruned\n", space.stats.size(),
                     space.stats.size() == 1 ? "" : "s", totals.raw, totals.valid, totals.pruned);
  // Totals list only the reasons that pruned something; each template above lists all of its own.
  size_t count_w = 0;
  for (const auto& p : totals.by_reason) count_w = std::max(count_w, std::to_string(p.count).size());
  for (const auto& p : totals.by_reason)
    if (p.count > 0) out += fmt::format("  {:>{}} pruned: {}\n", p.count, count_w, p.reason);

  const std::vector<std::string> others = not_in_preset(templates, preset);
  if (!others.empty()) {
    std::string names;
    for (const auto& n : others) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("not in this preset: {}\n", names);
  }
  return out;
}

nlohmann::json render_space_json(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                                 const SearchSpace& space) {
  const TuneSettings& t = preset.tune;
  nlohmann::json out;
  out["preset"] = {
      {"name", preset.name},
      {"description", preset.description},
      {"file", preset.file.string()},
      {"content_hash", preset.content_hash},
      {"tune",
       {{"budget_ms", t.budget_ms},
        {"min_samples", t.min_samples},
        {"max_samples", t.max_samples},
        {"warmup", t.warmup},
        {"retime_top", t.retime_top},
        {"retime_rounds", t.retime_rounds},
        {"abandon_factor", t.abandon_factor}}},
  };
  out["target"] = {{"arch", target.arch}, {"DEVICE_SMEM_PER_BLOCK", target.smem_per_block}};
  out["templates"] = nlohmann::json::array();
  for (const auto& stats : space.stats) {
    const TemplateDesc* desc = find_template(templates, stats.template_name);
    if (!desc) continue;
    out["templates"].push_back(template_json(*desc, find_entry(preset, stats.template_name), stats));
  }
  const Totals totals = totals_of(space);
  nlohmann::json by_reason = nlohmann::json::array();
  for (const auto& p : totals.by_reason) by_reason.push_back({{"reason", p.reason}, {"count", p.count}});
  out["totals"] = {{"templates", space.stats.size()},
                   {"raw", totals.raw},
                   {"valid", totals.valid},
                   {"pruned", totals.pruned},
                   {"pruned_by_reason", by_reason}};
  out["not_in_preset"] = not_in_preset(templates, preset);
  return out;
}

std::string render_candidates_text(const SearchSpace& space) {
  std::string out;
  for (const Candidate& c : space.candidates) {
    const LaunchShape& s = c.shape;
    // problems_per_block only where a block computes several problems, so other lines read as before.
    const std::string per_block =
        s.problems_per_block != 1 ? fmt::format(" problems_per_block={}", s.problems_per_block) : std::string();
    out += fmt::format("{}  {}  threads={} tile={}x{} dynamic_smem={} grid_z={}{}  requires: {}\n", c.id(),
                       c.tmpl->name_expression(c.values), s.threads, s.tile_m, s.tile_n, s.dynamic_smem, s.grid_z,
                       per_block, c.requirements.to_string());
  }
  return out;
}

nlohmann::json render_candidates_json(const SearchSpace& space) {
  nlohmann::json out = nlohmann::json::array();
  for (const Candidate& c : space.candidates) {
    const LaunchShape& s = c.shape;
    nlohmann::json launch = {{"threads", s.threads},
                             {"tile_m", s.tile_m},
                             {"tile_n", s.tile_n},
                             {"dynamic_smem", s.dynamic_smem},
                             {"grid_z", s.grid_z}};
    if (s.problems_per_block != 1) launch["problems_per_block"] = s.problems_per_block;
    out.push_back({{"id", c.id()},
                   {"template", c.tmpl->name},
                   {"params", params_to_string(c.values)},
                   {"name_expression", c.tmpl->name_expression(c.values)},
                   {"launch", launch},
                   {"requires", {{"align_bytes", c.requirements.align_bytes}, {"ld_multiple", c.requirements.ld_multiple}}}});
  }
  return out;
}

}  // namespace cmt
