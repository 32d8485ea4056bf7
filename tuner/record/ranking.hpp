// How measured kernels rank: the one order used by tune's winner choice, `query --top` and export.
//
// A trial's time is its interleaved re-timing median when it was re-timed, else its back-to-back
// median. Re-timed trials rank before the others: back-to-back medians run some kernels (large
// cluster kernels most) up to 16% faster than the same kernel timed between other kernels, and a
// trial that was not re-timed had a slower back-to-back median than every re-timed leader.
#pragma once

#include <optional>
#include <vector>

#include "store/records.hpp"

namespace cmt {

// passed(trial), whether a trial was validated and timed, is store/records.hpp's.
/// The time a trial ranks by, in ms (+huge for a trial without one).
double rank_time(const TrialRecord& trial);
/// True when a ranks strictly before b; equal times rank by the trial's id (the first recorded
/// first), so the order is total and no caller's order of trials changes a ranking.
bool ranks_before(const TrialRecord& a, const TrialRecord& b);
/// The trials that passed (outcome ok, with a time), best first.
std::vector<TrialRecord> ranked_passing(std::vector<TrialRecord> trials);

/// The winners of one problem among its trials: "overall", "portable" (no input requirements) and
/// one "template:NAME" per template. ratio_to_cublas is the re-timing's own when re-timed, else
/// the baseline's median over the trial's time (0 without a baseline).
std::vector<WinnerRecord> choose_winners(const std::vector<TrialRecord>& trials,
                                         const std::optional<BaselineRecord>& baseline);

}  // namespace cmt
