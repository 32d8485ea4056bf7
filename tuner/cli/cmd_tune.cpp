// cm-tune tune: search, validate, time and store, for one device and a list of sizes.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fmt/format.h>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/progress.hpp"
#include "cli/sizes.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stop_signal.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/l2_flush.hpp"
#include "measure/measurer_pool.hpp"
#include "measure/tolerance.hpp"
#include "measure/worker_measurer.hpp"
#include "search/calibration.hpp"
#include "search/shard.hpp"
#include "space/space.hpp"
#include "tune/tuner.hpp"

namespace cmt::cli {

namespace {

struct TuneOptions {
  std::string device = "0";
  std::string sizes;
  OperandOptions operands;
  SpaceOptions space;
  int jobs = 0;
  bool retune = false;
  int64_t budget = 0;
  double time_limit = 0;
  double kernel_timeout = 0;
  uint64_t seed = 0;
  bool no_calibrate = false;
  std::string shard;   // "I/N" (search/shard.hpp); empty: the whole run
  bool json = false;
};

/// An i32 problem has no cuBLAS baseline (cuBLAS has no INT32 GEMM): its winner is compared with the
/// device's INT32 multiply-add peak and with the f32 winner stored for the same shape.
struct Int32Comparison {
  double peak_tops = 0;                 // DeviceInfo::int32_peak_tops
  double peak_fraction = 0;             // the winner's TOP/s over it
  Problem f32_problem;                  // the same shape in f32
  std::optional<double> f32_tflops;     // its stored overall winner, if any
  std::optional<double> ratio_to_f32;   // f32 winner's time / the i32 winner's time (> 1: faster)
};

/// A type validated against FP64 (tf32x3): its winner's largest error on the validation data and the
/// FP32 SIMT reference's (cuBLAS SGEMM) on the same data, in units of 2^-24 of the scale.
struct AccuracyReport {
  double error_units = 0;
  double simt_units = 0;
};

std::optional<AccuracyReport> accuracy_of(Store& store, const WinnerRecord& winner) {
  const std::optional<TrialRecord> t = store.find_trial(winner.trial_id);
  if (!t || !t->max_error_ratio || !t->simt_error_ratio) return std::nullopt;
  return AccuracyReport{fp32_error_units(*t->max_error_ratio, winner.problem.k),
                        fp32_error_units(*t->simt_error_ratio, winner.problem.k)};
}

Int32Comparison compare_int32(Store& store, const DeviceInfo& device, const WinnerRecord& winner) {
  Int32Comparison c;
  c.peak_tops = device.int32_peak_tops();
  c.peak_fraction = c.peak_tops > 0 ? winner.gflops / 1e3 / c.peak_tops : 0.0;
  c.f32_problem = winner.problem;
  c.f32_problem.dtype = DType::f32;
  for (const WinnerRecord& w : store.winners(winner.device_id, c.f32_problem))
    if (w.scope == "overall") {
      c.f32_tflops = w.gflops / 1e3;
      c.ratio_to_f32 = w.median_ms / winner.median_ms;
    }
  return c;
}

/// A row per problem (or, with `calibration`, per calibration shape, whose JSON rows are shorter):
/// its winner and cuBLAS's rate, and how its trials ended. i32 problems have no cuBLAS baseline, so
/// no ratio either; their JSON rows carry the INT32 comparison instead.
output::Table summary_table(const std::vector<ProblemSummary>& rows, bool calibration,
                            const std::map<Problem, Int32Comparison>& int32_comparisons,
                            const std::map<Problem, AccuracyReport>& accuracy) {
  using output::Column;
  using output::Show;
  std::vector<Column> columns = {
      Column("problem").width(24), Column("template", "best template").width(18).show(Show::human),
      Column("params", "parameters").width(44).show(Show::human),
      Column("tflops", "TF/s").right().width(8).precision(2).show(Show::human),
      Column("cublas_tflops", "cuBLAS").right().width(8).precision(2),
      Column("ratio").right().width(7).precision(3).suffix("x").show(Show::human),
      Column("counts", "ok/wrong/failed/abandoned/skipped").gap("  ").show(Show::human), Column("ok").show(Show::data),
      Column("winner").show(Show::data)};
  if (!calibration)
    for (const char* name : {"wrong", "failed", "abandoned", "skipped", "portable_winner", "int32_peak_tops",
                             "int32_peak_fraction", "f32_winner_tflops", "ratio_to_f32_winner", "error_units",
                             "simt_error_units"})
      columns.push_back(Column(name).show(Show::data));
  output::Table table(std::move(columns));
  for (const ProblemSummary& p : rows) {
    const bool baseline = type_info(p.problem.dtype).cublas_baseline;  // i32: none, so no ratio either
    auto row = table.add_row();
    row.set("problem", p.problem.to_string())
        .set("template", p.winner ? p.winner->template_name : "(none passed)")
        .set("params", p.winner ? p.winner->params : "")
        .set("tflops", p.winner ? output::Value(p.winner->gflops / 1e3) : output::Value())
        .set("cublas_tflops", p.baseline ? output::Value(p.baseline->gflops / 1e3) : output::Value())
        .set("ratio", p.winner && baseline ? output::Value(p.winner->ratio_to_cublas) : output::Value())
        .set("counts", fmt::format("{}/{}/{}/{}/{}", p.ok, p.wrong, p.failed, p.abandoned, p.skipped))
        .set("ok", p.ok)
        .set("winner", p.winner ? output::Value(winner_record(*p.winner)) : output::Value());
    if (!baseline) row.text("cublas_tflops", "n/a");
    if (p.winner && !baseline) row.text("ratio", "n/a");
    if (calibration) continue;
    row.set("wrong", p.wrong)
        .set("failed", p.failed)
        .set("abandoned", p.abandoned)
        .set("skipped", p.skipped)
        .set("portable_winner", p.portable ? output::Value(winner_record(*p.portable)) : output::Value());
    if (const auto it = int32_comparisons.find(p.problem); it != int32_comparisons.end()) {
      const Int32Comparison& c = it->second;
      row.set("int32_peak_tops", c.peak_tops)
          .set("int32_peak_fraction", c.peak_fraction)
          .set("f32_winner_tflops", c.f32_tflops)
          .set("ratio_to_f32_winner", c.ratio_to_f32);
    } else {
      row.omit("int32_peak_tops").omit("int32_peak_fraction").omit("f32_winner_tflops").omit("ratio_to_f32_winner");
    }
    if (const auto it = accuracy.find(p.problem); it != accuracy.end())
      row.set("error_units", it->second.error_units).set("simt_error_units", it->second.simt_units);
    else
      row.omit("error_units").omit("simt_error_units");
  }
  return table;
}

void print_summary(const TuneSummary& s, const DeviceInfo& device,
                   const std::map<Problem, Int32Comparison>& int32_comparisons,
                   const std::map<Problem, AccuracyReport>& accuracy) {
  fmt::print("\n{} ({}), {} candidates, {} trials measured, {} reused, {:.1f} s\n", device.name, device.arch(),
             s.candidates, s.trials_measured, s.trials_reused, s.wall_seconds);
  print_text(summary_table(s.problems, false, int32_comparisons, accuracy));
  if (!s.calibration.empty()) {
    fmt::print("calibration ({} kernels on {} shapes, for the exported dispatch's cost model):\n", s.calibration_candidates,
               s.calibration.size());
    print_text(summary_table(s.calibration, true, int32_comparisons, accuracy), {"", false});
  }
  for (const auto& [problem, c] : int32_comparisons) {
    const std::string f32 = c.ratio_to_f32 ? fmt::format("{:.3f}x the f32 winner at {} ({:.2f} TF/s)", *c.ratio_to_f32,
                                                         c.f32_problem.to_string(), *c.f32_tflops)
                                           : fmt::format("no f32 winner at {} to compare with", c.f32_problem.to_string());
    fmt::print("{}: no cuBLAS INT32 GEMM; {:.1f}% of the INT32 multiply-add peak ({:.1f} TOP/s), {}\n",
               problem.to_string(), 100.0 * c.peak_fraction, c.peak_tops, f32);
  }
  for (const auto& [problem, a] : accuracy)
    fmt::print("{}: largest error against FP64 {:.2f} units of 2^-24 of |alpha||A||B| + |beta||C|, FP32 SIMT "
               "(cuBLAS SGEMM) {:.2f} on the same data\n",
               problem.to_string(), a.error_units, a.simt_units);
}

/// The measuring process: this binary's hidden measure-worker command. CMTUNE_MEASURE_WORKER names
/// another program that speaks the protocol (the CPU tests' scripted measurer).
std::vector<std::string> worker_command(const GlobalOptions& global) {
  const char* other = std::getenv("CMTUNE_MEASURE_WORKER");
  std::vector<std::string> command{other && *other ? other : "/proc/self/exe"};
  if (global.verbose) command.push_back("--verbose");
  if (global.quiet) command.push_back("--quiet");
  command.push_back("measure-worker");
  return command;
}

/// The GPUs of one model in a run: their measuring processes, and the device record's GPU (the
/// first), whose identity the trials are stored under.
struct DeviceGroup {
  std::vector<std::unique_ptr<WorkerMeasurer>> workers;
  DeviceInfo lead;
  size_t free_memory_bytes = 0;   // the least of the group's GPUs
};

/// --device: one GPU (index, UUID or part of a name), a comma list of them, or all. Starts a
/// measuring process on each and groups them by model (name, compute capability, SMs): each model
/// is tuned for itself, its GPUs sharing the work.
std::vector<DeviceGroup> start_devices(const GlobalOptions& global, const TuneOptions& opts, const Preset& preset,
                                       uint64_t seed) {
  WorkerOptions base;
  base.command = worker_command(global);
  base.hello = {opts.device, preset.tune, seed};
  const auto start = [&](const std::string& spec) {
    WorkerOptions o = base;
    o.hello.device = spec;
    return std::make_unique<WorkerMeasurer>(o);
  };
  const bool all = opts.device == "all";
  std::vector<std::string> specs;
  if (all) {
    specs.push_back("0");
  } else {
    std::string rest = opts.device + ",";
    for (size_t comma; (comma = rest.find(',')) != std::string::npos; rest.erase(0, comma + 1)) {
      specs.push_back(rest.substr(0, comma));
      if (specs.back().empty())
        throw UsageError(fmt::format("--device '{}': an empty entry (a GPU's index, UUID or unique part of its name, "
                                     "a comma list of them, or all)", printable(opts.device)));
    }
  }
  std::vector<std::unique_ptr<WorkerMeasurer>> workers;
  const auto add = [&](const std::string& spec) {
    // A GPU that cannot even start its measuring process: the others tune without it.
    const auto leave_out = [&](const std::exception& e) {
      spdlog::warn("GPU {}: its measuring process does not start ({}); it is left out of the run", spec, e.what());
    };
    try {
      workers.push_back(start(spec));
    } catch (const InfraError& e) {
      if (specs.size() == 1 && !all) throw;
      leave_out(e);
    } catch (const StartError& e) {
      if (specs.size() == 1 && !all) throw;
      leave_out(e);
    }
  };
  for (const auto& spec : specs) add(spec);
  if (all && !workers.empty())
    for (int i = 1; i < workers.front()->device().visible_devices; ++i) add(std::to_string(i));
  if (workers.empty()) throw NoDeviceError(fmt::format("--device {}: no GPU could be started", opts.device));
  std::map<std::string, std::string> by_uuid;
  for (size_t i = 0; i < workers.size(); ++i) {
    const DeviceInfo& d = workers[i]->device();
    const auto [it, fresh] = by_uuid.emplace(d.uuid, all ? std::to_string(d.index) : specs[i]);
    if (!fresh)
      throw UsageError(fmt::format("--device '{}': '{}' and '{}' are the same GPU ({})", printable(opts.device), it->second,
                                   specs[i], d.uuid));
  }
  std::vector<DeviceGroup> groups;
  for (auto& w : workers) {
    const DeviceInfo& d = w->device();
    auto it = std::find_if(groups.begin(), groups.end(), [&](const DeviceGroup& g) {
      return model_identity(g.lead) == model_identity(d);
    });
    if (it == groups.end()) {
      groups.emplace_back();
      it = std::prev(groups.end());
      it->lead = d;
      it->free_memory_bytes = d.free_memory_bytes;
    }
    it->free_memory_bytes = std::min(it->free_memory_bytes, d.free_memory_bytes);
    it->workers.push_back(std::move(w));
  }
  return groups;
}

/// One model's tune: what the command prints and returns for it.
struct GroupOutcome {
  bool ran = false;
  int exit_code = 0;
  TuneSummary summary;
  DeviceInfo device;
  std::map<Problem, Int32Comparison> int32_comparisons;
  std::map<Problem, AccuracyReport> accuracy;
  std::string shares;       // "GPU 0 812, GPU 1 790": each GPU's measurements (several GPUs)
  output::Record json;
};

GroupOutcome tune_group(const GlobalOptions& global, const TuneOptions& opts, const SpaceChoice& choice,
                        const std::vector<Problem>& problems, const Shard& shard, uint64_t seed,
                        const std::string& command_line, DeviceGroup& group, bool several_models) {
  const auto& [templates, preset, only] = choice;
  DeviceInfo device = group.lead;
  device.free_memory_bytes = group.free_memory_bytes;
  std::vector<PoolMember> members;
  for (auto& w : group.workers)
    members.push_back({w.get(), fmt::format("GPU {} ({})", w->device().index, w->device().uuid)});
  MeasurerPool pool(std::move(members));
  const std::string gpus = [&] {
    std::string out;
    for (const auto& w : group.workers) out += (out.empty() ? "" : ",") + std::to_string(w->device().index);
    return out;
  }();
  Target target = target_of(device);
  target.layouts.clear();
  for (const Problem& p : problems)
    if (std::find(target.layouts.begin(), target.layouts.end(), p.layout()) == target.layouts.end())
      target.layouts.emplace_back(p.layout());
  target.dtypes.clear();
  for (const Problem& p : problems)
    if (std::find(target.dtypes.begin(), target.dtypes.end(), p.dtype) == target.dtypes.end())
      target.dtypes.push_back(p.dtype);
  const SearchSpace space = enumerate_space(templates, preset, target, only);
  // A problem no candidate computes (its layout, type or batch) can get no winner: say so first.
  std::vector<std::string> unserved;
  for (const Problem& p : problems)
    if (std::none_of(space.candidates.begin(), space.candidates.end(),
                     [&](const Candidate& c) { return c.tmpl->serves(c.values, p); }))
      unserved.push_back(p.to_string());
  if (!unserved.empty()) {
    std::string list;
    for (size_t i = 0; i < unserved.size() && i < 5; ++i) list += (i ? ", " : "") + unserved[i];
    if (unserved.size() > 5) list += fmt::format(" and {} more", unserved.size() - 5);
    throw UsageError(fmt::format("preset '{}'{} has no candidate for {} on {} ({}); `cm-tune list` shows its space "
                                 "and what prunes it",
                                 preset.name, only ? " with --template " + *only : "", list, device.name,
                                 device.arch()));
  }
  // Every problem's buffers stay resident for the whole run: check they fit before allocating.
  const size_t flush = l2_flush_bytes(device);
  // Calibration measures its shapes after the requested ones have released their buffers.
  std::vector<Problem> calibration;
  if (!opts.no_calibrate)
    for (const auto& c : calibration_shapes(problems)) calibration.push_back(c.problem);
  const bool calibration_larger = workspace_bytes(calibration) > workspace_bytes(problems);
  const std::vector<Problem>& resident = calibration_larger ? calibration : problems;
  const size_t needed = workspace_bytes(resident) + flush + (256u << 20);
  if (needed > device.free_memory_bytes) {
    const Problem* largest = &resident.front();
    for (const auto& p : resident)
      if (ProblemWorkspace::bytes_needed(p) > ProblemWorkspace::bytes_needed(*largest)) largest = &p;
    throw UsageError(fmt::format(
        "--sizes{} needs {:.1f} GiB of device memory ({} alone needs {:.1f} GiB); device {} ({}) has {:.1f} GiB free",
        calibration_larger ? " (its calibration shapes; --no-calibrate skips them)" : "", needed / 1073741824.0, largest->to_string(), ProblemWorkspace::bytes_needed(*largest) / 1073741824.0,
        gpus, device.name, device.free_memory_bytes / 1073741824.0));
  }

  GroupOutcome out;
  if (stop_signal()) return out;   // the caller says so
  Store store(database_path(global));
  TuneRequest req;
  req.device = device;
  req.problems = problems;
  req.preset = preset;
  for (const size_t i : shard_positions(space.candidates.size(), shard)) req.candidates.push_back(space.candidates[i]);
  if (shard.count > 1)
    spdlog::info("shard {}: {} of the space's {} candidates (positions {}, {}, {}, ...), on every problem",
                 shard.to_string(), req.candidates.size(), space.candidates.size(), shard.index,
                 shard.index + shard.count, shard.index + 2 * shard.count);
  if (req.candidates.empty() && !space.candidates.empty())
    spdlog::warn("shard {}: the space has {} candidates, none of them in this shard: nothing to measure",
                 shard.to_string(), space.candidates.size());
  req.jobs = opts.jobs;
  req.retune = opts.retune;
  if (opts.budget > 0) req.budget = opts.budget;
  if (opts.time_limit > 0) req.time_limit_s = opts.time_limit;
  req.seed = seed;
  req.command_line = command_line;
  req.calibrate = !opts.no_calibrate;
  if (opts.kernel_timeout > 0) req.kernel_timeout_s = opts.kernel_timeout;
  req.should_stop = [] { return stop_signal() != 0; };

  spdlog::info("tuning {} candidates of '{}' x {} problems on {} {} ({}, {}), database {}", req.candidates.size(),
               preset.name, problems.size(), group.workers.size() == 1 ? "device" : "devices", gpus, device.name,
               device.arch(), database_path(global).string());
  const NvrtcCompiler compiler;
  Progress progress(several_models ? "tune " + device.name : "tune", 0);
  const TuneSummary summary = run_tune(store, compiler, pool, req, [&](int64_t done, int64_t total, const std::string& st) {
    progress.set_total(total);
    progress.update(done, st);
  });
  progress.finish();
  std::map<Problem, Int32Comparison> int32_comparisons;
  for (const auto& p : summary.problems)
    if (!type_info(p.problem.dtype).cublas_baseline && p.winner)
      int32_comparisons.emplace(p.problem, compare_int32(store, device, *p.winner));
  std::map<Problem, AccuracyReport> accuracy;
  for (const auto& p : summary.problems)
    if (type_info(p.problem.dtype).reference == Reference::fp64 && p.winner)
      if (const auto a = accuracy_of(store, *p.winner)) accuracy.emplace(p.problem, *a);
  for (const auto& w : group.workers) {
    const WorkerStats& ws = w->stats();
    spdlog::info("measuring process of GPU {}: {} requests, {} restart{} after faults, {:.2f} s starting, {:.2f} s in "
                 "transport ({:.1f}% of the run)",
                 w->device().index, ws.requests, ws.restarts, ws.restarts == 1 ? "" : "s", ws.startup_seconds,
                 ws.transport_seconds,
                 100.0 * (ws.startup_seconds + ws.transport_seconds) / std::max(summary.wall_seconds, 1e-9));
  }
  if (summary.interrupted)
    spdlog::warn("stopped by {}: {}; everything measured is committed, and rerunning the same command continues",
                 stop_signal_name(), summary.stop_reason);
  else if (!summary.stop_reason.empty())
    spdlog::warn("stopped early: {}", summary.stop_reason);

  output::Record gpu_records;
  std::vector<output::Value> gpu_list;
  const std::vector<int64_t> shares = pool.finished();
  for (size_t i = 0; i < group.workers.size(); ++i) {
    const DeviceInfo& d = group.workers[i]->device();
    gpu_list.push_back(output::Record{{"index", d.index}, {"uuid", d.uuid}, {"jobs", shares[i]}});
  }
  out.json = output::Record{
      {"device", output::Record{{"index", device.index}, {"name", device.name}, {"uuid", device.uuid}, {"arch", device.arch()}}},
      {"gpus", gpu_list},
      {"preset", preset.name},
      {"shard", shard.to_string()},
      {"run_id", summary.run_id},
      {"candidates", summary.candidates},
      {"trials_measured", summary.trials_measured},
      {"trials_reused", summary.trials_reused},
      {"compile_cache_hits", summary.compile_cache_hits},
      {"compiled", summary.compiled},
      {"compile_failures", summary.compile_failures},
      {"wall_seconds", summary.wall_seconds},
      {"stopped_early", summary.stop_reason},
      {"problems", output::table_records(summary_table(summary.problems, false, int32_comparisons, accuracy))},
      {"calibration", output::table_records(summary_table(summary.calibration, true, int32_comparisons, accuracy))}};
  if (group.workers.size() > 1)
    for (size_t i = 0; i < group.workers.size(); ++i)
      out.shares += fmt::format("{}GPU {} {}", i ? ", " : "", group.workers[i]->device().index, shares[i]);
  out.ran = true;
  out.summary = summary;
  out.device = device;
  out.int32_comparisons = std::move(int32_comparisons);
  out.accuracy = std::move(accuracy);
  if (summary.interrupted)
    out.exit_code = 128 + stop_signal();  // 130 for SIGINT, 143 for SIGTERM, as shells report
  else
    out.exit_code = summary.stop_reason.empty() || opts.time_limit > 0 ? 0 : 1;
  return out;
}

int run_tune_command(const GlobalOptions& global, const TuneOptions& opts, const std::string& command_line) {
  const std::vector<Problem> problems = apply_operand_options(parse_sizes(opts.sizes), opts.operands);
  const SpaceChoice choice = load_space_choice(global, opts.space);  // a bad preset is reported without a GPU
  const Shard shard = opts.shard.empty() ? Shard{} : parse_shard(opts.shard);
  const uint64_t seed = opts.seed ? opts.seed : std::random_device{}();

  // Candidates are measured in separate processes, one per GPU, so a kernel that breaks the CUDA
  // context or never ends costs one trial and a restart; this process never touches a GPU.
  std::vector<DeviceGroup> groups = start_devices(global, opts, choice.preset, seed);
  if (stop_signal()) {  // noted during start-up (catch_stop_signals() is the first thing cm-tune does)
    spdlog::warn("stopped by {} before tuning anything", stop_signal_name());
    return 128 + stop_signal();
  }
  // Each model is tuned for itself, all at once; the database's locks order their writes.
  std::vector<std::future<GroupOutcome>> runs;
  for (auto& g : groups)
    runs.push_back(std::async(std::launch::async, [&, several = groups.size() > 1] {
      return tune_group(global, opts, choice, problems, shard, seed, command_line, g, several);
    }));
  std::vector<GroupOutcome> outcomes;
  std::exception_ptr error;
  for (auto& r : runs) {
    try {
      outcomes.push_back(r.get());
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  if (stop_signal() && outcomes.size() == groups.size() &&
      std::none_of(outcomes.begin(), outcomes.end(), [](const GroupOutcome& o) { return o.ran; })) {
    spdlog::warn("stopped by {} before tuning anything", stop_signal_name());
    return 128 + stop_signal();
  }
  int exit_code = 0;
  if (opts.json) {
    if (outcomes.size() == 1) {
      print_json(outcomes.front().json);
    } else {
      std::vector<output::Value> models;
      for (const auto& o : outcomes) models.push_back(o.json);
      print_json(output::Record{{"models", models}});
    }
  }
  for (const auto& o : outcomes) {
    if (!opts.json && o.ran) {
      print_summary(o.summary, o.device, o.int32_comparisons, o.accuracy);
      if (!o.shares.empty()) fmt::print("measurements per GPU: {}\n", o.shares);
    }
    exit_code = std::max(exit_code, o.exit_code);
  }
  return exit_code;
}

}  // namespace

void add_tune_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("tune", "Search, validate, time and store the best kernels for each size");
  auto opts = std::make_shared<TuneOptions>();
  sub->add_option("--device,-d", opts->device,
                  "CUDA device: index, UUID or unique part of its name; a comma list of them, or all (one measuring "
                  "process per GPU, the GPUs of one model sharing the work)")
      ->capture_default_str();
  sub->add_option("--sizes,-s", opts->sizes, "Sizes: 256..4096, 256..4096:256, 1000,1023, 4096x1024x512, 64x64x64:tn*4096, @FILE (one per line), or a mix")
      ->required();
  add_operand_options(*sub, opts->operands);
  add_space_options(*sub, opts->space);
  sub->add_option("--jobs,-j", opts->jobs, fmt::format("Compiler threads, 1 to {} (default: all cores)", k_max_jobs))
      ->check(whole_number(1, k_max_jobs));
  sub->add_flag("--retune", opts->retune, "Measure again trials already in the database");
  sub->add_option("--budget", opts->budget, "Sample this many candidates at random (seeded)")
      ->check(whole_number(1, std::numeric_limits<int64_t>::max()));
  sub->add_option("--time-limit", opts->time_limit, "Stop starting candidates after this many seconds")
      ->check(positive_seconds());
  sub->add_option("--kernel-timeout", opts->kernel_timeout,
                  "Seconds one launch may run before it counts as hung (default: 200x cuBLAS, at least 2 s)")
      ->check(positive_seconds());
  sub->add_option("--seed", opts->seed, "Seed for sampling and input data, 1 or more (default: random)")
      ->check(unsigned_number(1));
  sub->add_flag("--no-calibrate", opts->no_calibrate,
                "Skip calibration (timing the leaders on shapes of every class for the exported dispatch's model)");
  sub->add_option("--shard", opts->shard,
                  "I/N: measure this share of the candidates (every Nth, from position I, counting from 0) on every "
                  "problem; N such runs, each with its own database, do the work of one (join them with db merge)");
  sub->add_flag("--json", opts->json, "Machine-readable summary on stdout");
  add_db_option(*sub, global);
  sub->callback([&action, &global, opts] {
    global.stops_on_signal = true;
    action = [&global, opts] { return run_tune_command(global, *opts, global.command_line); };
  });
}

}  // namespace cmt::cli
