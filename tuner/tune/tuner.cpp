#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compile/compile_service.hpp"
#include "core/dtype.hpp"
#include "core/thread_pool.hpp"
#include "record/ranking.hpp"
#include "record/trial.hpp"
#include "search/calibration.hpp"
#include "search/searcher.hpp"
#include "space/target.hpp"

namespace cmt {

namespace {

DeviceRecord device_record(const DeviceInfo& d, const std::string& compiler_version) {
  DeviceRecord r;
  r.uuid = d.uuid;
  r.name = d.name;
  r.cc_major = d.cc_major;
  r.cc_minor = d.cc_minor;
  r.sm_count = d.sm_count;
  r.clock_khz = d.clock_khz;
  r.memory_clock_khz = d.memory_clock_khz;
  r.memory_bus_bits = d.memory_bus_bits;
  r.memory_bytes = static_cast<int64_t>(d.memory_bytes);
  r.l2_bytes = d.l2_bytes;
  r.driver_version = d.driver_version;
  r.runtime_version = d.runtime_version;
  r.nvrtc_version = compiler_version;
  return r;
}

}  // namespace

std::vector<const TrialRecord*> leaders(const ProblemState& state, int retime_top) {
  // Leaders by their back-to-back medians: the fastest few, and the fastest without requirements.
  std::vector<const TrialRecord*> passing;
  for (const auto& t : state.trials())
    if (passed(t)) passing.push_back(&t);
  std::stable_sort(passing.begin(), passing.end(), [](const auto* a, const auto* b) { return *a->median_ms < *b->median_ms; });
  const size_t top = std::min(passing.size(), static_cast<size_t>(std::max(retime_top, 0)));
  std::vector<const TrialRecord*> out(passing.begin(), passing.begin() + static_cast<std::ptrdiff_t>(top));
  const auto portable = std::find_if(passing.begin(), passing.end(), [](const auto* t) { return t->requirements.none(); });
  if (portable != passing.end() && std::find(out.begin(), out.end(), *portable) == out.end()) out.push_back(*portable);
  return out;
}

double kernel_timeout_ms(const TuneRequest& request, const ProblemState& state) {
  if (request.kernel_timeout_s) return *request.kernel_timeout_s * 1e3;
  const Problem& p = state.problem();
  if (!type_info(p.dtype).cublas_baseline) return default_kernel_timeout_ms(peak_time_ms(request.device, p));
  return default_kernel_timeout_ms(state.cublas_ms().value_or(0.0));
}

double peak_time_ms(const DeviceInfo& device, const Problem& problem) {
  const double peak = type_peak(device, problem.dtype);
  return peak > 0 ? problem.flops() / (peak * 1e12) * 1e3 : 0.0;
}

void retime_leaders(Store& store, Measurer& measurer, ProblemState& state, int64_t run_id,
                    const std::vector<const TrialRecord*>& leads, double kernel_timeout_ms) {
  std::vector<BinaryRecord> binaries;
  std::vector<int64_t> trial_ids;
  std::vector<KernelUnderTest> kernels;
  binaries.reserve(leads.size());  // the kernels point into it
  for (const TrialRecord* t : leads) {
    auto binary = store.find_binary(t->binary_key);
    if (!binary || !binary->ok) continue;
    binaries.push_back(std::move(*binary));
    trial_ids.push_back(t->id);
    kernels.push_back({&binaries.back(), t->shape, t->requirements, kernel_label(t->template_name, t->params)});
  }
  if (kernels.empty()) return;
  const std::vector<RetimeResult> results = measurer.retime(kernels, state.problem(), kernel_timeout_ms);
  const RetimeResult& cublas = results.back();
  // A type without a cuBLAS baseline (i32) records the kernels' times without a ratio.
  const bool baseline = type_info(state.problem().dtype).cublas_baseline;
  if (baseline) {
    if (!cublas.ok || cublas.stats.count == 0) return;
    state.record_baseline(store, run_id, cublas.stats);
  }
  for (size_t i = 0; i < kernels.size(); ++i)
    if (results[i].ok && results[i].stats.count > 0)
      state.record_retime(store, trial_ids[i], results[i].stats.median,
                          baseline ? std::optional<double>(cublas.stats.median / results[i].stats.median) : std::nullopt);
}

TuneCounts& TuneCounts::operator+=(const TuneCounts& other) {
  trials_measured += other.trials_measured;
  trials_reused += other.trials_reused;
  compile_cache_hits += other.compile_cache_hits;
  compiled += other.compiled;
  compile_failures += other.compile_failures;
  return *this;
}

namespace {

/// One pass of the pipeline: which problems, which candidates, and the limits it runs under. The
/// requested problems are one pass; calibration's shapes are one or two more.
struct Pass {
  std::vector<Problem> problems;
  const std::vector<Candidate>* candidates = nullptr;
  std::vector<bool> ignore_applies;       // per candidate (empty: none)
  std::optional<int64_t> budget;
  std::optional<double> time_limit_s;
  std::string command_line;               // the run record's
};

/// What a pass did: its own run record, its problems' summaries, and why it stopped early.
struct PassResult {
  TuneCounts counts;
  int64_t run_id = 0;
  int64_t candidates = 0;                 // the search planned
  std::vector<ProblemSummary> problems;
  std::vector<std::vector<TrialRecord>> trials;   // each problem's, as the pass left them
  std::string stop_reason;
  bool interrupted = false;
};

/// Search -> compile -> measure -> record over the pass's problems, then the re-timing of leaders
/// and the choice of winners; every trial is committed as it is recorded. One run record per pass.
PassResult run_pass(Store& store, const Compiler& compiler, Measurer& measurer, const TuneRequest& req,
                    int64_t device_id, const Pass& pass, const TuneProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const std::vector<Candidate>& candidates = *pass.candidates;
  PassResult result;
  RunRecord run;
  run.command_line = pass.command_line;
  run.preset_path = req.preset.file.string();
  run.preset_hash = req.preset.content_hash;
  run.device_id = device_id;
  result.run_id = store.begin_run(run);
  const TrialContext context{result.run_id, device_id, req.device.uuid};
  const Target target = target_of(req.device);

  // Each problem's trials, winners and baseline, read once.
  std::vector<ProblemState> states;
  for (const Problem& p : pass.problems) states.emplace_back(store, device_id, p);

  // Search: the searcher proposes candidates a few at a time, enough to keep every compiler
  // thread busy while the GPU measures what is compiled.
  const std::unique_ptr<Searcher> searcher =
      make_searcher(candidates.size(), pass.budget, pass.time_limit_s.has_value(), req.seed);
  spdlog::debug("search: {}", searcher->describe());
  result.candidates = static_cast<int64_t>(searcher->planned());
  const size_t window = static_cast<size_t>(std::max(16, 4 * (req.jobs > 0 ? req.jobs : hardware_threads())));
  CompileService compile(store, compiler, req.device.arch(), req.jobs);
  bool searching = true;
  const auto refill = [&] {
    while (searching && compile.in_flight() < window) {
      const std::vector<size_t> next = searcher->propose(window - compile.in_flight());
      if (next.empty()) searching = false;
      for (const size_t i : next) compile.submit(candidates[i], i);
    }
  };

  const int64_t total = result.candidates * static_cast<int64_t>(states.size());
  int64_t done = 0, candidates_done = 0;
  std::string status, run_status = "done";
  refill();
  while (auto compiled = compile.next()) {
    if (!result.stop_reason.empty()) continue;  // drain the compiler
    const Candidate& cand = *compiled->candidate;
    std::vector<TrialRecord> recorded;
    for (ProblemState& state : states) {
      const Problem& p = state.problem();
      ++done;
      if (!cand.tmpl->serves(cand.values, p)) continue;   // another layout, or a batch the family cannot take
      const bool everywhere = compiled->index < pass.ignore_applies.size() && pass.ignore_applies[compiled->index];
      if (!everywhere && !cand.tmpl->applies_to(cand.values, target, p)) continue;   // the family does not serve this shape
      if (!req.retune && state.has_trial(trial_key(req.device.uuid, compiled->binary.key, p))) {
        ++result.counts.trials_reused;
        continue;
      }
      Measurement m;
      if (!compiled->binary.ok) {
        if (!compiled->cacheable) {  // the machinery failed, not the candidate: record nothing
          --done;
          continue;
        }
        m = compile_failure(compiled->binary);
      } else {
        if (!state.cublas_ms() && type_info(p.dtype).cublas_baseline) {
          state.record_baseline(store, result.run_id, measurer.measure_cublas(p));
          spdlog::debug("cuBLAS {}: {:.4f} ms", p.to_string(), *state.cublas_ms());
        }
        const KernelUnderTest kernel{&compiled->binary, cand.shape, cand.requirements, cand.id()};
        m = measurer.measure(kernel, p, {state.abandon_bar_ms(req.preset.tune.abandon_factor), kernel_timeout_ms(req, state)});
      }
      TrialRecord t = make_trial(context, cand, compiled->binary, p, m, state.cublas_ms());
      state.record(store, t);
      ++result.counts.trials_measured;
      if (t.outcome == Outcome::ok && *t.median_ms <= state.best_ms())
        status = fmt::format("best {:.1f} {} at {} ({})", *t.gflops / 1e3, type_info(p.dtype).rate_unit,
                             p.to_string(), cand.tmpl->name);
      recorded.push_back(std::move(t));
      if (progress) progress(done, total, status);
      if (measurer.context_lost()) {
        result.stop_reason = fmt::format(
            "{} broke the CUDA context on {} ({}); it is recorded as crashed and a rerun skips it", cand.id(),
            p.to_string(), recorded.back().reason);
        run_status = "failed";
        break;
      }
      if (req.should_stop && req.should_stop()) break;
    }
    ++candidates_done;
    searcher->observe(compiled->index, recorded);
    if (progress) progress(done, total, status);
    if (result.stop_reason.empty() && req.should_stop && req.should_stop()) {
      result.interrupted = true;
      result.stop_reason = fmt::format("interrupted after {} candidates", candidates_done);
      run_status = "interrupted";
    }
    if (result.stop_reason.empty() && pass.time_limit_s && elapsed() > *pass.time_limit_s)
      result.stop_reason = fmt::format("--time-limit {} s reached after {} candidates", *pass.time_limit_s, candidates_done);
    if (result.stop_reason.empty()) {
      refill();
    } else {
      searching = false;
      compile.cancel();
    }
  }
  const CompileStats& cs = compile.stats();
  result.counts.compile_cache_hits = cs.cache_hits;
  result.counts.compiled = cs.compiled;
  result.counts.compile_failures = cs.failed;

  // Re-time the leaders of every problem that changed, has no winner yet, or has a leader that was
  // never re-timed (a run stopped by a signal or killed after measuring it), and choose winners.
  // An interrupted run skips this: the user asked it to stop, and the rerun does it.
  if (!measurer.context_lost() && !result.interrupted) {
    const int top = req.preset.tune.retime_top;
    for (ProblemState& state : states) {
      const auto leads = leaders(state, top);
      const bool all_retimed = std::all_of(leads.begin(), leads.end(), [](const TrialRecord* t) { return t->retime_median_ms.has_value(); });
      if (!state.changed() && state.has_winners() && all_retimed) continue;
      if (leads.empty()) continue;
      retime_leaders(store, measurer, state, result.run_id, leads, kernel_timeout_ms(req, state));
      state.store_winners(store);
      if (req.should_stop && req.should_stop()) {
        result.interrupted = true;
        if (result.stop_reason.empty()) result.stop_reason = "interrupted while re-timing";
        run_status = "interrupted";
        break;
      }
    }
  }
  for (const ProblemState& state : states) {
    result.problems.push_back(state.summary());
    result.trials.push_back(state.trials());
  }
  store.end_run(result.run_id, run_status);
  return result;
}

/// Calibration (search/calibration.hpp), after the requested problems' pass: the whole space on the
/// shapes that ask for it, then the plan's kernels on the other shapes, each a pass with its own run
/// record. Adds what they did to `summary`.
void calibrate(Store& store, const Compiler& compiler, Measurer& measurer, const TuneRequest& req, int64_t device_id,
               const std::vector<std::vector<TrialRecord>>& requested_trials, const std::function<double()>& elapsed,
               const TuneProgress& progress, TuneSummary& summary) {
  // Each tuned problem's passing trials, best first: the leaders calibration measures come from them.
  std::vector<std::vector<TrialRecord>> ranked;
  for (const auto& trials : requested_trials) ranked.push_back(ranked_passing(trials));
  const auto run = [&](Pass pass) {
    pass.budget.reset();
    pass.command_line = req.command_line + "  # calibration";
    if (req.time_limit_s) pass.time_limit_s = std::max(1.0, *req.time_limit_s - elapsed());
    const PassResult r = run_pass(store, compiler, measurer, req, device_id, pass, progress);
    summary += r.counts;
    summary.calibration.insert(summary.calibration.end(), r.problems.begin(), r.problems.end());
    summary.calibration_candidates = std::max(summary.calibration_candidates, r.candidates);
    if (!r.stop_reason.empty()) summary.stop_reason = "calibration: " + r.stop_reason;
    summary.interrupted = summary.interrupted || r.interrupted;
    for (const auto& trials : r.trials) ranked.push_back(ranked_passing(trials));
  };
  const std::vector<CalibrationShape> shapes = calibration_shapes(req.problems);
  measurer.release_problems();
  // First the shapes searched over the whole space; their leaders join the requested problems'.
  Pass whole_space;
  whole_space.candidates = &req.candidates;
  whole_space.ignore_applies = req.ignore_applies;
  for (const auto& s : shapes)
    if (s.full_search) whole_space.problems.push_back(s.problem);
  if (!whole_space.problems.empty()) {
    spdlog::info("calibration: the whole space on {} shapes", whole_space.problems.size());
    run(std::move(whole_space));
    measurer.release_problems();
  }
  CalibrationPlan plan =
      calibration_plan(shapes, ranked, req.candidates, req.calibration_leaders, req.problems, target_of(req.device));
  if (summary.stop_reason.empty() && !measurer.context_lost() && !plan.candidates.empty() && !plan.problems.empty()) {
    spdlog::info("calibration: {} kernels on {} shapes", plan.candidates.size(), plan.problems.size());
    Pass leaders_pass;
    leaders_pass.problems = std::move(plan.problems);
    leaders_pass.candidates = &plan.candidates;
    leaders_pass.ignore_applies = std::move(plan.ignore_applies);
    run(std::move(leaders_pass));
  }
}

}  // namespace

TuneSummary run_tune(Store& store, const Compiler& compiler, Measurer& measurer, const TuneRequest& req,
                     const TuneProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const std::function<double()> elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int64_t device_id = store.upsert_device(device_record(req.device, compiler.version()));
  Pass requested;
  requested.problems = req.problems;
  requested.candidates = &req.candidates;
  requested.ignore_applies = req.ignore_applies;
  requested.budget = req.budget;
  requested.time_limit_s = req.time_limit_s;
  requested.command_line = req.command_line;
  PassResult r = run_pass(store, compiler, measurer, req, device_id, requested, progress);
  TuneSummary summary;
  static_cast<TuneCounts&>(summary) = r.counts;
  summary.run_id = r.run_id;
  summary.candidates = r.candidates;
  summary.problems = std::move(r.problems);
  summary.stop_reason = std::move(r.stop_reason);
  summary.interrupted = r.interrupted;
  if (req.calibrate && summary.stop_reason.empty() && !measurer.context_lost())
    calibrate(store, compiler, measurer, req, device_id, r.trials, elapsed, progress, summary);
  summary.wall_seconds = elapsed();
  return summary;
}

}  // namespace cmt
