#include "report/report_data.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "measure/tolerance.hpp"
#include "record/ranking.hpp"

namespace cmt::report {

// Named, not anonymous: a unity build compiles this file with the other report files' helpers.
namespace report_data_detail {

/// A rate in T/s of a problem done in `ms` milliseconds.
double rate_of(const Problem& p, double ms) { return p.flops() / (ms * 1e9); }

std::string type_list(const std::vector<DType>& dtypes) {
  std::string out;
  for (const DType d : dtypes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
  return out;
}

/// The outcome's position in k_outcomes.
size_t outcome_index(Outcome o) {
  return static_cast<size_t>(std::find(std::begin(k_outcomes), std::end(k_outcomes), o) - std::begin(k_outcomes));
}

/// The types to show: those requested (each tuned on the device), or every tuned one.
std::vector<DType> shown_types(const ReportRequest& request, const std::set<DType>& tuned, const DeviceRecord& device,
                               const std::string& database) {
  if (request.dtypes.empty()) return {tuned.begin(), tuned.end()};
  std::vector<DType> untuned;
  for (const DType d : request.dtypes)
    if (!tuned.count(d)) untuned.push_back(d);
  if (!untuned.empty())
    throw UsageError(fmt::format("{} has no tuned problems of type {} in {}; its tuned problems are of type {}",
                                 device.name, type_list(untuned), database,
                                 type_list(std::vector<DType>(tuned.begin(), tuned.end()))));
  std::vector<DType> out = request.dtypes;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

SpeedPlot speed_plot(Store& store, int64_t device_id, DType dtype, const std::vector<Problem>& problems,
                     const std::map<Problem, std::vector<TrialRecord>>& trials) {
  SpeedPlot plot;
  plot.dtype = dtype;
  std::map<std::string, SpeedSeries> families;
  SpeedSeries cublas{"cuBLAS", true, {}};
  for (const Problem& p : problems) {
    if (p.dtype != dtype) continue;
    ++plot.problems;
    std::map<std::string, const TrialRecord*> best;
    if (const auto it = trials.find(p); it != trials.end())
      for (const TrialRecord& t : it->second) {
        if (!passed(t)) continue;
        const TrialRecord*& b = best[t.template_name];
        if (!b || ranks_before(t, *b)) b = &t;
      }
    for (const auto& [family, t] : best) {
      SpeedSeries& s = families[family];
      s.name = family;
      s.points.push_back({p, rate_of(p, rank_time(*t)), rank_time(*t), kernel_label(t->template_name, t->params)});
    }
    if (!type_info(dtype).cublas_baseline) continue;
    if (const auto baseline = store.find_baseline(device_id, p); baseline && baseline->median_ms > 0)
      cublas.points.push_back({p, rate_of(p, baseline->median_ms), baseline->median_ms, "cuBLAS"});
  }
  for (auto& [name, s] : families) plot.series.push_back(std::move(s));
  if (!cublas.points.empty()) plot.series.push_back(std::move(cublas));
  return plot;
}

Roofline roofline(const DeviceInfo& info, const std::vector<DType>& dtypes, const std::vector<WinnerRecord>& winners) {
  Roofline r;
  // The peaks of every type or class stored as a shown type is: f32 is held against the CUDA cores'
  // FP32 peak, and the tf32x3 class, which computes FP32 data on the tensor cores, against its own.
  std::set<DType> storages;
  for (const DType d : dtypes) storages.insert(storage_of(d));
  for (const TypeInfo& t : k_types) {
    if (!storages.count(t.storage)) continue;
    const Peak peak = type_peak_of(info, t.dtype);
    if (!(peak.rate > 0)) continue;
    const auto same = std::find_if(r.roofs.begin(), r.roofs.end(), [&](const Roof& x) {
      return x.rate == peak.rate && x.tensor_cores == peak.tensor_cores;
    });
    if (same != r.roofs.end()) {   // one peak serving two types: "(f32, ...)"
      same->name.insert(same->name.size() - 1, fmt::format(", {}", t.name));
      continue;
    }
    r.roofs.push_back({fmt::format("{} ({})", peak.name, t.name), peak.rate, peak.tensor_cores});
  }
  std::sort(r.roofs.begin(), r.roofs.end(), [](const Roof& a, const Roof& b) { return a.rate < b.rate; });
  r.bandwidth_gbs = info.memory_bandwidth_gbs();
  for (const WinnerRecord& w : winners)
    if (w.gflops > 0)
      r.winners.push_back({w.problem, w.template_name, kernel_label(w.template_name, w.params),
                           w.problem.flops() / static_cast<double>(problem_bytes(w.problem)), w.gflops / 1e3});
  std::string note = fmt::format(
      "Roofs: the theoretical peaks cm-tune devices reports, computed as it does from what the database stores of "
      "the GPU ({} SMs at {:.0f} MHz, sm_{}{}",
      info.sm_count, info.clock_khz / 1000.0, info.cc_major, info.cc_minor);
  if (r.bandwidth_gbs > 0)
    note += fmt::format("; memory {}-bit at {:.0f} MHz, {:.0f} GB/s", info.memory_bus_bits, info.memory_clock_khz / 1000.0,
                        r.bandwidth_gbs);
  note += "): the database stores no measured peak, so each is the element type table's (core/dtype).";
  if (r.roofs.empty()) note += " It stores no clock for this GPU, so no compute roof is drawn.";
  if (!(r.bandwidth_gbs > 0)) note += " It stores no memory clock or bus width, so no memory roof is drawn.";
  note += " Intensity: 2 M N K batch operations over the bytes of A and B read and C written once.";
  r.note = note;
  return r;
}

Landscape landscape(Store& store, int64_t device_id, const Problem& p, bool requested,
                    const std::map<Problem, std::vector<TrialRecord>>& trials) {
  Landscape l;
  l.problem = p;
  l.requested = requested;
  for (const WinnerRecord& w : store.winners(device_id, p))
    if (w.scope == "overall") l.winner_trial = w.trial_id;
  if (type_info(p.dtype).cublas_baseline)
    if (const auto baseline = store.find_baseline(device_id, p); baseline && baseline->median_ms > 0)
      l.cublas_rate = rate_of(p, baseline->median_ms);
  const auto it = trials.find(p);
  if (it == trials.end()) return l;
  std::map<std::string, OutcomeBar> bars;
  std::map<std::string, std::map<std::pair<int64_t, int64_t>, HeatCell>> cells;
  for (const TrialRecord& t : it->second) {
    OutcomeBar& bar = bars[t.template_name];
    bar.template_name = t.template_name;
    ++bar.counts.at(outcome_index(t.outcome));
  }
  for (const TrialRecord& t : ranked_passing(it->second)) {
    const double rate = rate_of(p, rank_time(t));
    const bool winner = l.winner_trial && *l.winner_trial == t.id;
    l.trials.push_back({t.id, t.template_name, t.params, t.shape.tile_m, t.shape.tile_n, rate, winner});
    HeatCell& c = cells[t.template_name][{t.shape.tile_m, t.shape.tile_n}];
    if (c.trials++ == 0) {   // ranked: the first is the best
      c.bm = t.shape.tile_m;
      c.bn = t.shape.tile_n;
      c.best_rate = rate;
      c.best_params = t.params;
    }
    c.winner = c.winner || winner;
  }
  for (auto& [name, bar] : bars) l.outcomes.push_back(bar);
  for (auto& [name, family] : cells) {
    HeatMap map;
    map.template_name = name;
    std::set<int64_t> bms, bns;
    for (auto& [tile, cell] : family) {
      bms.insert(cell.bm);
      bns.insert(cell.bn);
      map.cells.push_back(cell);
    }
    map.bms.assign(bms.begin(), bms.end());
    map.bns.assign(bns.begin(), bns.end());
    l.heat_maps.push_back(std::move(map));
  }
  return l;
}

/// The K most tuned problems of the shown winners have (the larger of equals), else the default.
int64_t most_common_k(const std::vector<WinnerRecord>& winners) {
  std::map<int64_t, int> counts;
  for (const WinnerRecord& w : winners) ++counts[w.problem.k];
  int64_t best = k_default_dispatch_k;
  int most = 0;
  for (const auto& [k, count] : counts)
    if (count >= most) best = k, most = count;
  return best;
}

DispatchMap dispatch_map(const ExportModel& model, DType dtype, int64_t k, const std::vector<int64_t>& sizes) {
  DispatchMap map;
  map.dtype = dtype;
  map.k = k;
  map.sizes = sizes;
  for (const int64_t m : sizes)
    for (const int64_t n : sizes) {
      const DispatchChoice choice = choose_kernel(model, 0, tight_call(Problem::make(m, n, k, false, false, 1, dtype)));
      DispatchCell cell;
      cell.m = m;
      cell.n = n;
      cell.kernel = choice.kernel;
      cell.us = choice.predicted_us ? *choice.predicted_us : choice.modelled_us;
      cell.splits = choice.splits;
      cell.exact = choice.exact;
      cell.why = choice.why;
      map.cells.push_back(std::move(cell));
    }
  for (const ExportEntry& e : model.devices.at(0).entries)
    if (e.problem.dtype == dtype && e.problem.k == k && e.problem.layout() == "nn" && e.problem.batch == 1)
      map.tuned.push_back(e.problem);
  return map;
}

}  // namespace report_data_detail

using namespace report_data_detail;

DeviceInfo stored_device_info(const DeviceRecord& d) {
  DeviceInfo info;
  info.name = d.name;
  info.uuid = d.uuid;
  info.cc_major = d.cc_major;
  info.cc_minor = d.cc_minor;
  info.sm_count = d.sm_count;
  info.clock_khz = d.clock_khz;
  info.memory_clock_khz = d.memory_clock_khz;
  info.memory_bus_bits = d.memory_bus_bits;
  info.memory_bytes = static_cast<size_t>(std::max<int64_t>(0, d.memory_bytes));
  info.l2_bytes = static_cast<int>(std::min<int64_t>(d.l2_bytes, std::numeric_limits<int>::max()));
  info.driver_version = d.driver_version;
  info.runtime_version = d.runtime_version;
  return info;
}

double problem_size(const Problem& p) {
  return std::cbrt(static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
                   static_cast<double>(p.batch));
}

std::vector<int64_t> log_grid(int64_t lo, int64_t hi, int cells) {
  if (cells < 2 || lo < 1 || hi <= lo)
    throw UsageError(fmt::format("the dispatch map's grid needs at least 2 sizes from a smallest of at least 1 to a "
                                 "larger largest (asked for {} from {} to {})",
                                 cells, lo, hi));
  std::vector<int64_t> out;
  for (int i = 0; i < cells; ++i) {
    const double v = static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo),
                                                        static_cast<double>(i) / (cells - 1));
    const int64_t rounded = std::llround(v);
    if (out.empty() || rounded > out.back()) out.push_back(rounded);
  }
  return out;
}

ReportData gather_report(Store& store, const ReportRequest& request, const TemplateDesc& generic_default) {
  const std::string database = store.file().string();
  const auto device = store.find_device(request.device_id);
  if (!device) throw UsageError(fmt::format("device id {} is not in {}", request.device_id, database));

  std::vector<WinnerRecord> all_winners;
  std::set<DType> tuned;
  for (WinnerRecord& w : store.winners(device->id))
    if (w.scope == "overall") {
      tuned.insert(w.problem.dtype);
      all_winners.push_back(std::move(w));
    }
  if (all_winners.empty())
    throw UsageError(fmt::format("{} ({}) has no tuned problems (no winners) in {}; run `cm-tune tune` first", device->name,
                                 device->uuid, database));
  const std::vector<DType> dtypes = shown_types(request, tuned, *device, database);
  std::vector<WinnerRecord> winners;
  for (const WinnerRecord& w : all_winners)
    if (std::find(dtypes.begin(), dtypes.end(), w.problem.dtype) != dtypes.end()) winners.push_back(w);
  std::sort(winners.begin(), winners.end(), [](const auto& a, const auto& b) { return a.problem < b.problem; });
  std::vector<Problem> problems;
  for (const WinnerRecord& w : winners) problems.push_back(w.problem);

  // Every trial of the device, by problem: read once.
  std::map<Problem, std::vector<TrialRecord>> trials;
  for (TrialRecord& t : store.trials(device->id)) trials[t.problem].push_back(std::move(t));

  // The landscape's problem: the one requested, which must have trials here; else the largest of the
  // problems searched in full (calibration's shapes, where only the leaders ran, have far fewer trials).
  size_t most_trials = 0;
  for (const Problem& p : problems) most_trials = std::max(most_trials, trials[p].size());
  std::optional<Problem> largest;
  for (const Problem& p : problems)   // of equals, the first (nn before the other layouts)
    if (2 * trials[p].size() >= most_trials && (!largest || p.flops() > largest->flops())) largest = p;
  Problem chosen = largest.value_or(problems.front());
  if (request.problem) {
    if (!trials.count(*request.problem)) {
      std::string some;
      for (size_t i = 0; i < problems.size() && i < 8; ++i) some += (i ? ", " : "") + problems[i].to_string();
      if (problems.size() > 8) some += fmt::format(", ... ({} in all)", problems.size());
      throw UsageError(fmt::format("--problem {}: not tuned on {} in {}; tuned problems: {}",
                                   request.problem->to_string(), device->name, database, some));
    }
    chosen = *request.problem;
  }
  const std::vector<int64_t> grid = log_grid(request.grid_min, request.grid_max, request.grid_cells);

  // The dispatch table export writes for the device's model, of the types shown.
  ExportOptions options;
  options.device_ids = table_device_ids(store, device->id);
  for (const DType d : dtypes)
    if (header_computes(d)) options.dtypes.push_back(d);
  ReportData data(build_export_model(store, options, generic_default));
  data.database = database;
  data.device = *device;
  data.info = stored_device_info(*device);
  data.dtypes = dtypes;
  for (const int64_t id : options.device_ids)
    if (const auto d = store.find_device(id)) data.table_devices.push_back(*d);
  data.content_hash = data.model.content_hash;
  data.checks = check_held_out(data.model);

  for (const DType d : dtypes) data.speed.push_back(speed_plot(store, device->id, d, problems, trials));
  data.roofline = roofline(data.info, dtypes, winners);
  data.landscape = landscape(store, device->id, chosen, request.problem.has_value(), trials);
  data.dispatch_k_requested = request.dispatch_k.has_value();
  const int64_t k = request.dispatch_k.value_or(most_common_k(winners));
  for (const DType d : dtypes)
    if (header_computes(d)) data.dispatch.push_back(dispatch_map(data.model, d, k, grid));

  for (const WinnerRecord& w : winners) {
    WinnerRow row;
    row.winner = w;
    row.trial = store.find_trial(w.trial_id);
    if (type_info(w.problem.dtype).cublas_baseline) row.baseline = store.find_baseline(device->id, w.problem);
    if (const auto it = trials.find(w.problem); it != trials.end())
      for (const TrialRecord& t : it->second) ++row.outcomes.at(outcome_index(t.outcome));
    data.winners.push_back(std::move(row));
  }
  return data;
}

output::Table winners_table(const ReportData& data) {
  using output::Column;
  output::Table table({Column("problem"), Column("template"), Column("rate").right(), Column("cublas", "cuBLAS").right(),
                       Column("ratio", "ratio to cuBLAS").right().precision(3).suffix("x").null_text("n/a"),
                       Column("outcomes", "ok/wrong/failed/abandoned/skipped").right(),
                       Column("error", "error / tolerance").right().precision(3).null_text("-"),
                       Column("error_units", "error (2^-24 units)").right().precision(2).null_text("-"),
                       Column("simt_units", "SIMT's error (2^-24 units)").right().precision(2).null_text("-"),
                       Column("requirements"), Column("params", "parameters")});
  for (const WinnerRow& row : data.winners) {
    const WinnerRecord& w = row.winner;
    const TypeInfo& type = type_info(w.problem.dtype);
    const auto count = [&](Outcome o) { return row.outcomes.at(outcome_index(o)); };
    const int failed = count(Outcome::compile_error) + count(Outcome::launch_error) + count(Outcome::crashed) +
                       count(Outcome::timeout);
    auto r = table.add_row();
    r.set("problem", w.problem.to_string())
        .set("template", w.template_name)
        .set("params", w.params)
        .set("rate", w.gflops / 1e3, fmt::format("{:.2f} {}", w.gflops / 1e3, type.rate_unit))
        .set("outcomes", fmt::format("{}/{}/{}/{}/{}", count(Outcome::ok), count(Outcome::wrong), failed,
                                     count(Outcome::abandoned), count(Outcome::skipped)))
        .set("requirements", w.requirements.to_string());
    if (row.baseline && row.baseline->median_ms > 0) {
      const double cublas = rate_of(w.problem, row.baseline->median_ms);
      r.set("cublas", cublas, fmt::format("{:.2f} {}", cublas, type.rate_unit));
    } else {
      r.set("cublas", output::Value(), type.cublas_baseline ? "-" : "n/a");
    }
    if (type.cublas_baseline && w.ratio_to_cublas > 0) r.set("ratio", w.ratio_to_cublas);
    if (type.exact) {
      r.set("error", output::Value(), "exact");
    } else if (row.trial && row.trial->max_error_ratio) {
      r.set("error", *row.trial->max_error_ratio);
      // Held to an FP64 reference: the error and the FP32 SIMT reference's on the same data.
      if (type.reference == Reference::fp64) {
        r.set("error_units", fp32_error_units(*row.trial->max_error_ratio, w.problem.k));
        if (row.trial->simt_error_ratio) r.set("simt_units", fp32_error_units(*row.trial->simt_error_ratio, w.problem.k));
      }
    }
  }
  return table;
}

}  // namespace cmt::report
