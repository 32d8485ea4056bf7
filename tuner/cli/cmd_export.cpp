// cm-tune export: the database's winners as one self-contained CUDA header (docs/EXPORT.md).
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "cli/app.hpp"
#include "cli/sizes.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "compile/build_cache.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "export/dispatch.hpp"
#include "export/header_check.hpp"
#include "export/header_writer.hpp"
#include "export/model_check.hpp"
#include "report/held_out_table.hpp"

namespace cmt::cli {

namespace {

struct ExportCommandOptions {
  std::string out;
  std::string device = "all";
  std::string name_space = "cmtune";
  std::string dtype = "all";
  std::string form = "binary";   // binary: the cubins tune timed; source: the kernels' sources
  bool check = false;
  bool regret = false;   // the held-out check's table, one row per problem
  bool json = false;
};

std::optional<std::string> read_if_exists(const std::filesystem::path& file) {
  if (is_stream_file(file)) return std::nullopt;   // reading /dev/stdout or a pipe may never end
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

output::Record spread_record(const Spread& s) {
  if (s.count == 0) return {{"count", 0}, {"median", nullptr}, {"p90", nullptr}, {"max", nullptr}};
  return {{"count", s.count}, {"median", s.median}, {"p90", s.p90}, {"max", s.max}};
}

output::Record check_record(const ExportModel& model, const HeldOutCheck& c) {
  return {{"device", model.devices.at(c.device).name},
          {"dtype", dtype_name(c.dtype)},
          {"shapes", c.problems.size()},
          {"model_error", spread_record(c.model_error)},
          {"regret", spread_record(c.regret)},
          {"unmeasured_choices", c.unmeasured_choices},
          {"problems", output::table_records(report::held_out_table(model, c))}};
}

/// Per device table, the element types and layouts (and batches) that no tuned kernel serves: every
/// such call runs the generic default kernel of its type and layout. Nothing for a table that serves
/// them all.
void print_unserved_calls(const ExportModel& model) {
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const std::string unserved = unserved_calls(model, d);
    if (!unserved.empty())
      fmt::print("{}: no tuned kernel serves {}; those calls run the generic default kernels\n", model.devices[d].name,
                 unserved);
  }
}

/// ", 140 images of machine code (11.2 MB unpacked), 3.1 MB in all".
std::string machine_code_summary(const HeaderCode& code, const std::string& header) {
  size_t raw = 0;
  for (const auto& image : code.images) raw += image.bytes.size();
  return fmt::format(", {} images of machine code ({:.1f} MB unpacked), {:.1f} MB in all", code.images.size(),
                     static_cast<double>(raw) / 1e6, static_cast<double>(header.size()) / 1e6);
}

int run_export(const GlobalOptions& global, const ExportCommandOptions& o) {
  check_namespace_name(o.name_space);
  const std::vector<DType> dtypes = parse_dtype_list(o.dtype);
  if (dtypes.empty()) throw UsageError(fmt::format("--dtype: give {}, a comma list of them, or all", type_names(",")));
  for (const DType d : dtypes)
    if (!header_computes(d))
      throw UsageError(fmt::format("--dtype {}: the exported header has no {} routine yet; its winners stay in the "
                                   "database (cm-tune query shows them)",
                                   dtype_name(d), dtype_name(d)));
  // `all` (the default) exports every type and opt-in class the database holds: a class's winners change
  // nothing for a caller that does not opt in (sgemm stays IEEE FP32). A list exports what it names.
  const bool every_type = dtypes == all_types() && o.dtype.find(',') == std::string::npos;
  const std::filesystem::path db_file = database_path(global);
  if (!std::filesystem::exists(db_file))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", db_file.string()));
  const std::filesystem::path out(o.out);
  const std::filesystem::path destination =
      output_destination(out, db_file, {"a header", "the header file to write, e.g. tuned_sgemm.cuh"});
  if (o.check && is_stream_file(destination))
    throw UsageError(fmt::format("--out {}: is a device or a pipe; --check compares a header file", out.string()));
  Store store(db_file, OpenMode::read);   // only reads: works on a database this user cannot write
  ExportOptions options;
  options.name_space = o.name_space;
  if (o.device != "all") options.device_ids.push_back(resolve_db_device(store, o.device).id);
  if (!every_type) options.dtypes = dtypes;   // else every type and class
  const TemplateDesc default_tmpl = generic_default_template(global);
  const ExportModel model = build_export_model(store, options, default_tmpl);
  std::optional<HeaderCode> code;
  if (o.form == "binary") {
    // The runtime library's builds are kept between runs (compile/build_cache.hpp): they belong to no database.
    const NvrtcCompiler nvrtc;
    const CachedCompiler compiler(nvrtc, build_cache_folder());
    code = collect_header_code(store, model, default_tmpl, compiler);
  }
  const std::string header = render_header(model, o.name_space, code ? &*code : nullptr);

  const auto existing = read_if_exists(destination);
  if (o.check) {
    // A header of machine code is read back too: its images must unpack to the very bytes embedded now.
    const std::vector<std::string> differences =
        existing && code && is_machine_code_header(*existing) ? image_differences(*existing, *code)
                                                              : std::vector<std::string>{};
    if (existing && *existing == header && differences.empty()) {
      if (code)
        fmt::print("{} is up to date with {}: its {} images unpack to the builds the database holds\n", out.string(),
                   db_file.string(), code->images.size());
      else
        fmt::print("{} is up to date with {}\n", out.string(), db_file.string());
      return 0;
    }
    constexpr size_t k_shown = 10;
    for (size_t i = 0; i < differences.size() && i < k_shown; ++i)
      fmt::print(stderr, "cm-tune: {}: {}\n", out.string(), differences[i]);
    if (differences.size() > k_shown)
      fmt::print(stderr, "cm-tune: {}: and {} more images differ\n", out.string(), differences.size() - k_shown);
    std::string again = "cm-tune export --out " + out.string();
    if (o.device != "all") again += " --device '" + o.device + "'";
    if (o.name_space != "cmtune") again += " --namespace " + o.name_space;
    if (!options.dtypes.empty()) again += " --dtype " + o.dtype;
    if (o.form != "binary") again += " --form " + o.form;
    fmt::print(stderr, "cm-tune: {} {} what {} exports now; re-run `{}`\n", out.string(),
               existing ? "differs from" : "does not exist, so it differs from", db_file.string(), again);
    return 1;
  }
  size_t problems = 0;
  for (const auto& d : model.devices) problems += d.entries.size();
  size_t generics = 0;
  for (const auto& row : model.generic_kernels)
    generics += static_cast<size_t>(std::count_if(std::begin(row), std::end(row), [](int k) { return k >= 0; }));
  const std::string summary =
      fmt::format("{} device table{}, {} tuned problem{}, {} kernel{} (incl. {} generic default{}, one per type and "
                  "layout)",
                  model.devices.size(), model.devices.size() == 1 ? "" : "s", problems, problems == 1 ? "" : "s",
                  model.kernels.size(), model.kernels.size() == 1 ? "" : "s", generics, generics == 1 ? "" : "s") +
      (code ? machine_code_summary(*code, header) : std::string(", as sources"));
  const bool unchanged = existing && *existing == header;
  if (!unchanged) write_file_atomically(destination, header);   // replaces the link's destination, so the link stays
  // Not rewritten when unchanged, so builds that depend on it stay up to date.
  const std::vector<HeldOutCheck> checks = check_held_out(model);
  if (o.json) {
    output::List held_out;
    for (const HeldOutCheck& c : checks) held_out.emplace_back(check_record(model, c));
    output::Record unserved;
    for (size_t d = 0; d < model.devices.size(); ++d) unserved.set(model.devices[d].name, unserved_calls(model, d));
    print_json(output::Record{{"out", out.string()},
                              {"written", !unchanged},
                              {"form", o.form},
                              {"bytes", header.size()},
                              {"summary", summary},
                              {"held_out", held_out},
                              {"unserved", unserved}});
    return 0;
  }
  fmt::print(unchanged ? "{} unchanged: {}\n" : "wrote {}: {}\n", out.string(), summary);
  for (const HeldOutCheck& c : checks) {
    fmt::print("{}\n", held_out_summary(model, checks, c));
    if (o.regret) print_text(report::held_out_table(model, c), {"  "});
  }
  print_unserved_calls(model);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("export", "Write the tuned kernels and their dispatch as one self-contained CUDA header");
  auto o = std::make_shared<ExportCommandOptions>();
  sub->add_option("--out,-o", o->out, "Header to write, e.g. tuned_sgemm.cuh")->required()->check(non_empty_path());
  sub->add_option("--device,-d", o->device,
                  "'all', or one database device: CUDA index, database position, UUID or unique part of its name")
      ->capture_default_str();
  sub->add_option("--namespace", o->name_space, "C++ namespace of the header's API")->capture_default_str();
  sub->add_option("--dtype", o->dtype,
                  "Element types whose tuned winners go into the tables: f32, f64, i32, tf32x3, a comma list, or all "
                  "(every type and class; the entry points sgemm, dgemm, igemm and sgemm_tf32x3 exist anyway, "
                  "running the generic defaults or, for tf32x3, sgemm's dispatch)")
      ->capture_default_str();
  sub->add_option("--form", o->form,
                  "binary: the cubins tune timed, loaded at run time (any C++ compiler builds the header); source: the "
                  "kernels' sources, which the program's nvcc compiles")
      ->check(CLI::IsMember({"binary", "source"}))
      ->capture_default_str();
  sub->add_flag("--check", o->check,
                "Write nothing; exit 1 if the file differs from what would be exported now (0 if identical), naming "
                "each embedded image whose bytes are not the database's build");
  sub->add_flag("--regret", o->regret,
                "After the held-out check's summary, its table: per problem, the kernel the dispatch chooses with "
                "that problem left out, its measured time, the fastest measured kernel, the regret and the model error");
  sub->add_flag("--json", o->json, "Machine-readable output (the held-out check with every problem's row)");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_export(global, *o); }; });
}

}  // namespace cmt::cli
