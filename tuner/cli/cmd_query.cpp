// cm-tune query: which kernel the exported dispatch runs for a problem and why (predicted times and
// runners-up), and the best configurations measured on it.
#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <limits>

#include "cli/app.hpp"
#include "cli/sizes.hpp"
#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "export/model_check.hpp"
#include "record/ranking.hpp"

namespace cmt::cli {

namespace {

struct QueryOptions {
  std::string device = "0";
  int64_t size = 0, m = 0, n = 0, k = 0;
  int top = 5;
  bool json = false;
  OperandOptions operands;
};

/// Every model's prediction for the call (JSON), and for people only the runners-up, the first
/// `runners_up` the call can run after the chosen kernel: the kernel, its predicted time and rate,
/// how much slower than the chosen kernel's, and whether it extrapolates.
output::Table prediction_table(const DispatchChoice& choice, int runners_up, const std::optional<double>& chosen_us,
                               const std::function<std::string(int)>& label,
                               const std::function<double(double)>& tflops_at) {
  using output::Column;
  output::Table table({Column("kernel").width(70), Column("predicted_us").right().width(12).precision(1).suffix(" us"),
                       Column("tflops").right().width(13).precision(2).suffix(" TF/s").show(output::Show::human),
                       Column("relative").gap("").show(output::Show::human),
                       Column("note").gap("").show(output::Show::human), Column("usable").show(output::Show::data),
                       Column("in_domain").show(output::Show::data)});
  int shown = 0;
  for (const auto& pr : choice.predictions) {
    // The best predictions after the chosen kernel's, among kernels the call may run.
    const bool runner_up = pr.usable && pr.kernel != choice.kernel && shown < runners_up;
    if (runner_up) ++shown;
    auto row = table.add_row(runner_up ? output::Show::all : output::Show::data);
    row.set("kernel", label(pr.kernel))
        .set("predicted_us", pr.us)
        .set("usable", pr.usable)
        .set("in_domain", pr.in_domain)
        .set("tflops", tflops_at(pr.us))
        .set("relative", chosen_us ? fmt::format("  {:+.1f}%", 100.0 * (pr.us / *chosen_us - 1.0)) : "")
        .set("note", pr.in_domain ? "" : "  (extrapolated: not measured near this shape)");
  }
  return table;
}

/// The best trials of the problem, in ranking order.
output::Table trial_table(const Problem& p, const std::vector<TrialRecord>& top) {
  using output::Column;
  output::Table table({Column("template").width(18), Column("params", "parameters").width(52),
                       Column("median_ms").show(output::Show::data), Column("tflops", "TF/s").right().width(8).precision(2),
                       Column("ratio_to_cublas", "ratio").right().width(8).precision(3).suffix("x").null_text("n/a"),
                       Column("requirements").gap("  ")});
  for (const auto& t : top)
    table.add_row()
        .set("template", t.template_name)
        .set("params", t.params)
        .set("median_ms", rank_time(t))
        .set("tflops", p.flops() / rank_time(t) / 1e9)
        .set("ratio_to_cublas", t.ratio_to_cublas)   // i32: no cuBLAS baseline, n/a
        .set("requirements", t.requirements.to_string());
  return table;
}

int run_query(const GlobalOptions& global, const QueryOptions& o) {
  Problem p;
  if (o.size > 0) {
    if (o.m || o.n || o.k) throw UsageError("give either --size or --m/--n/--k, not both");
    p = {o.size, o.size, o.size};
  } else {
    if (o.m <= 0 || o.n <= 0 || o.k <= 0) throw UsageError("give --size N, or all of --m, --n and --k (each >= 1)");
    p = {o.m, o.n, o.k};
  }
  const std::vector<Problem> expanded = apply_operand_options({p}, o.operands);
  if (expanded.size() != 1) throw UsageError("query takes one problem: give one --layout, --batch and --dtype");
  p = expanded.front();
  if (!std::filesystem::exists(database_path(global)))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", database_path(global).string()));
  Store store(database_path(global), OpenMode::read);   // only reads: works on a database this user cannot write
  const DeviceRecord device = resolve_db_device(store, o.device);
  if (store.winners(device.id).empty()) {
    if (o.json)
      print_json(output::Record{{"device", output::Record{{"name", device.name}, {"uuid", device.uuid}}},
                                {"problem", p.to_string()},
                                {"dispatch", nullptr}});
    else
      fmt::print("{} on {} ({})\nnothing tuned for this device yet\n", p.to_string(), device.name, device.uuid);
    return 0;
  }
  const ExportModel model = device_export_model(store, device.id, global);
  const DispatchChoice choice = choose_kernel(model, 0, tight_call(p));
  if (choice.kernel < 0) throw UsageError(fmt::format("{}: {}", p.to_string(), choice.why));
  const ExportKernel& chosen = model.kernels.at(static_cast<size_t>(choice.kernel));
  const auto kernel_label = [&](int index) {
    const ExportKernel& k = model.kernels.at(static_cast<size_t>(index));
    return cmt::kernel_label(k.template_name, k.params);
  };
  const auto tflops_at = [&](double us) { return p.flops() / (us * 1e-6) / 1e12; };
  // Runners-up: the best predictions after the chosen kernel's, among kernels the call may run.
  std::vector<Prediction> runners_up;
  for (const auto& pr : choice.predictions)
    if (pr.usable && pr.kernel != choice.kernel && static_cast<int>(runners_up.size()) < std::max(0, o.top))
      runners_up.push_back(pr);
  std::optional<double> chosen_us = choice.predicted_us;
  for (const auto& pr : choice.predictions)
    if (!chosen_us && pr.kernel == choice.kernel) chosen_us = pr.us;

  // How far the chosen kernel's model missed on shapes it was not fitted on (leave one shape out).
  std::vector<double> held_out_errors;
  for (const HeldOutPoint& point : kernel_held_out(model, 0, choice.kernel)) held_out_errors.push_back(point.relative_error);
  const Spread held_out = spread_of(held_out_errors);

  // The top trials of this exact problem, in the order tune chooses winners by.
  std::vector<TrialRecord> top = ranked_passing(store.trials(device.id, p));
  if (static_cast<int>(top.size()) > o.top) top.resize(static_cast<size_t>(std::max(0, o.top)));
  const auto baseline = store.find_baseline(device.id, p);

  const output::Table predictions = prediction_table(choice, std::max(0, o.top), chosen_us, kernel_label, tflops_at);
  const output::Table top_table = trial_table(p, top);
  if (o.json) {
    const output::Record dispatch{
        {"kernel", kernel_label(choice.kernel)},
        {"template", chosen.template_name},
        {"params", chosen.params},
        {"name_expression", chosen.name_expression},
        {"requirements", chosen.requirements.to_string()},
        // The type or class its kernel computes: a tf32x3 call (sgemm_tf32x3) may run the f32 path.
        {"dtype", dtype_name(choice.dtype)},
        {"predicted_us", chosen_us},
        {"splits", choice.splits},
        {"held_out_error_median", held_out.count ? output::Value(held_out.median) : output::Value()},
        {"held_out_points", held_out.count}};
    print_json(output::Record{{"device", output::Record{{"name", device.name}, {"uuid", device.uuid}}},
                              {"problem", p.to_string()},
                              {"tuned", choice.exact},
                              {"dispatch", dispatch},
                              {"dispatch_reason", choice.why},
                              {"dispatch_kind", choice.reason},
                              {"served", choice.served},
                              {"predictions", output::table_records(predictions)},
                              {"cublas_tflops", baseline ? output::Value(baseline->gflops / 1e3) : output::Value()},
                              {"top", output::table_records(top_table)}});
    return 0;
  }
  fmt::print("{} on {} ({})\n", p.to_string(), device.name, device.uuid);
  fmt::print("dispatch: {}\n", choice.why);
  const std::string held_out_text =
      held_out.count == 0 ? "; its model has no held-out error (measured at one shape)"
                          : fmt::format("; its model's held-out error: median {:.1f}% over {} shape{}", 100 * held_out.median,
                                        held_out.count, held_out.count == 1 ? "" : "s");
  fmt::print("  {}{}{}, requirements: {}\n", kernel_label(choice.kernel),
             choice.splits > 1 ? fmt::format(" on {} slices of K", choice.splits) : "",
             chosen_us ? fmt::format("  predicted {:.1f} us ({:.2f} TF/s{})", *chosen_us, tflops_at(*chosen_us), held_out_text)
                       : "",
             chosen.requirements.to_string());
  if (!runners_up.empty()) {
    fmt::print("\nrunners-up by predicted time (of {} modelled kernels; {} the call can run):\n", choice.predictions.size(),
               std::count_if(choice.predictions.begin(), choice.predictions.end(), [](const auto& x) { return x.usable; }));
    print_text(predictions, {"  ", false});
  }
  if (!top.empty()) {
    fmt::print("\nmeasured on {}: top {}{}:\n", p.to_string(), top.size(),
               baseline ? fmt::format(" (cuBLAS {:.2f} TF/s)", baseline->gflops / 1e3) : "");
    print_text(top_table, {"  "});
  }
  return 0;
}

}  // namespace

void add_query_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("query", "Show the best stored configurations for a device and problem");
  auto o = std::make_shared<QueryOptions>();
  sub->add_option("--device,-d", o->device,
                  "One database device: CUDA index, database position, UUID or unique part of its name")
      ->capture_default_str();
  // The same limits as tune's --sizes.
  const auto dimension = whole_number(1, k_max_dimension);
  add_operand_options(*sub, o->operands, true);
  sub->add_option("--size", o->size, "Square problem N x N x N")->check(dimension);
  sub->add_option("--m", o->m, "Rows of A and C")->check(dimension);
  sub->add_option("--n", o->n, "Columns of B and C")->check(dimension);
  sub->add_option("--k", o->k, "Columns of A, rows of B")->check(dimension);
  sub->add_option("--top", o->top, "How many runners-up and best trials to list")
      ->capture_default_str()
      ->check(whole_number(0, std::numeric_limits<int>::max()));
  sub->add_flag("--json", o->json, "Machine-readable output");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_query(global, *o); }; });
}

}  // namespace cmt::cli
