// cm-tune query: the best configurations stored for a device and problem, or the fallback dispatch.
#include <algorithm>
#include <fmt/format.h>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "tune/ranking.hpp"

namespace cmt::cli {

namespace {

struct QueryOptions {
  std::string device = "0";
  int64_t size = 0, m = 0, n = 0, k = 0;
  int top = 5;
  bool json = false;
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
  if (!std::filesystem::exists(database_path(global)))
    throw UsageError(fmt::format("database {} does not exist; run cm-tune tune first", database_path(global).string()));
  Store store(database_path(global));
  const DeviceRecord device = resolve_db_device(store, o.device);
  const auto entries = dispatch_entries(store, device.id);
  const DispatchChoice choice = choose_kernel(entries, tight_call(p));

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
    print_json({{"device", {{"name", device.name}, {"uuid", device.uuid}}},
                {"problem", p.to_string()},
                {"tuned", choice.exact},
                {"dispatch", choice.kernel ? winner_json(*choice.kernel) : nlohmann::json()},
                {"dispatch_reason", choice.why},
                {"cublas_tflops", baseline ? nlohmann::json(baseline->gflops / 1e3) : nlohmann::json()},
                {"top", rows}});
    return 0;
  }
  fmt::print("{} on {} ({})\n", p.to_string(), device.name, device.uuid);
  if (!choice.entry) {
    fmt::print("nothing tuned for this device yet\n");
    return 0;
  }
  if (!choice.exact) fmt::print("not tuned; ");
  fmt::print("dispatch: {}\n", choice.why);
  if (choice.kernel)
    fmt::print("  {}[{}]  {:.2f} TF/s on {} ({:.3f}x cuBLAS), requirements: {}\n", choice.kernel->template_name,
               choice.kernel->params, choice.kernel->gflops / 1e3, choice.kernel->problem.to_string(),
               choice.kernel->ratio_to_cublas, choice.kernel->requirements.to_string());
  if (!top.empty()) {
    fmt::print("\ntop {} of {}{}:\n", top.size(), p.to_string(),
               baseline ? fmt::format(" (cuBLAS {:.2f} TF/s)", baseline->gflops / 1e3) : "");
    fmt::print("  {:<18} {:<52} {:>8} {:>8}  {}\n", "template", "parameters", "TF/s", "ratio", "requirements");
    for (const auto& t : top)
      fmt::print("  {:<18} {:<52} {:>8.2f} {:>7.3f}x  {}\n", t.template_name, t.params, p.flops() / rank_time(t) / 1e9,
                 t.ratio_to_cublas.value_or(0.0), t.requirements.to_string());
  }
  return 0;
}

}  // namespace

void add_query_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("query", "Show the best stored configurations for a device and problem");
  auto o = std::make_shared<QueryOptions>();
  sub->add_option("--device,-d", o->device, "CUDA index, database device position, UUID or name")->capture_default_str();
  sub->add_option("--size", o->size, "Square problem N x N x N");
  sub->add_option("--m", o->m, "Rows of A and C");
  sub->add_option("--n", o->n, "Columns of B and C");
  sub->add_option("--k", o->k, "Columns of A, rows of B");
  sub->add_option("--top", o->top, "How many of the best trials to list")->capture_default_str();
  sub->add_flag("--json", o->json, "Machine-readable output");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_query(global, *o); }; });
}

}  // namespace cmt::cli
