#include "cli/list_render.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "output/printers.hpp"

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

/// A template's parameters: name, the values the preset searches, the descriptor's when the preset
/// overrides them (a column only when some are), help.
output::Table param_table(const TemplateDesc& desc, const PresetTemplate* entry) {
  using output::Column;
  bool overridden = false;
  for (const ParamDesc& p : desc.params) overridden = overridden || used_values(p, entry) != p.values;
  std::vector<Column> columns = {Column("name").fit(), Column("values").fit().gap("  "),
                                 Column("default_values").show(output::Show::data),
                                 Column("overridden").show(output::Show::data)};
  if (overridden) columns.push_back(Column("defaults").fit().gap("  ").show(output::Show::human));
  columns.push_back(Column("help").gap("  "));
  output::Table table(std::move(columns));
  for (const ParamDesc& p : desc.params) {
    const std::vector<int64_t>& used = used_values(p, entry);
    auto row = table.add_row();
    row.set("name", p.name).set("values", used).set("default_values", p.values).set("overridden", used != p.values);
    if (overridden) row.set("defaults", used == p.values ? "" : fmt::format("(descriptor: {})", join_values(p.values)));
    row.set("help", p.help);
  }
  return table;
}

output::Table derived_table(const TemplateDesc& desc) {
  output::Table table({output::Column("name").fit(), output::Column("expression").gap("  ")});
  for (const auto& d : desc.derived) table.add_row().set("name", d.name).set("expression", d.expr.text());
  return table;
}

output::Table constraint_table(const TemplateDesc& desc) {
  output::Table table({output::Column("check").fit(), output::Column("reason").gap("  "),
                       output::Column("file").show(output::Show::data)});
  for (const auto& c : desc.constraints)
    table.add_row().set("check", c.check.text()).set("reason", c.reason).set("file", c.file.string());
  return table;
}

