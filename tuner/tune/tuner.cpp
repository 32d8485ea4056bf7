#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <random>
#include <set>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "tune/compile_service.hpp"
#include "tune/workspace.hpp"

namespace cmt {

namespace {

constexpr const char* k_protocol = "cm-tune-trial-v1;tight-ld;alpha=1,beta=0;validate=0.75/-1.25,1.25/0";

double trial_time(const TrialRecord& t) { return t.retime_median_ms.value_or(t.median_ms.value_or(1e30)); }

// Re-timed trials (interleaved with cuBLAS) rank before the others. Their times do not compare
// with back-to-back medians, which run some kernels (clusters among them) several percent faster,
// and a trial that was not re-timed had a slower back-to-back median than every re-timed leader.
bool ranks_before(const TrialRecord& a, const TrialRecord& b) {
  if (a.retime_median_ms.has_value() != b.retime_median_ms.has_value()) return a.retime_median_ms.has_value();
  return trial_time(a) < trial_time(b);
}

WinnerRecord make_winner(const TrialRecord& t, const std::string& scope, double ratio) {
  WinnerRecord w;
  w.device_id = t.device_id;
  w.problem = t.problem;
  w.scope = scope;
  w.trial_id = t.id;
  w.template_name = t.template_name;
  w.params = t.params;
  w.name_expression = t.name_expression;
  w.median_ms = trial_time(t);
  w.gflops = gflops(t.problem.flops(), w.median_ms);
  w.ratio_to_cublas = ratio;
  w.requirements = t.requirements;
  w.shape = t.shape;
  w.binary_key = t.binary_key;
  return w;
}

/// Stores cuBLAS's timing of a problem as its baseline.
BaselineRecord put_baseline(Store& store, int64_t device_id, int64_t run_id, const Problem& p, const SampleStats& s) {
  BaselineRecord b;
  b.device_id = device_id;
  b.problem = p;
  const Layout t = ProblemWorkspace::timing_layout(p);
  b.lda = t.lda, b.ldb = t.ldb, b.ldc = t.ldc;
  b.median_ms = s.median, b.min_ms = s.min, b.cv = s.cv, b.samples = s.count;
  b.gflops = gflops(p.flops(), s.median);
  b.run_id = run_id;
  store.put_baseline(b);
  return b;
}

}  // namespace

std::string trial_key(const std::string& device_uuid, const std::string& binary_key, const Problem& problem) {
  Hasher h;
  h.field(k_protocol).field(device_uuid).field(binary_key).field(problem.to_string());
  return h.hex();
}

size_t workspace_bytes(const std::vector<Problem>& problems) {
  size_t total = 0;
  for (const auto& p : problems) total += ProblemWorkspace::bytes_needed(p);
  return total;
}

ProblemSummary summarize_problem(Store& store, int64_t device_id, const Problem& problem) {
  ProblemSummary s;
  s.problem = problem;
  for (const auto& t : store.trials(device_id, problem)) {
    switch (t.outcome) {
      case Outcome::ok: ++s.ok; break;
      case Outcome::wrong: ++s.wrong; break;
      case Outcome::abandoned: ++s.abandoned; break;
      case Outcome::skipped: ++s.skipped; break;
      default: ++s.failed; break;
    }
  }
  for (auto& w : store.winners(device_id, problem)) {
    if (w.scope == "overall") s.winner = w;
    if (w.scope == "portable") s.portable = w;
  }
  s.baseline = store.find_baseline(device_id, problem);
  return s;
}

void store_winners(Store& store, int64_t device_id, const Problem& problem) {
  const auto trials = store.trials(device_id, problem);
  const auto baseline = store.find_baseline(device_id, problem);
  const TrialRecord* overall = nullptr;
  const TrialRecord* portable = nullptr;
  std::map<std::string, const TrialRecord*> per_template;
  for (const auto& t : trials) {
    if (t.outcome != Outcome::ok || !t.median_ms) continue;
    const auto better = [&](const TrialRecord* cur) { return !cur || ranks_before(t, *cur); };
    if (better(overall)) overall = &t;
    if (t.requirements.none() && better(portable)) portable = &t;
    if (better(per_template[t.template_name])) per_template[t.template_name] = &t;
  }
  Transaction tx(store.db());
  store.clear_winners(device_id, problem);
  const auto ratio = [&](const TrialRecord& t) {
    if (t.retime_median_ms && t.ratio_to_cublas) return *t.ratio_to_cublas;
    return baseline ? baseline->median_ms / trial_time(t) : 0.0;
  };
  const auto put = [&](const TrialRecord* t, const std::string& scope) {
    if (t) store.put_winner(make_winner(*t, scope, ratio(*t)));
  };
  put(overall, "overall");
  put(portable, "portable");
  for (const auto& [name, t] : per_template) put(t, "template:" + name);
  tx.commit();
}

TuneSummary run_tune(Store& store, Measurer& measurer, const TuneRequest& req, const TuneProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  TuneSummary summary;

  const int64_t device_id = store.upsert_device(req.device.to_record(nvrtc_version_string()));
  RunRecord run;
  run.command_line = req.command_line;
  run.preset_path = req.preset.file.string();
  run.preset_hash = req.preset.content_hash;
  run.device_id = device_id;
  summary.run_id = store.begin_run(run);

  // --budget and --time-limit take a seeded random order; otherwise the whole space, in order.
  std::vector<Candidate> candidates = req.candidates;
  if (req.budget || req.time_limit_s) {
    std::mt19937_64 rng(req.seed);
    std::shuffle(candidates.begin(), candidates.end(), rng);
    if (req.budget && *req.budget < static_cast<int64_t>(candidates.size()))
      candidates.resize(static_cast<size_t>(std::max<int64_t>(0, *req.budget)));
  }
  summary.candidates = static_cast<int64_t>(candidates.size());

  std::map<Problem, double> cublas_ms;             // this run's baseline per problem
  std::map<Problem, double> best_ms;               // best ok median per problem (abandon bar)
  std::set<Problem> changed;                        // problems with new trials
  const auto baseline_for = [&](const Problem& p) {
    auto it = cublas_ms.find(p);
    if (it != cublas_ms.end()) return it->second;
    const SampleStats s = measurer.measure_cublas(p);
    const BaselineRecord b = put_baseline(store, device_id, summary.run_id, p, s);
    spdlog::debug("cuBLAS {}: {:.4f} ms, {:.2f} TFLOP/s", p.to_string(), s.median, b.gflops / 1e3);
    best_ms.emplace(p, s.median);
    for (const auto& t : store.trials(device_id, p))
      if (t.outcome == Outcome::ok && t.median_ms) best_ms[p] = std::min(best_ms[p], *t.median_ms);
    return cublas_ms[p] = s.median;
  };

  const int64_t total = summary.candidates * static_cast<int64_t>(req.problems.size());
  int64_t done = 0;
  std::string status;
  CompileService compiler(store, req.device.arch(), req.jobs);
  compiler.start(candidates);
  std::string run_status = "done";
  while (auto compiled = compiler.next()) {
    const Candidate& cand = *compiled->candidate;
    if (!summary.stop_reason.empty()) continue;  // drain the compiler
    for (const Problem& p : req.problems) {
      ++done;
      const std::string key = trial_key(req.device.uuid, compiled->binary.key, p);
      if (!req.retune && store.find_trial(key)) {
        ++summary.trials_reused;
        continue;
      }
      TrialRecord t;
      if (!compiled->binary.ok) {
        t.problem = p;
        t.outcome = Outcome::compile_error;
        const std::string& log = compiled->binary.log;
        t.reason = log.substr(0, log.find('\n')).substr(0, 200);
        t.log = log;
        if (!compiled->cacheable) {  // not the candidate's fault: do not record it
          --done;
          continue;
        }
      } else {
        const double cublas = baseline_for(p);
        (void)cublas;
        KernelUnderTest k{&compiled->binary, cand.shape, cand.requirements, cand.id()};
        t = measurer.measure(k, p, req.preset.tune.abandon_factor * best_ms[p]);
        if (t.outcome == Outcome::ok) best_ms[p] = std::min(best_ms[p], *t.median_ms);
      }
      t.trial_key = key;
      t.run_id = summary.run_id;
      t.device_id = device_id;
      t.template_name = cand.tmpl->name;
      t.params = params_to_string(cand.values);
      t.name_expression = cand.tmpl->name_expression(cand.values);
      t.binary_key = compiled->binary.key;
      t.threads = cand.shape.threads;
      t.shape = cand.shape;
      t.requirements = cand.requirements;
      if (t.median_ms && cublas_ms.count(p)) t.ratio_to_cublas = cublas_ms[p] / *t.median_ms;
      if (t.outcome == Outcome::compile_error) t.registers = compiled->binary.registers;
      store.insert_trial(t);
      ++summary.trials_measured;
      changed.insert(p);
      if (t.outcome == Outcome::ok && *t.median_ms <= best_ms[p])
        status = fmt::format("best {:.1f} TF/s at {} ({})", *t.gflops / 1e3, p.to_string(), cand.tmpl->name);
      if (progress) progress(done, total, status);
      if (measurer.context_lost()) {
        summary.stop_reason = fmt::format(
            "{} broke the CUDA context on {} ({}); it is recorded as crashed and a rerun skips it", cand.id(),
            p.to_string(), t.reason);
        run_status = "failed";
        compiler.cancel();
        break;
      }
    }
    if (progress) progress(done, total, status);
    if (summary.stop_reason.empty() && req.time_limit_s && elapsed() > *req.time_limit_s) {
      summary.stop_reason = fmt::format("--time-limit {} s reached after {} candidates", *req.time_limit_s,
                                        compiled->index + 1);
      compiler.cancel();
    }
  }
  const CompileStats& cs = compiler.stats();
  summary.compile_cache_hits = cs.cache_hits;
  summary.compiled = cs.compiled;
  summary.compile_failures = cs.failed;

  // Re-time the leaders of every problem that changed, interleaved with cuBLAS, and pick winners.
  if (!measurer.context_lost()) {
    for (const Problem& p : req.problems) {
      const bool has_winner = !store.winners(device_id, p).empty();
      if (!changed.count(p) && has_winner) continue;
      std::vector<TrialRecord> ok;
      for (auto& t : store.trials(device_id, p))
        if (t.outcome == Outcome::ok && t.median_ms) ok.push_back(std::move(t));
      if (ok.empty()) continue;
      std::sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return *a.median_ms < *b.median_ms; });
      std::vector<const TrialRecord*> leaders;
      for (const auto& t : ok)
        if (static_cast<int>(leaders.size()) < req.preset.tune.retime_top) leaders.push_back(&t);
      const auto portable = std::find_if(ok.begin(), ok.end(), [](const auto& t) { return t.requirements.none(); });
      if (portable != ok.end() && std::find(leaders.begin(), leaders.end(), &*portable) == leaders.end())
        leaders.push_back(&*portable);

      std::vector<BinaryRecord> binaries;
      binaries.reserve(leaders.size());
      std::vector<const TrialRecord*> timed;
      for (const TrialRecord* t : leaders) {
        auto bin = store.find_binary(t->binary_key);
        if (!bin || !bin->ok) continue;
        binaries.push_back(std::move(*bin));
        timed.push_back(t);
      }
      if (timed.empty()) {
        store_winners(store, device_id, p);
        continue;
      }
      std::vector<KernelUnderTest> kernels;
      for (size_t i = 0; i < timed.size(); ++i)
        kernels.push_back({&binaries[i], timed[i]->shape, timed[i]->requirements,
                           fmt::format("{}[{}]", timed[i]->template_name, timed[i]->params)});
      const auto results = measurer.retime(kernels, p);
      const TimingResult& cublas = results.back();
      if (cublas.status == cudaSuccess && cublas.stats.count > 0) {
        put_baseline(store, device_id, summary.run_id, p, cublas.stats);
        for (size_t i = 0; i < timed.size(); ++i)
          if (results[i].status == cudaSuccess && results[i].stats.count > 0)
            store.set_retime(timed[i]->id, results[i].stats.median, cublas.stats.median / results[i].stats.median);
      }
      store_winners(store, device_id, p);
    }
  }
  for (const Problem& p : req.problems) {
    ProblemSummary ps = summarize_problem(store, device_id, p);
    ps.measured_now = 0;
    summary.problems.push_back(std::move(ps));
  }
  summary.wall_seconds = elapsed();
  store.end_run(summary.run_id, run_status);
  return summary;
}

}  // namespace cmt
