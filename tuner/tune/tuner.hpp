// The tuning pipeline: search -> compile -> measure -> record, then re-time the leaders and choose
// the winners. Each stage is its own seam or module (search/searcher.hpp, compile_service.hpp,
// measurer.hpp, trial.hpp, problem_state.hpp, ranking.hpp); this file only runs them in order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.hpp"
#include "core/device_info.hpp"
#include "measure/measurer.hpp"
#include "measure/measurer_pool.hpp"
#include "record/problem_state.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "store/store.hpp"

namespace cmt {

struct TuneRequest {
  DeviceInfo device;
  std::vector<Problem> problems;
  Preset preset;
  std::vector<Candidate> candidates;       // the enumerated space
  int jobs = 0;                            // compiler threads; 0: all cores
  bool retune = false;                     // measure again what is already stored
  std::optional<int64_t> budget;           // sample this many candidates at random
  std::optional<double> time_limit_s;      // stop starting new candidates after this long
  uint64_t seed = 0;                       // sampling order
  std::string command_line;
  /// After the problems: measure their leaders and the shape-specific families on the calibration
  /// shapes (search/calibration.hpp), which the exported dispatch's cost model is fitted on.
  bool calibrate = false;
  int calibration_leaders = 3;             // best trials per problem that calibration measures
  /// Per candidate (empty: none): measure it also on problems where its family's `applies` is
  /// false (calibration's leaders, which the exported dispatch may run at any shape).
  std::vector<bool> ignore_applies;
  /// The watchdog on one launch; unset: default_kernel_timeout_ms (measure/protocol.hpp).
  std::optional<double> kernel_timeout_s;
  /// Asked after every trial: true stops the run as soon as the trial in flight is recorded
  /// (SIGINT, SIGTERM). Nothing is re-timed; a rerun re-times what this run left.
  std::function<bool()> should_stop;
};

/// What the passes of a run did, added up over them.
struct TuneCounts {
  int64_t trials_measured = 0;
  int64_t trials_reused = 0;
  int64_t compile_cache_hits = 0;
  int64_t compiled = 0;
  int64_t compile_failures = 0;
  TuneCounts& operator+=(const TuneCounts& other);
};

struct TuneSummary : TuneCounts {
  std::vector<ProblemSummary> problems;
  int64_t candidates = 0;                  // candidates the search planned (after --budget)
  double wall_seconds = 0;
  int64_t run_id = 0;
  std::string stop_reason;                 // empty when the whole space was searched
  bool interrupted = false;                // should_stop said so
  std::vector<ProblemSummary> calibration; // the calibration shapes, when calibrating
  int64_t calibration_candidates = 0;
};

/// Called after every trial: done, total, and a status line (current best).
using TuneProgress = std::function<void(int64_t done, int64_t total, const std::string& status)>;

/// Runs the whole pipeline; every trial is committed as it is recorded. With a pool, the
/// measurements go to its members (several GPUs of one model) as each becomes idle.
TuneSummary run_tune(Store& store, const Compiler& compiler, MeasurerPool& pool, const TuneRequest& request,
                     const TuneProgress& progress);
TuneSummary run_tune(Store& store, const Compiler& compiler, Measurer& measurer, const TuneRequest& request,
                     const TuneProgress& progress);

/// A problem's leaders: the retime_top best back-to-back medians, and the best trial without input
/// requirements.
std::vector<const TrialRecord*> leaders(const ProblemState& state, int retime_top);

/// The re-timing stage for one problem: its leaders (from leaders()) timed interleaved with cuBLAS;
/// records their medians and the cuBLAS baseline of the same rounds (for i32, which has none, the
/// medians alone, without a ratio). In three steps, so that the measuring runs on a pool's thread
/// and the recording on the driver's: prepare_retime, RetimeJob::run, record_retime.
struct RetimeJob {
  Problem problem;
  double kernel_timeout_ms = 0;
  std::vector<BinaryRecord> binaries;    // the leaders' binaries (the kernels point into it)
  std::vector<int64_t> trial_ids;
  std::vector<KernelUnderTest> kernels;
  std::vector<RetimeResult> results;     // after run(): one per kernel, cuBLAS last
  void run(Measurer& measurer);
};
RetimeJob prepare_retime(Store& store, const ProblemState& state, const std::vector<const TrialRecord*>& leads,
                         double kernel_timeout_ms);
void record_retime(Store& store, ProblemState& state, int64_t run_id, const RetimeJob& job);

/// The watchdog on one launch for a problem: --kernel-timeout, else derived from cuBLAS's time, or
/// for a type without a cuBLAS baseline (i32) from peak_time_ms.
double kernel_timeout_ms(const TuneRequest& request, const ProblemState& state);

/// The time a problem takes at the device's peak rate for its type (type_peak), in ms; 0 when the
/// device's peak is unknown.
double peak_time_ms(const DeviceInfo& device, const Problem& problem);

}  // namespace cmt
