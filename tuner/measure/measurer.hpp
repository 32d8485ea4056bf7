// The measure stage's seam: validates and times compiled kernels on one problem. The GPU
// implementation is measure/gpu/gpu_measurer.hpp; tune runs it in a worker process through
// measure/worker_measurer.hpp, and the CPU tests script one. It hands back what it found, and the
// pipeline builds the trial record (record/trial.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "core/types.hpp"
#include "store/records.hpp"
#include "measure/protocol.hpp"

namespace cmt {

/// One compiled kernel to run: its binary, launch shape and input requirements.
struct KernelUnderTest {
  const BinaryRecord* binary = nullptr;
  LaunchShape shape;
  Requirements requirements;
  std::string label;                  // for messages, e.g. "multistage[BM=64,...]"
};

/// What measuring one kernel on one problem found.
struct Measurement {
  Outcome outcome = Outcome::ok;
  std::string reason;                 // one line; empty when ok
  std::string log;                    // longer detail (a compile log)
  Layout layout;                      // the timing layout, once known
  std::optional<double> max_abs_error;
  std::optional<double> max_error_ratio;  // max |err| / tolerance (< 1 passes)
  std::optional<double> simt_error_ratio; // Reference::fp64: the FP32 SIMT reference's, the bar
  std::optional<SampleStats> timing;  // when timed (ok or abandoned)
  int registers = -1;
  int64_t smem_bytes = -1;            // static + dynamic
};

/// One kernel (or cuBLAS) of an interleaved re-timing.
struct RetimeResult {
  bool ok = false;
  std::string error;                  // why it could not run, when !ok
  SampleStats stats;
};

/// Bounds on one measurement.
struct MeasureLimits {
  double abandon_above_ms = 0;   // > 0: stop timing after the first samples when their median is above
  double kernel_timeout_ms = 0;  // > 0: one launch still running after this long is a timeout
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  /// Validates, then times one kernel on one problem.
  virtual Measurement measure(const KernelUnderTest& kernel, const Problem& problem, const MeasureLimits& limits) = 0;
  /// Times cuBLAS on a problem with the same protocol. Throws InfraError when it cannot (and for a
  /// problem without a cuBLAS baseline, which the pipeline never asks for).
  virtual SampleStats measure_cublas(const Problem& problem) = 0;
  /// Times the kernels and cuBLAS interleaved, round-robin; one result per kernel, cuBLAS last.
  /// A problem without a cuBLAS baseline (TypeInfo::cublas_baseline: i32) times the kernels alone, and
  /// the last result is not ok and says why. kernel_timeout_ms > 0 bounds each launch, as in measure.
  virtual std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem,
                                           double kernel_timeout_ms) = 0;
  /// True once a kernel has broken the CUDA context (or is still running past its timeout) and
  /// nothing more can be measured: the run must stop. A measurer that recovers (a restarted worker
  /// process) never says so.
  virtual bool context_lost() const = 0;
  /// How many times its measuring process has failed and been restarted (a fault, a hang, a
  /// death); 0 for a measurer in this process. MeasurerPool compares it before and after a job.
  virtual int64_t faults() const { return 0; }
  /// Frees what was kept for the problems measured so far (their device buffers); a problem
  /// measured again is set up afresh. The pipeline calls it between the requested problems and
  /// the calibration shapes, so the two sets never need device memory at once.
  virtual void release_problems() {}
};

}  // namespace cmt
