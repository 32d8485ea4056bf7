// cm-tune export: the database's winners as one self-contained CUDA header (docs/EXPORT.md).
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "export/header_writer.hpp"

namespace cmt::cli {

namespace {

struct ExportCommandOptions {
  std::string out;
  std::string device = "all";
  std::string name_space = "cmtune";
  bool check = false;
};

std::optional<std::string> read_if_exists(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Writes through a temporary file and a rename, so a reader never sees half a header.
void write_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::filesystem::path temp = file.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw UsageError(fmt::format("cannot write {}", temp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, file, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw UsageError(fmt::format("cannot write {}: {}", file.string(), ec.message()));
  }
}

int run_export(const GlobalOptions& global, const ExportCommandOptions& o) {
  if (!valid_namespace_name(o.name_space))
    throw UsageError(fmt::format("--namespace '{}' is not a C++ namespace name (identifiers joined by ::)", o.name_space));
  const std::filesystem::path db_file = database_path(global);
  if (!std::filesystem::exists(db_file))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", db_file.string()));
  Store store(db_file);
  ExportOptions options;
  options.name_space = o.name_space;
  if (o.device != "all") options.device_ids.push_back(resolve_db_device(store, o.device).id);
  const TemplateDesc blocktile2d = generic_default_template(global);
  const ExportModel model = build_export_model(store, options, blocktile2d);
  const std::string header = render_header(model, o.name_space);
  const std::filesystem::path out(o.out);

  const auto existing = read_if_exists(out);
  if (o.check) {
    if (existing && *existing == header) {
      fmt::print("{} is up to date with {}\n", out.string(), db_file.string());
      return 0;
    }
    std::string again = "cm-tune export --out " + out.string();
    if (o.device != "all") again += " --device '" + o.device + "'";
    if (o.name_space != "cmtune") again += " --namespace " + o.name_space;
    fmt::print(stderr, "cm-tune: {} {} what {} exports now; re-run `{}`\n", out.string(),
               existing ? "differs from" : "does not exist, so it differs from", db_file.string(), again);
    return 1;
  }
  size_t problems = 0;
  for (const auto& d : model.devices) problems += d.entries.size();
  const std::string summary = fmt::format("{} device table{}, {} tuned problem{}, {} kernel{} (incl. the generic default)",
                                          model.devices.size(), model.devices.size() == 1 ? "" : "s", problems,
                                          problems == 1 ? "" : "s", model.kernels.size(),
                                          model.kernels.size() == 1 ? "" : "s");
  if (existing && *existing == header) {
    fmt::print("{} unchanged: {}\n", out.string(), summary);  // not rewritten, so builds stay up to date
    return 0;
  }
  if (out.has_parent_path() && !std::filesystem::is_directory(out.parent_path()))
    throw UsageError(fmt::format("cannot write {}: folder {} does not exist", out.string(), out.parent_path().string()));
  write_atomically(out, header);
  fmt::print("wrote {}: {}\n", out.string(), summary);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("export", "Write the tuned kernels and their dispatch as one self-contained CUDA header");
  auto o = std::make_shared<ExportCommandOptions>();
  sub->add_option("--out,-o", o->out, "Header to write, e.g. tuned_sgemm.cuh")->required();
  sub->add_option("--device,-d", o->device,
                  "'all', or one database device: CUDA index, database position, UUID or unique part of its name")
      ->capture_default_str();
  sub->add_option("--namespace", o->name_space, "C++ namespace of the header's API")->capture_default_str();
  sub->add_flag("--check", o->check,
                "Write nothing; exit 1 if the file differs from what would be exported now (0 if identical)");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_export(global, *o); }; });
}

}  // namespace cmt::cli