/// How many candidates each constraint pruned; people see only the reasons that pruned something,
/// unless `zeros`.
output::Table pruned_table(const std::vector<PruneCount>& pruned, bool zeros) {
  output::Table table({output::Column("count").right().fit(), output::Column("reason").gap(" pruned: ")});
  for (const auto& p : pruned)
    table.add_row(zeros || p.count > 0 ? output::Show::all : output::Show::data).set("reason", p.reason).set("count", p.count);
  return table;
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
  out += "  parameters:\n";
  out += output::render_text(param_table(desc, entry), {"    ", false, true});
  if (!desc.derived.empty()) {
    out += "  derived:\n";
    out += output::render_text(derived_table(desc), {"    ", false});
  }
  for (const auto& include : desc.includes) out += fmt::format("  includes    {}\n", include.string());
  if (desc.constraints.empty()) {
    out += "  constraints: none\n";
  } else {
    out += "  constraints:\n";
    out += output::render_text(constraint_table(desc), {"    ", false});
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
  out += output::render_text(pruned_table(stats.pruned, true), {"    ", false});
}

output::Record template_record(const TemplateDesc& desc, const PresetTemplate* entry, const TemplateSpaceStats& stats) {
  std::vector<std::string> types;
  for (const DType d : desc.dtypes) types.emplace_back(dtype_name(d));
  std::vector<std::string> includes;
  for (const auto& include : desc.includes) includes.push_back(include.string());
  output::Record launch{{"threads", desc.threads.text()},
                        {"tile_m", desc.tile_m.text()},
                        {"tile_n", desc.tile_n.text()},
                        {"dynamic_smem", desc.dynamic_smem.text()},
                        {"grid_z", desc.grid_z.text()}};
  if (desc.problems_per_block) launch.set("problems_per_block", desc.problems_per_block->text());
  return {
      {"name", desc.name},
      {"kernel", desc.kernel},
      {"summary", desc.summary},
      {"descriptor", desc.descriptor_path.string()},
      {"source", desc.source_path.string()},
      {"layouts", desc.layouts},
      {"batched", desc.batched},
      {"dtypes", types},
      {"params", output::table_records(param_table(desc, entry))},
      {"derived", output::table_records(derived_table(desc))},
      {"includes", includes},
      {"constraints", output::table_records(constraint_table(desc))},
      {"launch", launch},
      {"requires", output::Record{{"align_bytes", desc.align_bytes.text()}, {"ld_multiple", desc.ld_multiple.text()}}},
      {"counts", output::Record{{"raw", stats.raw},
                                {"valid", stats.valid},
                                {"pruned_total", pruned_total(stats)},
                                {"pruned", output::table_records(pruned_table(stats.pruned, true))}}},
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
  out += output::render_text(pruned_table(totals.by_reason, false), {"  ", false});

  const std::vector<std::string> others = not_in_preset(templates, preset);
  if (!others.empty()) {
    std::string names;
    for (const auto& n : others) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("not in this preset: {}\n", names);
  }
  return out;
}

output::Record space_record(const std::vector<TemplateDesc>& templates, const Preset& preset, const Target& target,
                            const SearchSpace& space) {
  const TuneSettings& t = preset.tune;
  output::List described;
  for (const auto& stats : space.stats) {
    const TemplateDesc* desc = find_template(templates, stats.template_name);
    if (!desc) continue;
    described.emplace_back(template_record(*desc, find_entry(preset, stats.template_name), stats));
  }
  const Totals totals = totals_of(space);
  return {
      {"preset", output::Record{{"name", preset.name},
                                {"description", preset.description},
                                {"file", preset.file.string()},
                                {"content_hash", preset.content_hash},
                                {"tune", output::Record{{"budget_ms", t.budget_ms},
                                                        {"min_samples", t.min_samples},
                                                        {"max_samples", t.max_samples},
                                                        {"warmup", t.warmup},
                                                        {"retime_top", t.retime_top},
                                                        {"retime_rounds", t.retime_rounds},
                                                        {"abandon_factor", t.abandon_factor}}}}},
      {"target", output::Record{{"arch", target.arch}, {"DEVICE_SMEM_PER_BLOCK", target.smem_per_block}}},
      {"templates", described},
      {"totals", output::Record{{"templates", space.stats.size()},
                                {"raw", totals.raw},
                                {"valid", totals.valid},
                                {"pruned", totals.pruned},
                                {"pruned_by_reason", output::table_records(pruned_table(totals.by_reason, false))}}},
      {"not_in_preset", not_in_preset(templates, preset)},
  };
}

output::Table candidate_table(const SearchSpace& space) {
  using output::Column;
  output::Table table({Column("id"), Column("template").show(output::Show::data), Column("params").show(output::Show::data),
                       Column("name_expression").gap("  "), Column("launch").gap("  "), Column("requires").gap("  ")});
  for (const Candidate& c : space.candidates) {
    const LaunchShape& s = c.shape;
    output::Record launch{{"threads", s.threads},
                          {"tile_m", s.tile_m},
                          {"tile_n", s.tile_n},
                          {"dynamic_smem", s.dynamic_smem},
                          {"grid_z", s.grid_z}};
    // problems_per_block only where a block computes several problems, so other lines read as before.
    std::string per_block;
    if (s.problems_per_block != 1) {
      launch.set("problems_per_block", s.problems_per_block);
      per_block = fmt::format(" problems_per_block={}", s.problems_per_block);
    }
    table.add_row()
        .set("id", c.id())
        .set("template", c.tmpl->name)
        .set("params", params_to_string(c.values))
        .set("name_expression", c.tmpl->name_expression(c.values))
        .set("launch", launch,
             fmt::format("threads={} tile={}x{} dynamic_smem={} grid_z={}{}", s.threads, s.tile_m, s.tile_n,
                         s.dynamic_smem, s.grid_z, per_block))
        .set("requires",
             output::Record{{"align_bytes", c.requirements.align_bytes}, {"ld_multiple", c.requirements.ld_multiple}},
             "requires: " + c.requirements.to_string());
  }
  return table;
}

}  // namespace cmt
