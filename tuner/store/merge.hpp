// Merging cm-tune databases into one (`cm-tune db merge OUT IN...`): the rows of every input,
// deduplicated by the content keys the store already uses, with where each came from, written to
// OUT in one transaction. The inputs are only read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "store/store.hpp"

namespace cmt {

/// Chooses and stores the winners of one problem on one device of `out` from its trials and its
/// baseline. The merge calls it inside its transaction for every (device, problem) whose trials or
/// baseline it changed; the caller passes the record stage's one ranking (record/ranking.hpp, through
/// ProblemState::store_winners), which the store may not include.
using ChooseWinners = std::function<void(Store& out, int64_t device_id, const Problem& problem)>;

/// What a merge took from one input.
struct MergedInput {
  std::string path;                 // as given
  std::string absolute_path;
  std::string content_hash;         // the input's Store::content_hash
  /// Every row it holds was in OUT already: nothing was written for it, not even its merge_inputs row.
  bool nothing_new = false;
  /// With nothing_new: when and as what an input of the same content hash was merged into OUT, if one was.
  std::string merged_before_at, merged_before_path;
  int64_t runs = 0;                 // runs copied from it
  int64_t trials_added = 0;         // trial keys OUT did not hold
  int64_t trials_duplicate = 0;     // keys OUT held with the same measurement
  int64_t trials_replaced = 0;      // keys OUT held with an older measurement, which this one replaced
  int64_t trials_superseded = 0;    // keys OUT held with a newer measurement, which stays
};

/// What merge_databases did. Counts are over all inputs; trials of one input count in the order the
/// inputs were merged (`inputs` holds them as given).
struct MergeResult {
  std::filesystem::path out;
  bool created = false;                  // OUT did not exist and was created
  bool changed = false;                  // anything was written to OUT
  std::vector<MergedInput> inputs;       // in the order given
  int64_t devices = 0;                   // OUT's, after
  int64_t devices_added = 0;
  int64_t runs_added = 0;
  int64_t trials_added = 0, trials_duplicate = 0, trials_replaced = 0, trials_superseded = 0;
  int64_t baselines_added = 0;           // a device and problem OUT had no baseline of
  int64_t baselines_replaced = 0;        // OUT's baseline replaced by a newer one (kept as superseded)
  int64_t baselines_superseded = 0;      // measurements added to superseded_baselines
  int64_t binaries_added = 0;
  int64_t binaries_restored = 0;         // OUT's binary without a cubin given an input's copy with one
  int64_t sources_added = 0;
  int64_t winners_recomputed = 0;        // (device, problem) pairs whose winners were chosen again
  std::string content_hash;              // OUT's Store::content_hash, after
};

/// Merges the databases `inputs` into `out`, which is created (latest schema) when missing or an empty
/// file and, when it holds a database, merged into as one more input. Every write goes to `out`, in
/// one transaction: a merge that fails leaves `out` as it was (a created `out` is removed). Inputs are
/// opened to read only, and an input's -wal file is read but never folded into it.
///
/// Rows are matched by their content keys: devices by uuid (the most recently seen description wins,
/// first_seen is the earliest), sources by hash with their headers, binaries by key (a copy with its
/// cubin is kept over one without), runs by their content (device, command line, preset, times and
/// status: an identical run is the same run), trials by trial_key (one measurement per key: the one
/// created last, then a re-timed one, then the greater content), baselines by device and problem (the
/// one created last stays in baselines, every other measurement in superseded_baselines). Trials are
/// added in the order they were created, each input's in its own order (ranking ties go to the trial
/// recorded first). Inputs are taken in the order of their content hashes, not as given, so the
/// result does not depend on the order of the arguments.
///
/// Each input that adds anything gets a merge_inputs row, which its copied runs name; an input that
/// adds nothing (merged before, or a copy of OUT) adds no row, so merging the same inputs again
/// leaves `out` unchanged. Finally `choose_winners` runs for every (device, problem) whose trials or
/// baseline changed.
///
/// Refuses with a UsageError (one line, before anything is written) an input that does not exist or
/// is not a cm-tune database, one of another schema version than this cm-tune's (an older one is to be
/// migrated as a copy first), the same file given twice (by device and inode: also through another
/// path or a link), and `out` given as an input or as a side file of one; `out` of an older schema is
/// refused too (merge migrates nothing; `db migrate` does). A row of an input that names a device or
/// run the input does not hold (an orphan) is refused when met, and the merge rolled back.
MergeResult merge_databases(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                            const ChooseWinners& choose_winners);

}  // namespace cmt
