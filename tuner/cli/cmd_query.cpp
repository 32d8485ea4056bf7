// cm-tune query: which kernel the exported dispatch runs for a problem and why (predicted times and
// runners-up), and the best configurations measured on it.
#include <algorithm>
#include <fmt/format.h>
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
      print_json({{"device", {{"name", device.name}, {"uuid", device.uuid}}}, {"problem", p.to_string()}, {"dispatch", nullptr}});
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

  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& t : top)
      rows.push_back({{"template", t.template_name},
                      {"params", t.params},
                      {"median_ms", rank_time(t)},
                      {"tflops", p.flops() / rank_time(t) / 1e9},
                      {"ratio_to_cublas", t.ratio_to_cublas ? nlohmann::json(*t.ratio_to_cublas) : nlohmann::json()},
                      {"requirements", t.requirements.to_string()}});
    nlohmann::json predictions = nlohmann::json::array();
    for (const auto& pr : choice.predictions)
      predictions.push_back({{"kernel", kernel_label(pr.kernel)},
                             {"predicted_us", pr.us},
                             {"usable", pr.usable},
                             {"in_domain", pr.in_domain}});
    print_json({{"device", {{"name", device.name}, {"uuid", device.uuid}}},
                {"problem", p.to_string()},
                {"tuned", choice.exact},
                {"dispatch", {{"kernel", kernel_label(choice.kernel)},
                              {"template", chosen.template_name},
                              {"params", chosen.params},
                              {"name_expression", chosen.name_expression},
                              {"requirements", chosen.requirements.to_string()},
                              {"predicted_us", chosen_us ? nlohmann::json(*chosen_us) : nlohmann::json()},
                              {"splits", choice.splits},
                              {"held_out_error_median", held_out.count ? nlohmann::json(held_out.median) : nlohmann::json()},
                              {"held_out_points", held_out.count}}},
                {"dispatch_reason", choice.why},
                {"dispatch_kind", choice.reason},
                {"served", choice.served},
                {"predictions", predictions},
                {"cublas_tflops", baseline ? nlohmann::json(baseline->gflops / 1e3) : nlohmann::json()},
                {"top", rows}});
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
    for (const auto& pr : runners_up)
      fmt::print("  {:<70} {:>9.1f} us {:>8.2f} TF/s{}{}\n", kernel_label(pr.kernel), pr.us, tflops_at(pr.us),
                 chosen_us ? fmt::format("  {:+.1f}%", 100.0 * (pr.us / *chosen_us - 1.0)) : "",
                 pr.in_domain ? "" : "  (extrapolated: not measured near this shape)");
  }
  if (!top.empty()) {
    fmt::print("\nmeasured on {}: top {}{}:\n", p.to_string(), top.size(),
               baseline ? fmt::format(" (cuBLAS {:.2f} TF/s)", baseline->gflops / 1e3) : "");
    fmt::print("  {:<18} {:<52} {:>8} {:>8}  {}\n", "template", "parameters", "TF/s", "ratio", "requirements");
    for (const auto& t : top)
      fmt::print("  {:<18} {:<52} {:>8.2f} {:>8}  {}\n", t.template_name, t.params, p.flops() / rank_time(t) / 1e9,
                 t.ratio_to_cublas ? fmt::format("{:.3f}x", *t.ratio_to_cublas) : "n/a",   // i32: no cuBLAS baseline
                 t.requirements.to_string());
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
