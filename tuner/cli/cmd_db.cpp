// cm-tune db check | info | vacuum | migrate | merge | export: looking after the database. check,
// info, vacuum --dry-run and export only read it; vacuum and migrate write it; merge writes its OUT
// and only reads its inputs.
#include <algorithm>
#include <fmt/format.h>
#include <functional>

#include "cli/app.hpp"
#include "cli/data_export.hpp"
#include "cli/kernel_tuner_export.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "record/problem_state.hpp"
#include "store/maintenance.hpp"
#include "store/merge.hpp"

namespace cmt::cli {

namespace {

struct DbOptions {
  bool json = false;
  bool dry_run = false;
  std::string merge_out;                  // db merge OUT
  std::vector<std::string> merge_inputs;  // db merge IN...
  std::string export_format;              // db export --format: csv, json or kernel-tuner
  std::string export_what = "trials";     // db export --what
  std::string export_out;                 // db export --out; empty: stdout
};

std::string bytes_text(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  if (bytes < int64_t{1024} * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0));
}

std::string plural(int64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

/// A row per check: ok or FAIL (the text's first column; JSON has the flag), its name and detail.
output::Table check_table(const std::vector<CheckResult>& checks) {
  using output::Column;
  output::Table table({Column("status").width(4).show(output::Show::human), Column("name").width(15).gap("  "),
                       Column("ok").show(output::Show::data), Column("detail").gap("  ")});
  for (const auto& c : checks)
    table.add_row().set("status", c.ok ? "ok" : "FAIL").set("name", c.name).set("ok", c.ok).set("detail", c.detail);
  return table;
}

/// A row per device of the database, for `db info --json`.
output::Table database_device_table(const DatabaseInfo& info) {
  using output::Column;
  output::Table table({Column("name"), Column("uuid"), Column("arch"), Column("problems").right(),
                       Column("trials").right(), Column("winners").right()});
  for (const auto& d : info.devices)
    table.add_row()
        .set("name", d.record.name)
        .set("uuid", d.record.uuid)
        .set("arch", fmt::format("sm_{}{}", d.record.cc_major, d.record.cc_minor))
        .set("problems", d.problems)
        .set("trials", d.trials)
        .set("winners", d.winners);
  return table;
}

int run_check(const GlobalOptions& global, const DbOptions& o) {
  const std::filesystem::path file = database_path(global);
  // An older schema or a damaged file is what the checks report, not a reason to refuse.
  const std::vector<CheckResult> checks = check_database(file);
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const CheckResult& c) { return !c.ok; });
  const output::Table table = check_table(checks);
  if (o.json) {
    print_json(output::Record{{"database", file.string()}, {"ok", failed == 0}, {"checks", output::table_records(table)}});
  } else {
    print_text(table, {"", false});
    fmt::print("{}: {}\n", file.string(),
               failed == 0 ? fmt::format("all {} checks passed", checks.size())
                           : fmt::format("{} of {} checks failed", failed, checks.size()));
  }
  return failed == 0 ? k_exit_success : k_exit_failure;
}

