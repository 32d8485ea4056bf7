#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compile/compile_service.hpp"
#include "core/dtype.hpp"
#include "core/thread_pool.hpp"
#include "measure/measurer_pool.hpp"
#include "record/ranking.hpp"
#include "record/trial.hpp"
#include "search/calibration.hpp"
#include "search/searcher.hpp"
#include "space/target.hpp"
#include "tune/stop_conditions.hpp"

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

RetimeJob prepare_retime(Store& store, const ProblemState& state, const std::vector<const TrialRecord*>& leads,
                         double kernel_timeout_ms) {
  RetimeJob job;
  job.problem = state.problem();
  job.kernel_timeout_ms = kernel_timeout_ms;
  job.binaries.reserve(leads.size());  // the kernels point into it
  for (const TrialRecord* t : leads) {
    auto binary = store.find_binary(t->binary_key);
    if (!binary || !binary->ok) continue;
    job.binaries.push_back(std::move(*binary));
    job.trial_ids.push_back(t->id);
    job.kernels.push_back({&job.binaries.back(), t->shape, t->requirements, kernel_label(t->template_name, t->params)});
  }
  return job;
}

void RetimeJob::run(Measurer& measurer) {
  if (!kernels.empty()) results = measurer.retime(kernels, problem, kernel_timeout_ms);
}

