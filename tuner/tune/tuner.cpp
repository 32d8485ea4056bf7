#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/dtype.hpp"
#include "core/thread_pool.hpp"
#include "record/ranking.hpp"
#include "record/trial.hpp"
#include "space/target.hpp"
#include "tune/calibration.hpp"
#include "tune/compile_service.hpp"
#include "tune/searcher.hpp"

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

TuneSummary run_tune(Store& store, const Compiler& compiler, Measurer& measurer, const TuneRequest& req,
                     const TuneProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  TuneSummary summary;

  const int64_t device_id = store.upsert_device(device_record(req.device, compiler.version()));
  RunRecord run;
  run.command_line = req.command_line;
  run.preset_path = req.preset.file.string();
  run.preset_hash = req.preset.content_hash;
  run.device_id = device_id;
  summary.run_id = store.begin_run(run);
  const TrialContext context{summary.run_id, device_id, req.device.uuid};
  const Target target = target_of(req.device);

  // Each problem's trials, winners and baseline, read once.
  std::vector<ProblemState> states;
  for (const Problem& p : req.problems) states.emplace_back(store, device_id, p);

  // Search: the searcher proposes candidates a few at a time, enough to keep every compiler
  // thread busy while the GPU measures what is compiled.
  const std::unique_ptr<Searcher> searcher =
      make_searcher(req.candidates.size(), req.budget, req.time_limit_s.has_value(), req.seed);
  spdlog::debug("search: {}", searcher->describe());
  summary.candidates = static_cast<int64_t>(searcher->planned());
  const size_t window = static_cast<size_t>(std::max(16, 4 * (req.jobs > 0 ? req.jobs : hardware_threads())));
  CompileService compile(store, compiler, req.device.arch(), req.jobs);
  bool searching = true;
  const auto refill = [&] {
    while (searching && compile.in_flight() < window) {
      const std::vector<size_t> next = searcher->propose(window - compile.in_flight());
      if (next.empty()) searching = false;
      for (const size_t i : next) compile.submit(req.candidates[i], i);
    }
  };

  const int64_t total = summary.candidates * static_cast<int64_t>(states.size());
  int64_t done = 0, candidates_done = 0;
  std::string status, run_status = "done";
  refill();
  while (auto compiled = compile.next()) {
    if (!summary.stop_reason.empty()) continue;  // drain the compiler
    const Candidate& cand = *compiled->candidate;
    std::vector<TrialRecord> recorded;
    for (ProblemState& state : states) {
      const Problem& p = state.problem();
      ++done;
      if (!cand.tmpl->serves(cand.values, p)) continue;   // another layout, or a batch the family cannot take
      const bool everywhere = compiled->index < req.ignore_applies.size() && req.ignore_applies[compiled->index];
      if (!everywhere && !cand.tmpl->applies_to(cand.values, target, p)) continue;   // the family does not serve this shape
      if (!req.retune && state.has_trial(trial_key(req.device.uuid, compiled->binary.key, p))) {
        ++summary.trials_reused;
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
          state.record_baseline(store, summary.run_id, measurer.measure_cublas(p));
          spdlog::debug("cuBLAS {}: {:.4f} ms", p.to_string(), *state.cublas_ms());
        }
        const KernelUnderTest kernel{&compiled->binary, cand.shape, cand.requirements, cand.id()};
        m = measurer.measure(kernel, p, {state.abandon_bar_ms(req.preset.tune.abandon_factor), kernel_timeout_ms(req, state)});
      }
      TrialRecord t = make_trial(context, cand, compiled->binary, p, m, state.cublas_ms());
      state.record(store, t);
      ++summary.trials_measured;
      if (t.outcome == Outcome::ok && *t.median_ms <= state.best_ms())
        status = fmt::format("best {:.1f} {} at {} ({})", *t.gflops / 1e3, type_info(p.dtype).rate_unit,
                             p.to_string(), cand.tmpl->name);
      recorded.push_back(std::move(t));
      if (progress) progress(done, total, status);
      if (measurer.context_lost()) {
        summary.stop_reason = fmt::format(
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
    if (summary.stop_reason.empty() && req.should_stop && req.should_stop()) {
      summary.interrupted = true;
      summary.stop_reason = fmt::format("interrupted after {} candidates", candidates_done);
      run_status = "interrupted";
    }
    if (summary.stop_reason.empty() && req.time_limit_s && elapsed() > *req.time_limit_s)
      summary.stop_reason = fmt::format("--time-limit {} s reached after {} candidates", *req.time_limit_s, candidates_done);
    if (summary.stop_reason.empty()) {
      refill();
    } else {
      searching = false;
      compile.cancel();
    }
  }
  const CompileStats& cs = compile.stats();
  summary.compile_cache_hits = cs.cache_hits;
  summary.compiled = cs.compiled;
  summary.compile_failures = cs.failed;

  // Re-time the leaders of every problem that changed, has no winner yet, or has a leader that was
  // never re-timed (a run stopped by a signal or killed after measuring it), and choose winners.
  // An interrupted run skips this: the user asked it to stop, and the rerun does it.
  if (!measurer.context_lost() && !summary.interrupted) {
    const int top = req.preset.tune.retime_top;
    for (ProblemState& state : states) {
      const auto leads = leaders(state, top);
      const bool all_retimed = std::all_of(leads.begin(), leads.end(), [](const TrialRecord* t) { return t->retime_median_ms.has_value(); });
      if (!state.changed() && state.has_winners() && all_retimed) continue;
      if (leads.empty()) continue;
      retime_leaders(store, measurer, state, summary.run_id, leads, kernel_timeout_ms(req, state));
      state.store_winners(store);
      if (req.should_stop && req.should_stop()) {
        summary.interrupted = true;
        if (summary.stop_reason.empty()) summary.stop_reason = "interrupted while re-timing";
        run_status = "interrupted";
        break;
      }
    }
  }
  for (const ProblemState& state : states) summary.problems.push_back(state.summary());
  store.end_run(summary.run_id, run_status);

  if (req.calibrate && summary.stop_reason.empty() && !measurer.context_lost()) {
    std::vector<std::vector<TrialRecord>> trials;
    for (const ProblemState& state : states) trials.push_back(state.trials());
    const auto absorb = [&](const TuneSummary& c) {
      summary.calibration.insert(summary.calibration.end(), c.problems.begin(), c.problems.end());
      summary.calibration_candidates = std::max(summary.calibration_candidates, c.candidates);
      summary.trials_measured += c.trials_measured;
      summary.trials_reused += c.trials_reused;
      summary.compile_cache_hits += c.compile_cache_hits;
      summary.compiled += c.compiled;
      summary.compile_failures += c.compile_failures;
      if (!c.stop_reason.empty()) summary.stop_reason = "calibration: " + c.stop_reason;
      summary.interrupted = summary.interrupted || c.interrupted;
      for (const auto& p : c.problems) trials.push_back(store.trials(device_id, p.problem));
    };
    TuneRequest calibration = req;
    calibration.calibrate = false;
    calibration.budget.reset();
    calibration.command_line = req.command_line + "  # calibration";
    const std::vector<CalibrationShape> shapes = calibration_shapes(req.problems);
    measurer.release_problems();
    // First the shapes searched over the whole space; their leaders join the requested problems'.
    calibration.problems.clear();
    for (const auto& s : shapes)
      if (s.full_search) calibration.problems.push_back(s.problem);
    if (!calibration.problems.empty()) {
      if (req.time_limit_s) calibration.time_limit_s = std::max(1.0, *req.time_limit_s - elapsed());
      spdlog::info("calibration: the whole space on {} shapes", calibration.problems.size());
      absorb(run_tune(store, compiler, measurer, calibration, progress));
      measurer.release_problems();
    }
    CalibrationPlan plan =
        calibration_plan(shapes, trials, req.candidates, req.calibration_leaders, req.problems, target);
    calibration.problems = std::move(plan.problems);
    calibration.candidates = std::move(plan.candidates);
    calibration.ignore_applies = std::move(plan.ignore_applies);
    if (summary.stop_reason.empty() && !measurer.context_lost() && !calibration.candidates.empty() &&
        !calibration.problems.empty()) {
      if (req.time_limit_s) calibration.time_limit_s = std::max(1.0, *req.time_limit_s - elapsed());
      spdlog::info("calibration: {} kernels on {} shapes", calibration.candidates.size(), calibration.problems.size());
      absorb(run_tune(store, compiler, measurer, calibration, progress));
    }
  }
  summary.wall_seconds = elapsed();
  return summary;
}

}  // namespace cmt
