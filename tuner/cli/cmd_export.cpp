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
#include "core/error.hpp"
#include "core/files.hpp"
#include "export/dispatch.hpp"
#include "export/header_writer.hpp"

namespace cmt::cli {

namespace {

struct ExportCommandOptions {
  std::string out;
  std::string device = "all";
  std::string name_space = "cmtune";
  std::string dtype = "all";
  bool check = false;
};

std::optional<std::string> read_if_exists(const std::filesystem::path& file) {
  if (is_stream_file(file)) return std::nullopt;   // reading /dev/stdout or a pipe may never end
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The file --out writes: through symbolic links, to their destination, which must be no folder, no
/// file of the database (itself, or its -wal, -shm or -journal, whether or not they exist), no side
/// file of another SQLite database, and no SQLite database at all (--out naming a .db by mistake). A device or a
/// pipe (/dev/stdout) is written into as it is.
std::filesystem::path output_destination(const std::filesystem::path& out, const std::filesystem::path& db_file) {
  if (is_stream_file(out)) return out;
  const std::filesystem::path destination = symlink_destination(out);
  const std::string through = destination == out ? "" : fmt::format(" (a symbolic link to {})", destination.string());
  const auto refuse = [&](const std::string& why) {
    return UsageError(fmt::format("--out {}{}: {}", out.string(), through, why));
  };
  std::error_code ec;
  if (std::filesystem::is_directory(destination, ec))
    throw refuse("is a folder; name the header file to write, e.g. tuned_sgemm.cuh");
  if (std::filesystem::exists(destination, ec) && !std::filesystem::is_regular_file(destination, ec))
    throw refuse("is neither a file nor a folder (a block device or a socket); refusing to write a header into it");
  if (const auto kind = database_file_kind(destination, db_file)) {
    if (!kind->side_file) throw refuse(fmt::format("is {}; refusing to overwrite it with a header", kind->what));
    throw refuse(fmt::format("is {}, which SQLite deletes or replays; refusing to write a header there", kind->what));
  }
  if (is_sqlite_file(destination))
    throw refuse("is a SQLite database, not a header; refusing to overwrite it");
  return destination;
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

int run_export(const GlobalOptions& global, const ExportCommandOptions& o) {
  check_namespace_name(o.name_space);
  const std::vector<DType> dtypes = parse_dtype_list(o.dtype);
  if (dtypes.empty()) throw UsageError("--dtype: give f32, f64, i32, a comma list of them, or all");
  const std::filesystem::path db_file = database_path(global);
  if (!std::filesystem::exists(db_file))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", db_file.string()));
  const std::filesystem::path out(o.out);
  const std::filesystem::path destination = output_destination(out, db_file);
  if (o.check && is_stream_file(destination))
    throw UsageError(fmt::format("--out {}: is a device or a pipe; --check compares a header file", out.string()));
  Store store(db_file, OpenMode::read);   // only reads: works on a database this user cannot write
  ExportOptions options;
  options.name_space = o.name_space;
  if (o.device != "all") options.device_ids.push_back(resolve_db_device(store, o.device).id);
  if (dtypes.size() < static_cast<size_t>(k_header_dtypes)) options.dtypes = dtypes;   // else every type
  const TemplateDesc blocktile2d = generic_default_template(global);
  const ExportModel model = build_export_model(store, options, blocktile2d);
  const std::string header = render_header(model, o.name_space);

  const auto existing = read_if_exists(destination);
  if (o.check) {
    if (existing && *existing == header) {
      fmt::print("{} is up to date with {}\n", out.string(), db_file.string());
      return 0;
    }
    std::string again = "cm-tune export --out " + out.string();
    if (o.device != "all") again += " --device '" + o.device + "'";
    if (o.name_space != "cmtune") again += " --namespace " + o.name_space;
    if (!options.dtypes.empty()) again += " --dtype " + o.dtype;
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
                  model.kernels.size(), model.kernels.size() == 1 ? "" : "s", generics, generics == 1 ? "" : "s");
  if (existing && *existing == header) {
    fmt::print("{} unchanged: {}\n", out.string(), summary);  // not rewritten, so builds stay up to date
  } else {
    write_file_atomically(destination, header);   // replaces the link's destination, so the link stays
    fmt::print("wrote {}: {}\n", out.string(), summary);
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
                  "Element types whose tuned winners go into the tables: f32, f64, i32, a comma list, or all (the "
                  "entry points sgemm, dgemm and igemm exist anyway, running the generic defaults)")
      ->capture_default_str();
  sub->add_flag("--check", o->check,
                "Write nothing; exit 1 if the file differs from what would be exported now (0 if identical)");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_export(global, *o); }; });
}

}  // namespace cmt::cli
