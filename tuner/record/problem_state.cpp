#include "record/problem_state.hpp"

#include <algorithm>

#include "core/dtype.hpp"
#include "measure/protocol.hpp"
#include "record/ranking.hpp"

namespace cmt {

ProblemState::ProblemState(Store& store, int64_t device_id, const Problem& problem)
    : m_device_id(device_id),
      m_problem(problem),
      m_trials(store.trials(device_id, problem)),
      m_winners(store.winners(device_id, problem)),
      m_baseline(store.find_baseline(device_id, problem)) {
  for (const auto& t : m_trials) m_keys.insert(t.trial_key);
  // With a baseline, the best time starts at cuBLAS's (record_baseline); without one, at the best
  // stored trial's.
  if (!type_info(problem.dtype).cublas_baseline)
    for (const auto& t : m_trials)
      if (passed(t)) m_best_ms = m_best_ms > 0 ? std::min(m_best_ms, *t.median_ms) : *t.median_ms;
}

double ProblemState::abandon_bar_ms(double abandon_factor) const {
  const bool any_passed = std::any_of(m_trials.begin(), m_trials.end(), [](const TrialRecord& t) { return passed(t); });
  return any_passed ? abandon_factor * m_best_ms : 0.0;
}

void ProblemState::record_baseline(Store& store, int64_t run_id, const SampleStats& s) {
  BaselineRecord b;
  b.device_id = m_device_id;
  b.problem = m_problem;
  const Layout t = timing_layout(m_problem);
  b.lda = t.lda, b.ldb = t.ldb, b.ldc = t.ldc;
  b.median_ms = s.median, b.min_ms = s.min, b.cv = s.cv, b.samples = s.count;
  b.gflops = gflops(m_problem.flops(), s.median);
  b.run_id = run_id;
  store.put_baseline(b);
  m_baseline = b;
  if (!m_cublas_ms) {
    m_cublas_ms = s.median;
    m_best_ms = s.median;
    for (const auto& trial : m_trials)
      if (passed(trial)) m_best_ms = std::min(m_best_ms, *trial.median_ms);
  }
}

void ProblemState::record(Store& store, TrialRecord trial) {
  trial = store.insert_trial(trial);   // as stored: another process may have measured it first
  if (passed(trial))
    m_best_ms = m_best_ms > 0 || type_info(m_problem.dtype).cublas_baseline ? std::min(m_best_ms, *trial.median_ms)
                                                                      : *trial.median_ms;
  m_changed = true;
  if (m_keys.insert(trial.trial_key).second) {
    m_trials.push_back(std::move(trial));
    return;
  }
  // Re-measured in place: the store kept the id and, unless the trial still passes, dropped the
  // winners chosen from it.
  const auto old = std::find_if(m_trials.begin(), m_trials.end(),
                                [&](const TrialRecord& t) { return t.trial_key == trial.trial_key; });
  if (!passed(trial))
    m_winners.erase(std::remove_if(m_winners.begin(), m_winners.end(),
                                   [&](const WinnerRecord& w) { return w.trial_id == old->id; }),
                    m_winners.end());
  *old = std::move(trial);
}

void ProblemState::record_retime(Store& store, int64_t trial_id, double median_ms,
                                 std::optional<double> ratio_to_cublas) {
  store.set_retime(trial_id, median_ms, ratio_to_cublas);
  for (auto& t : m_trials)
    if (t.id == trial_id) {
      t.retime_median_ms = median_ms;
      t.ratio_to_cublas = ratio_to_cublas;
    }
}

void ProblemState::store_winners(Store& store) {
  // From every trial the database holds now, in one transaction: a tune running beside this one
  // may have measured the problem too, and its measurements count.
  WriteScope transaction(store.db());
  m_trials = store.trials(m_device_id, m_problem);
  m_keys.clear();
  for (const auto& t : m_trials) m_keys.insert(t.trial_key);
  if (!m_baseline) m_baseline = store.find_baseline(m_device_id, m_problem);
  m_winners = choose_winners(m_trials, m_baseline);
  store.replace_winners(m_device_id, m_problem, m_winners);
  transaction.commit();
}

ProblemSummary ProblemState::summary() const {
  ProblemSummary s;
  s.problem = m_problem;
  for (const auto& t : m_trials) {
    switch (t.outcome) {
      case Outcome::ok: ++s.ok; break;
      case Outcome::wrong: ++s.wrong; break;
      case Outcome::abandoned: ++s.abandoned; break;
      case Outcome::skipped: ++s.skipped; break;
      default: ++s.failed; break;
    }
  }
  for (const auto& w : m_winners) {
    if (w.scope == "overall") s.winner = w;
    if (w.scope == "portable") s.portable = w;
  }
  s.baseline = m_baseline;
  return s;
}

}  // namespace cmt