int run_info(const GlobalOptions& global, const DbOptions& o) {
  const std::filesystem::path file = database_path(global);
  Store store(file, OpenMode::read);
  const DatabaseInfo info = database_info(store);
  if (o.json) {
    print_json(output::Record{{"database", file.string()},
                              {"file_bytes", info.file_bytes},
                              {"schema_version", info.schema_version},
                              {"devices", output::table_records(database_device_table(info))},
                              {"problems", info.problems},
                              {"trials", info.trials},
                              {"trials_by_outcome", info.trials_by_outcome},
                              {"winners", info.winners},
                              {"runs", info.runs},
                              {"binaries", output::Record{{"cubins", info.cubins},
                                                          {"cubin_bytes", info.cubin_bytes},
                                                          {"cubin_raw_bytes", info.cubin_raw_bytes},
                                                          {"failed_compiles", info.failed_compiles},
                                                          {"dropped_cubins", info.dropped_cubins}}},
                              {"sources", info.sources}});
    return k_exit_success;
  }
  fmt::print("database {}: {}, schema version {}\n", file.string(), bytes_text(info.file_bytes), info.schema_version);
  fmt::print("devices: {}\n", info.devices.size());
  for (size_t i = 0; i < info.devices.size(); ++i) {
    const auto& d = info.devices[i];
    fmt::print("  [{}] {} (sm_{}{}, {}): {}, {}, {}\n", i, d.record.name, d.record.cc_major, d.record.cc_minor,
               d.record.uuid, plural(d.problems, "problem", "problems"), plural(d.trials, "trial", "trials"),
               plural(d.winners, "winner", "winners"));
  }
  fmt::print("problems: {}\n", info.problems);
  std::string outcomes;
  for (const auto& [outcome, n] : info.trials_by_outcome) outcomes += fmt::format("{}{} {}", outcomes.empty() ? "" : ", ", outcome, n);
  fmt::print("trials: {}{}\n", info.trials, outcomes.empty() ? "" : " (" + outcomes + ")");
  fmt::print("winners: {}\n", info.winners);
  fmt::print("runs: {}\n", info.runs);
  // Stored bytes, and the cubins' own size where compression made them smaller.
  const std::string cubin_bytes =
      info.cubin_raw_bytes == info.cubin_bytes
          ? bytes_text(info.cubin_bytes)
          : fmt::format("{} stored, {} uncompressed", bytes_text(info.cubin_bytes), bytes_text(info.cubin_raw_bytes));
  fmt::print("binaries: {} ({}), {}, {} dropped by db vacuum\n", plural(info.cubins, "cubin", "cubins"),
             cubin_bytes, plural(info.failed_compiles, "failed compile", "failed compiles"),
             info.dropped_cubins);
  fmt::print("sources: {}\n", info.sources);
  return k_exit_success;
}

int run_vacuum(const GlobalOptions& global, const DbOptions& o) {
  const std::filesystem::path file = database_path(global);
  // A dry run only reads, so it works on a database this user cannot write.
  Store store(file, o.dry_run ? OpenMode::read : OpenMode::write);
  const VacuumResult r = vacuum_database(store, o.dry_run);
  if (o.json) {
    print_json(output::Record{{"database", file.string()},
                              {"dry_run", o.dry_run},
                              {"dropped_cubins", r.cubins},
                              {"dropped_bytes", r.cubin_bytes},
                              {"kept_cubins", r.kept},
                              {"bytes_before", r.bytes_before},
                              {"bytes_after", r.bytes_after}});
    return k_exit_success;
  }
  fmt::print("{} {} that no winner uses ({}); kept {} that winners use\n", o.dry_run ? "would drop" : "dropped",
             plural(r.cubins, "cubin", "cubins"), bytes_text(r.cubin_bytes), r.kept);
  if (o.dry_run)
    fmt::print("database {}: {} now; nothing was changed\n", file.string(), bytes_text(r.bytes_before));
  else
    fmt::print("database {}: {} -> {}\n", file.string(), bytes_text(r.bytes_before), bytes_text(r.bytes_after));
  return k_exit_success;
}

int run_migrate(const GlobalOptions& global) {
  const std::filesystem::path file = database_path(global);
  const int before = Store(file, OpenMode::read, OlderSchema::accept).schema_version();
  const int after = Store(file, OpenMode::write).schema_version();
  if (before == after)
    fmt::print("database {}: schema version {}, the latest; nothing to do\n", file.string(), after);
  else
    fmt::print("database {}: schema version {} -> {}\n", file.string(), before, after);
  return k_exit_success;
}

/// A note on an input that added nothing, or empty.
std::string merge_note(const MergedInput& in, const std::filesystem::path& out) {
  if (!in.nothing_new) return "";
  if (!in.merged_before_path.empty())
    return fmt::format("{} adds nothing: merged into {} before, as {} at {}", in.path, out.string(),
                       in.merged_before_path, in.merged_before_at);
  return fmt::format("{} adds nothing: every row it holds is in {} already", in.path, out.string());
}

