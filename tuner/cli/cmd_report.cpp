// cm-tune report: what the database holds, as one self-contained HTML page of plots and tables
// (docs/REPORT.md). It only reads the database, and never touches a GPU.
#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "cli/app.hpp"
#include "cli/sizes.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "report/report_data.hpp"
#include "report/report_html.hpp"

namespace cmt::cli {

namespace {

struct ReportOptions {
  std::string out;
  std::string device;    // empty: the first database device with winners
  std::string dtype = "all";
  std::string problem;   // empty: the largest tuned problem
  int64_t k = 0;         // 0: the most common tuned K
};

/// The first database device with winners of one of `dtypes` (any type when empty), else the first
/// with any winners (whose report then says which types it has).
DeviceRecord first_tuned_device(Store& store, const std::vector<DType>& dtypes) {
  std::optional<DeviceRecord> tuned;
  for (const DeviceRecord& d : store.devices())
    for (const WinnerRecord& w : store.winners(d.id)) {
      if (dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), w.problem.dtype) != dtypes.end()) return d;
      if (!tuned) tuned = d;
    }
  if (tuned) return *tuned;
  throw UsageError(fmt::format("database {} has no tuned problems (no winners) to report; run `cm-tune tune` first",
                               store.file().string()));
}

int run_report(const GlobalOptions& global, const ReportOptions& o) {
  const std::filesystem::path db_file = database_path(global);
  if (!std::filesystem::exists(db_file))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", db_file.string()));
  const std::filesystem::path destination =
      output_destination(o.out, db_file, {"a report", "the HTML file to write, e.g. report.html"});

  report::ReportRequest request;
  if (o.dtype != "all") {   // all: every type tuned on the device
    request.dtypes = parse_dtype_list(o.dtype);
    if (request.dtypes.empty()) throw UsageError(fmt::format("--dtype: give {}, a comma list of them, or all", type_names(",")));
  }
  // One problem in the spelling --sizes takes for one (Problem::to_string's): MxNxK[:LAYOUT][:DTYPE]...
  if (!o.problem.empty()) request.problem = parse_problem(o.problem, k_max_dimension, k_max_batch, "in --problem");
  if (o.k > 0) request.dispatch_k = o.k;

  Store store(db_file, OpenMode::read);   // only reads: works on a database this user cannot write
  const DeviceRecord device = o.device.empty() ? first_tuned_device(store, request.dtypes)
                                               : resolve_db_device(store, o.device, /*ask_gpu=*/false);
  request.device_id = device.id;
  const report::ReportData data = report::gather_report(store, request, generic_default_template(global));
  write_file_atomically(destination, report::render_report(data));   // a link's destination; the link stays

  std::string types;
  for (const DType d : data.dtypes) types += (types.empty() ? "" : ", ") + std::string(dtype_name(d));
  if (!is_stream_file(destination))
    fmt::print("wrote {}: {}, {} tuned problem{} ({}); the landscape of {}; dispatch map{} at K={}\n", o.out,
               device.name, data.winners.size(), data.winners.size() == 1 ? "" : "s", types,
               data.landscape.problem.to_string(), data.dispatch.size() == 1 ? "" : "s",
               data.dispatch.empty() ? 0 : data.dispatch.front().k);
  return k_exit_success;
}

}  // namespace

void add_report_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("report", "Write what the database holds as one HTML page of plots and tables");
  auto o = std::make_shared<ReportOptions>();
  sub->add_option("--out,-o", o->out, "HTML file to write, e.g. report.html")->required()->check(non_empty_path());
  sub->add_option("--device,-d", o->device,
                  "One database device: position in the database, UUID or unique part of its name (default: the first "
                  "one tuned)")
      ->check(non_empty_value("a database position, a UUID or part of a name"));
  sub->add_option("--dtype", o->dtype, "Element types to show: f32, f64, i32, tf32x3, a comma list, or all (every one tuned)")
      ->capture_default_str();
  sub->add_option("--problem", o->problem,
                  "The problem whose search landscape to show, MxNxK[:LAYOUT][:DTYPE] (default: the largest tuned one)")
      ->check(non_empty_value("MxNxK"));
  sub->add_option("--k", o->k, "K of the dispatch map (default: the most common K of the tuned problems)")
      ->check(whole_number(1, k_max_dimension));
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_report(global, *o); }; });
}

}  // namespace cmt::cli
