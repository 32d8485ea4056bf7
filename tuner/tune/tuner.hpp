// The tuning loop: compile on a thread pool while the GPU validates and times what is compiled,
// record every trial, re-time the leaders interleaved with cuBLAS, and store the winners.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "tune/measurer.hpp"

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
  uint64_t seed = 0;                       // sampling order and input data
  std::string command_line;
};

struct ProblemSummary {
  Problem problem;
  std::optional<WinnerRecord> winner;      // best overall
  std::optional<WinnerRecord> portable;    // best with no input requirements
  std::optional<BaselineRecord> baseline;
  int64_t ok = 0, wrong = 0, failed = 0, abandoned = 0, skipped = 0;  // all stored trials
  int64_t measured_now = 0;                // trials measured by this run
};

struct TuneSummary {
  std::vector<ProblemSummary> problems;
  int64_t candidates = 0;                  // candidates considered (after --budget)
  int64_t trials_measured = 0;
  int64_t trials_reused = 0;
  int64_t compile_cache_hits = 0;
  int64_t compiled = 0;
  int64_t compile_failures = 0;
  double wall_seconds = 0;
  int64_t run_id = 0;
  std::string stop_reason;                 // empty when the whole space was searched
};

/// Called after every trial: done, total, and a status line (current best).
using TuneProgress = std::function<void(int64_t done, int64_t total, const std::string& status)>;

/// The content key of a trial: device, compiled binary, problem and measurement protocol.
std::string trial_key(const std::string& device_uuid, const std::string& binary_key, const Problem& problem);

/// Device memory the workspaces of these problems need together, in bytes.
size_t workspace_bytes(const std::vector<Problem>& problems);

/// Runs the whole tuning loop; trials are committed as they complete.
TuneSummary run_tune(Store& store, Measurer& measurer, const TuneRequest& request, const TuneProgress& progress);

/// Recomputes and stores the winners of one problem from its stored trials (no GPU needed).
void store_winners(Store& store, int64_t device_id, const Problem& problem);

/// Summary of a problem from what is stored.
ProblemSummary summarize_problem(Store& store, int64_t device_id, const Problem& problem);

}  // namespace cmt
