// Trial records: the content key that makes a rerun skip what is stored, and the one place a
// record is built from a candidate, its binary and what measuring it found.
#pragma once

#include <optional>
#include <string>

#include "space/space.hpp"
#include "store/records.hpp"
#include "measure/measurer.hpp"

namespace cmt {

/// The content key of a trial: the measurement protocol, the device, the compiled binary and the
/// problem.
std::string trial_key(const std::string& device_uuid, const std::string& binary_key, const Problem& problem);

/// Where a trial was measured.
struct TrialContext {
  int64_t run_id = 0;
  int64_t device_id = 0;
  std::string device_uuid;
};

/// A candidate that did not compile, as a measurement: its first log line as the reason.
Measurement compile_failure(const BinaryRecord& binary);

/// The trial of a candidate on a problem. cublas_ms, this run's cuBLAS median for the problem, gives
/// the ratio of a timed trial.
TrialRecord make_trial(const TrialContext& context, const Candidate& candidate, const BinaryRecord& binary,
                       const Problem& problem, const Measurement& measurement, std::optional<double> cublas_ms);

}  // namespace cmt
