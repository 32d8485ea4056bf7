// The dispatch's regret at a call, measured (`cm-tune bench --regret`): every exported kernel the
// dispatch could have run there is timed with the one it chose, and the regret is the chosen one's
// time over the fastest's. The held-out check (export/model_check.hpp) estimates the same number
// from the database alone; this is the measured one. Timing is the bench's; what is timed and how
// the rows are summarised is here, without CUDA.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "export/dispatch.hpp"
#include "export/model_check.hpp"

namespace cmt {

/// The kernels (indices into ExportModel::kernels) to time at a call: every model of the call's type
/// that the call can run (DispatchChoice::predictions' usable ones: its layout, batch and
/// requirements) and the chosen kernel (a generic default has no model), in kernel order. Empty when
/// no kernel computes the call.
std::vector<int> regret_candidates(const DispatchChoice& choice);

/// One call: what the dispatch chose, the fastest kernel timed there, and the regret.
struct RegretRow {
  Problem problem;
  int chosen = -1;               // index into ExportModel::kernels
  int splits = 1;                // the dispatch splits K into this many slices (chosen_us times the split run)
  double chosen_us = 0;
  int best = -1;                 // the fastest timed kernel that passed validation; == chosen when it is
  double best_us = 0;
  double regret = 1;             // chosen_us / best_us, at least 1
  size_t timed = 0;              // kernels timed, the chosen one included
  std::vector<int> failed;       // kernels that failed validation there (never the fastest)
};

/// The row of a call from the times of its candidates (microseconds, by kernel) and the kernels that
/// failed validation. `chosen_us` is the chosen kernel's time as the dispatch runs it (split, when
/// it splits K); the chosen kernel itself always competes for the fastest. Throws std::logic_error
/// when `times` has no time for the chosen kernel.
RegretRow regret_row(const Problem& problem, int chosen, int splits, double chosen_us, const std::map<int, double>& times,
                     const std::vector<int>& failed);

/// Median, 90th percentile and maximum of the rows' regrets.
Spread regret_spread(const std::vector<RegretRow>& rows);

}  // namespace cmt