int run_merge(const DbOptions& o) {
  std::vector<std::filesystem::path> inputs(o.merge_inputs.begin(), o.merge_inputs.end());
  // The one ranking (record/ranking.hpp) over the merged trials and the baseline tune would use.
  const MergeResult r = merge_databases(o.merge_out, inputs, [](Store& out, int64_t device_id, const Problem& problem) {
    ProblemState(out, device_id, problem).store_winners(out);
  });
  if (o.json) {
    output::List list;
    for (const MergedInput& in : r.inputs)
      list.push_back(output::Record{
          {"path", in.path},
          {"absolute_path", in.absolute_path},
          {"content_hash", in.content_hash},
          {"nothing_new", in.nothing_new},
          {"merged_before", in.merged_before_path.empty()
                                ? output::Value()
                                : output::Value(output::Record{{"path", in.merged_before_path},
                                                               {"at", in.merged_before_at}})},
          {"runs", in.runs},
          {"trials_added", in.trials_added},
          {"trials_duplicate", in.trials_duplicate},
          {"trials_replaced", in.trials_replaced},
          {"trials_superseded", in.trials_superseded}});
    print_json(output::Record{{"out", r.out.string()},
                              {"created", r.created},
                              {"changed", r.changed},
                              {"inputs", list},
                              {"devices", r.devices},
                              {"devices_added", r.devices_added},
                              {"runs_added", r.runs_added},
                              {"trials", output::Record{{"added", r.trials_added},
                                                        {"duplicate", r.trials_duplicate},
                                                        {"replaced", r.trials_replaced},
                                                        {"superseded", r.trials_superseded}}},
                              {"baselines", output::Record{{"added", r.baselines_added},
                                                           {"replaced", r.baselines_replaced},
                                                           {"superseded", r.baselines_superseded}}},
                              {"binaries_added", r.binaries_added},
                              {"cubins_restored", r.binaries_restored},
                              {"sources_added", r.sources_added},
                              {"winners_recomputed", r.winners_recomputed},
                              {"content_hash", r.content_hash}});
    return k_exit_success;
  }
  for (const MergedInput& in : r.inputs)
    if (const std::string note = merge_note(in, r.out); !note.empty()) fmt::print("note: {}\n", note);
  fmt::print("merged {} into {} ({}): {} ({} new); runs {} added; trials {} added, {} duplicate, {} replaced, {} "
             "superseded; baselines {} added, {} replaced, {} superseded; binaries {} added, {} cubins restored; "
             "sources {} added; winners of {} recomputed\n",
             plural(static_cast<int64_t>(r.inputs.size()), "input", "inputs"), r.out.string(),
             r.created ? "created" : r.changed ? "updated" : "unchanged", plural(r.devices, "device", "devices"),
             r.devices_added, r.runs_added, r.trials_added, r.trials_duplicate, r.trials_replaced, r.trials_superseded,
             r.baselines_added, r.baselines_replaced, r.baselines_superseded, r.binaries_added, r.binaries_restored,
             r.sources_added, plural(r.winners_recomputed, "problem", "problems"));
  return k_exit_success;
}

int run_data_export(const GlobalOptions& global, const DbOptions& o) {
  const ExportWhat what = parse_export_what(o.export_what).value();   // checked while parsing
  const bool t4 = o.export_format == "kernel-tuner";
  if (t4 && what != ExportWhat::trials)
    throw UsageError(fmt::format("--what {}: --format kernel-tuner exports trials, a T4 results file's rows; "
                                 "--format csv or json exports {}",
                                 o.export_what, o.export_what));
  const std::filesystem::path db_file = database_path(global);
  std::optional<std::filesystem::path> destination;
  if (!o.export_out.empty())
    destination = output_destination(o.export_out, db_file, {"a data export", "the file to write, e.g. trials.csv"});
  Store store(db_file, OpenMode::read);   // only reads: works on a database this user cannot write
  std::string text;
  size_t rows = 0;
  if (t4) {
    const output::Record document = t4_document(store);
    rows = document.at("results").as_list().size();
    text = output::render_json(document, -1) + "\n";
  } else {
    const output::Table table = export_table(store, what);
    rows = table.row_count();
    text = o.export_format == "csv" ? output::render_csv(table) : output::render_json_lines(table);
  }
  if (!destination) {
    fmt::print("{}", text);
    return k_exit_success;
  }
  write_file_atomically(*destination, text);   // replaces a link's destination, so the link stays
  if (!is_stream_file(*destination)) {   // /dev/stdout took the data
    const std::string many(export_what_name(what)), one = many.substr(0, many.size() - 1);
    fmt::print("wrote {}: {} ({})\n", o.export_out, plural(static_cast<int64_t>(rows), one.c_str(), many.c_str()),
               o.export_format);
  }
  return k_exit_success;
}