void record_retime(Store& store, ProblemState& state, int64_t run_id, const RetimeJob& job) {
  if (job.kernels.empty() || job.results.empty()) return;
  const RetimeResult& cublas = job.results.back();
  // A type without a cuBLAS baseline (i32) records the kernels' times without a ratio.
  const bool baseline = type_info(state.problem().dtype).cublas_baseline;
  if (baseline) {
    if (!cublas.ok || cublas.stats.count == 0) return;
    state.record_baseline(store, run_id, cublas.stats);
  }
  for (size_t i = 0; i < job.kernels.size(); ++i)
    if (job.results[i].ok && job.results[i].stats.count > 0)
      state.record_retime(store, job.trial_ids[i], job.results[i].stats.median,
                          baseline ? std::optional<double>(cublas.stats.median / job.results[i].stats.median)
                                   : std::nullopt);
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

/// "GPU 0 52%, GPU 1 48%": each member's share of the jobs finished so far (several GPUs only).
std::string shares(const MeasurerPool& pool) {
  if (pool.size() < 2) return "";
  const std::vector<int64_t> finished = pool.finished();
  const std::vector<std::string> names = pool.names();
  int64_t total = 0;
  for (const int64_t f : finished) total += f;
  std::string out;
  for (size_t i = 0; i < finished.size(); ++i)
    out += fmt::format("{}{} {:.0f}%", i ? ", " : "", names[i].substr(0, names[i].find(" (")),
                       total ? 100.0 * static_cast<double>(finished[i]) / static_cast<double>(total) : 0.0);
  return out;
}

/// Search -> compile -> measure -> record over the pass's problems, then the re-timing of leaders
/// and the choice of winners; every trial is committed as it is recorded. One run record per pass.
/// The measurements of each compiled candidate (one job per problem) go to the pool, whose members
/// take them as they become idle; this thread records what comes back, so the database has one
/// writer per run.
PassResult run_pass(Store& store, const Compiler& compiler, MeasurerPool& pool, const TuneRequest& req,
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
  // A pass that throws (the database, the measuring process) is closed as failed, not left running.
  struct CloseAsFailed {
    Store& store;
    int64_t run_id;
    bool closed = false;
    ~CloseAsFailed() {
      if (closed) return;
      try {
        store.end_run(run_id, "failed");
      } catch (const std::exception& e) {
        spdlog::warn("run {} could not be closed as failed: {}", run_id, e.what());
      }
    }
  } close_as_failed{store, result.run_id};
  const TrialContext context{result.run_id, device_id, req.device.uuid};
  const Target target = target_of(req.device);

  // Each problem's trials, winners and baseline, read once.
  std::vector<ProblemState> states;
  for (const Problem& p : pass.problems) states.emplace_back(store, device_id, p);

  // Search: the searcher proposes candidates a few at a time, enough to keep every compiler
  // thread busy while the GPUs measure what is compiled.
  const std::unique_ptr<Searcher> searcher =
      make_searcher(candidates.size(), pass.budget, pass.time_limit_s.has_value(), req.seed);
  spdlog::debug("search: {}", searcher->describe());
  result.candidates = static_cast<int64_t>(searcher->planned());
  const size_t window = static_cast<size_t>(std::max(16, 4 * (req.jobs > 0 ? req.jobs : hardware_threads())) +
                                            static_cast<int>(pool.size()));
  CompileService compile(store, compiler, req.device.arch(), req.jobs);
  bool searching = true;
  const auto refill = [&] {
    while (searching && compile.in_flight() < window) {
      const std::vector<size_t> next = searcher->propose(window - compile.in_flight());
      if (next.empty()) searching = false;
      for (const size_t i : next) compile.submit(candidates[i], i);
    }
  };

  // A compiled candidate while its problems are measured, and one measurement in flight.
  struct Open {
    CompiledCandidate compiled;
    int pending = 0;
    std::vector<TrialRecord> recorded;
  };
  struct Job {
    uint64_t open = 0;
    size_t state = 0;
    KernelUnderTest kernel;
    MeasureLimits limits;
    Measurement result;
  };
  std::map<uint64_t, Open> open;
  std::map<uint64_t, Job> jobs;
  uint64_t next_open = 0, next_job = 0;

  const int64_t total = result.candidates * static_cast<int64_t>(states.size());
  int64_t done = 0, candidates_done = 0;
  std::string status, run_status = "done";
  bool stopping = false;   // no more jobs: a stop condition said so
  // Why the pass may stop early, asked in this order (tune/stop_conditions.hpp).
  const SignalStop signal(req.should_stop);
  AnyStop stops;
  stops.add(std::make_unique<LostContextStop>([&pool] { return pool.context_lost(); }));
  stops.add(std::make_unique<SignalStop>(signal));
  if (pass.time_limit_s) stops.add(std::make_unique<TimeLimitStop>(*pass.time_limit_s));
  const auto report = [&] {
    if (!progress) return;
    const std::string share = shares(pool);
    progress(done, total, share.empty() ? status : status + (status.empty() ? "" : "; ") + share);
  };
  const auto stop = [&](Stop s) {
    if (result.stop_reason.empty()) result.stop_reason = std::move(s.reason);
    if (s.kind == Stop::Kind::interrupted) {
      result.interrupted = true;
      run_status = "interrupted";
    } else if (s.kind == Stop::Kind::failed) {
      run_status = "failed";
    }
    stopping = true;
    searching = false;
    compile.cancel();
    for (const uint64_t id : pool.cancel()) {   // queued, not started: never measured
      --open.at(jobs.at(id).open).pending;
      jobs.erase(id);
    }
  };
  const auto close = [&](uint64_t id) {
    Open& o = open.at(id);
    ++candidates_done;
    searcher->observe(o.compiled.index, o.recorded);
    report();
    open.erase(id);
    if (stopping) return;
    if (auto s = stops.after_candidate({candidates_done, elapsed()})) stop(std::move(*s));
  };
  // A compiled candidate: a trial for each problem it compiles to nothing for, a job for each it
  // is measured on.
  const auto dispatch = [&](CompiledCandidate compiled) {
    const uint64_t id = next_open++;
    Open& o = open[id];
    o.compiled = std::move(compiled);
    const Candidate& cand = *o.compiled.candidate;
    for (size_t si = 0; si < states.size() && !stopping; ++si) {
      ProblemState& state = states[si];
      const Problem& p = state.problem();
      ++done;
      if (!cand.tmpl->serves(cand.values, p)) continue;   // another layout, or a batch the family cannot take
      const bool everywhere = o.compiled.index < pass.ignore_applies.size() && pass.ignore_applies[o.compiled.index];
      if (!everywhere && !cand.tmpl->applies_to(cand.values, target, p)) continue;   // the family does not serve this shape
      if (!req.retune && state.has_trial(trial_key(req.device.uuid, o.compiled.binary.key, p))) {
        ++result.counts.trials_reused;
        continue;
      }
      if (!o.compiled.binary.ok) {
        if (!o.compiled.cacheable) {  // the machinery failed, not the candidate: record nothing
          --done;
          continue;
        }
        TrialRecord t = make_trial(context, cand, o.compiled.binary, p, compile_failure(o.compiled.binary), state.cublas_ms());
        state.record(store, t);
        ++result.counts.trials_measured;
        o.recorded.push_back(std::move(t));
        report();
        continue;
      }
      if (!state.cublas_ms() && type_info(p.dtype).cublas_baseline) {
        SampleStats baseline;
        pool.run([&](Measurer& m) { baseline = m.measure_cublas(p); });
        state.record_baseline(store, result.run_id, baseline);
        spdlog::debug("cuBLAS {}: {:.4f} ms", p.to_string(), *state.cublas_ms());
      }
      --done;   // counted when its measurement comes back
      const uint64_t jid = next_job++;
      Job& job = jobs[jid];
      job.open = id;
      job.state = si;
      job.kernel = KernelUnderTest{&o.compiled.binary, cand.shape, cand.requirements, cand.id()};
      job.limits = {state.abandon_bar_ms(req.preset.tune.abandon_factor), kernel_timeout_ms(req, state)};
      ++o.pending;
      pool.submit(jid, [&job, p](Measurer& m) { job.result = m.measure(job.kernel, p, job.limits); });
    }
    if (o.pending == 0) close(id);
  };
  // A measurement back from the pool: its trial, recorded here.
  const auto collect = [&](uint64_t jid) {
    Job& job = jobs.at(jid);
    const uint64_t open_id = job.open;   // the job is erased below
    Open& o = open.at(open_id);
    ProblemState& state = states[job.state];
    const Problem& p = state.problem();
    const Candidate& cand = *o.compiled.candidate;
    TrialRecord t = make_trial(context, cand, o.compiled.binary, p, job.result, state.cublas_ms());
    state.record(store, t);
    ++result.counts.trials_measured;
    ++done;
    if (t.outcome == Outcome::ok && *t.median_ms <= state.best_ms())
      status = fmt::format("best {:.1f} {} at {} ({})", *t.gflops / 1e3, type_info(p.dtype).rate_unit, p.to_string(),
                           cand.tmpl->name);
    o.recorded.push_back(std::move(t));
    const std::string reason = o.recorded.back().reason;
    jobs.erase(jid);
    for (const std::string& w : pool.take_warnings()) spdlog::warn("{}", w);
    report();
    if (!stopping)
      if (auto s = stops.after_measurement({cand.id(), p.to_string(), reason, candidates_done})) stop(std::move(*s));
    if (--o.pending == 0) close(open_id);
  };

  refill();
  bool compiled_all = false;
  for (;;) {
    while (!stopping && !compiled_all && pool.has_idle()) {
      auto compiled = compile.next();
      if (!compiled) {
        compiled_all = true;
        break;
      }
      dispatch(std::move(*compiled));
      if (!stopping) refill();
    }
    const auto jid = pool.next();
    if (jid) {
      collect(*jid);
      continue;
    }
    if (stopping || compiled_all) break;
  }
  while (compile.next()) {
  }  // drain the compiler after a stop
  for (auto& [id, o] : open) searcher->observe(o.compiled.index, o.recorded);   // cut short by a stop
  const CompileStats& cs = compile.stats();
  result.counts.compile_cache_hits = cs.cache_hits;
  result.counts.compiled = cs.compiled;
  result.counts.compile_failures = cs.failed;

  // Re-time the leaders of every problem that changed, has no winner yet, or has a leader that was
  // never re-timed (a run stopped by a signal or killed after measuring it), and choose winners;
  // the problems go to the pool's members as they become idle. An interrupted run skips this: the
  // user asked it to stop, and the rerun does it.
  if (!pool.context_lost() && !result.interrupted) {
    const int top = req.preset.tune.retime_top;
    std::map<uint64_t, std::pair<size_t, RetimeJob>> retimes;
    for (size_t si = 0; si < states.size(); ++si) {
      ProblemState& state = states[si];
      const auto leads = leaders(state, top);
      const bool all_retimed = std::all_of(leads.begin(), leads.end(), [](const TrialRecord* t) { return t->retime_median_ms.has_value(); });
      if (!state.changed() && state.has_winners() && all_retimed) continue;
      if (leads.empty()) continue;
      const uint64_t jid = next_job++;
      auto& [index, job] = retimes[jid];
      index = si;
      job = prepare_retime(store, state, leads, kernel_timeout_ms(req, state));
      RetimeJob* target_job = &job;
      pool.submit(jid, [target_job](Measurer& m) { target_job->run(m); });
    }
    while (const auto jid = pool.next()) {
      auto& [si, job] = retimes.at(*jid);
      record_retime(store, states[si], result.run_id, job);
      states[si].store_winners(store);
      retimes.erase(*jid);
      for (const std::string& w : pool.take_warnings()) spdlog::warn("{}", w);
      if (!result.interrupted && signal.requested()) {
        result.interrupted = true;
        if (result.stop_reason.empty()) result.stop_reason = "interrupted while re-timing";
        run_status = "interrupted";
        for (const uint64_t id : pool.cancel()) retimes.erase(id);
      }
    }
  }
  for (const ProblemState& state : states) {
    result.problems.push_back(state.summary());
    result.trials.push_back(state.trials());
  }
  store.end_run(result.run_id, run_status);
  close_as_failed.closed = true;
  return result;
}

/// Calibration (search/calibration.hpp), after the requested problems' pass: the whole space on the
/// shapes that ask for it, then the plan's kernels on the other shapes, each a pass with its own run
/// record. Adds what they did to `summary`.
void calibrate(Store& store, const Compiler& compiler, MeasurerPool& measurer, const TuneRequest& req, int64_t device_id,
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
  MeasurerPool pool({PoolMember{&measurer, "GPU " + std::to_string(req.device.index)}});
  return run_tune(store, compiler, pool, req, progress);
}

TuneSummary run_tune(Store& store, const Compiler& compiler, MeasurerPool& measurer, const TuneRequest& req,
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
