// What the pipeline knows of one problem during a run: read from the store when the run starts,
// kept in step with every trial, baseline and re-timing it records, and read again when its
// winners are chosen.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "store/store.hpp"

namespace cmt {

struct ProblemSummary {
  Problem problem;
  std::optional<WinnerRecord> winner;      // best overall
  std::optional<WinnerRecord> portable;    // best with no input requirements
  std::optional<BaselineRecord> baseline;
  int64_t ok = 0, wrong = 0, failed = 0, abandoned = 0, skipped = 0;  // all stored trials
};

class ProblemState {
 public:
  /// Reads the problem's trials, winners and baseline on the device.
  ProblemState(Store& store, int64_t device_id, const Problem& problem);

  const Problem& problem() const { return m_problem; }
  /// Trials in the order they were first stored (a re-measured trial keeps its place and id).
  const std::vector<TrialRecord>& trials() const { return m_trials; }
  bool has_trial(const std::string& trial_key) const { return m_keys.count(trial_key) > 0; }
  /// Whether a trial was recorded in this run (the leaders must then be re-timed).
  bool changed() const { return m_changed; }
  bool has_winners() const { return !m_winners.empty(); }

  /// cuBLAS's median in this run, once measured (never for a type without a baseline: i32).
  std::optional<double> cublas_ms() const { return m_cublas_ms; }
  /// The best passing median known for the problem, cuBLAS included (the abandon bar's base); 0
  /// while none is known (no abandoning). Without a cuBLAS baseline, the best trial's.
  double best_ms() const { return m_best_ms; }
  /// The time above which a candidate's timing is abandoned: abandon_factor times best_ms(), once a
  /// trial of the problem has passed; 0 (never) before, so a problem where every candidate is
  /// slower than cuBLAS (FP64 on CUDA cores against DGEMM on tensor cores) still gets a winner.
  double abandon_bar_ms(double abandon_factor) const;

  /// Stores cuBLAS's timing as the problem's baseline; the first one of a run also sets cublas_ms()
  /// and the best time.
  void record_baseline(Store& store, int64_t run_id, const SampleStats& stats);
  /// Stores a trial (Store::insert_trial) and keeps the row as stored.
  void record(Store& store, TrialRecord trial);
  /// Stores a re-timing of the trial with this id; no ratio without a cuBLAS baseline.
  void record_retime(Store& store, int64_t trial_id, double median_ms, std::optional<double> ratio_to_cublas);
  /// Chooses the winners (record/ranking.hpp) from the problem's trials as the database holds them
  /// now, other processes' included, and stores them in place of the old ones, in one transaction.
  void store_winners(Store& store);

  ProblemSummary summary() const;

 private:
  int64_t m_device_id;
  Problem m_problem;
  std::vector<TrialRecord> m_trials;
  std::set<std::string> m_keys;
  std::vector<WinnerRecord> m_winners;
  std::optional<BaselineRecord> m_baseline;
  std::optional<double> m_cublas_ms;
  double m_best_ms = 0;
  bool m_changed = false;
};

}  // namespace cmt