/// --format's check: csv, json or kernel-tuner.
CLI::Validator export_format_check() {
  return CLI::Validator(
      [](std::string& text) {
        return text == "csv" || text == "json" || text == "kernel-tuner"
                   ? std::string()
                   : fmt::format("'{}' is not an export format: csv, json or kernel-tuner", text);
      },
      "");
}

/// --what's check: trials, winners, baselines or devices.
CLI::Validator export_what_check() {
  return CLI::Validator(
      [](std::string& text) {
        return parse_export_what(text) ? std::string()
                                       : fmt::format("'{}' is not what db export exports: trials, winners, baselines "
                                                     "or devices",
                                                     text);
      },
      "");
}

}  // namespace

void add_db_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* db = app.add_subcommand("db", "Check, summarize, migrate, shrink, merge or export the database");
  db->require_subcommand(0, 1);
  // Runs after the chosen subcommand's callback; without one, says which there are.
  db->callback([&action, db] {
    if (db->get_subcommands().empty())
      action = []() -> int { throw UsageError("db needs a subcommand: check, info, vacuum, migrate, merge or export"); };
  });
  auto o = std::make_shared<DbOptions>();
  const auto add = [&](const char* name, const char* description, std::function<int()> run) {
    auto* sub = db->add_subcommand(name, description);
    add_db_option(*sub, global);
    sub->callback([&action, run] { action = run; });
    return sub;
  };
  add("check", "Check integrity, schema, orphan rows, winners and sources; exit 1 when a check fails",
      [&global, o] { return run_check(global, *o); })
      ->add_flag("--json", o->json, "Machine-readable output");
  add("info", "Show the devices, problems, trials, winners, binaries and sources stored",
      [&global, o] { return run_info(global, *o); })
      ->add_flag("--json", o->json, "Machine-readable output");
  auto* vacuum = add("vacuum", "Drop the cubins no winner uses (a later tune recompiles them) and shrink the file",
                     [&global, o] { return run_vacuum(global, *o); });
  vacuum->add_flag("--dry-run", o->dry_run, "Only report what would be dropped");
  vacuum->add_flag("--json", o->json, "Machine-readable output");
  add("migrate", "Bring the database to this cm-tune's schema (commands that only read never migrate)",
      [&global] { return run_migrate(global); });
  auto* data = add("export",
                    "Write the database's trials, winners, cuBLAS baselines or devices as CSV, JSON lines or Kernel "
                    "Tuner's T4 JSON (docs/DATA.md); only reads the database",
                    [&global, o] { return run_data_export(global, *o); });
  data->add_option("--format", o->export_format,
                   "csv (a header row, RFC 4180), json (JSON lines: an object per row) or kernel-tuner (the trials as "
                   "one T4 results and metadata document)")
      ->required()
      ->check(export_format_check());
  data->add_option("--what", o->export_what, "trials, winners, baselines or devices (kernel-tuner: trials)")
      ->capture_default_str()
      ->check(export_what_check());
  data->add_option("--out,-o", o->export_out, "File to write (default: stdout)")->check(non_empty_path());
  // Names its databases itself: OUT, then the inputs (no --db).
  auto* merge = db->add_subcommand("merge",
                                   "Merge cm-tune databases into OUT (created if missing, else merged into), in one "
                                   "transaction; the inputs are only read");
  merge->callback([&action, o] { action = [o] { return run_merge(*o); }; });
  merge->add_option("OUT", o->merge_out, "The database to write")->required()->check(non_empty_path());
  merge->add_option("IN", o->merge_inputs, "The databases to merge into it")->required()->check(non_empty_path());
  merge->add_flag("--json", o->json, "Machine-readable output");
}

}  // namespace cmt::cli
