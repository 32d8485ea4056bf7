// GPU timing with CUDA events: warm-up, an L2 flush before every sample, and a time budget.
#pragma once

#include <cuda_runtime_api.h>
#include <functional>
#include <vector>

#include "core/stats.hpp"
#include "cuda/gpu.hpp"

namespace cmt {

/// Enqueues one run of the code under test on the timer's stream; returns the launch status.
using Launcher = std::function<cudaError_t()>;

struct TimingResult {
  cudaError_t status = cudaSuccess;  // first failing launch or synchronization
  bool abandoned = false;            // stopped early: far slower than the bar
  std::vector<float> samples_ms;
  SampleStats stats;
};

/// When a sampling loop stops: after budget_ms of wall time once min_samples are taken, or at
/// max_samples, after `warmup` launches that are not timed.
struct SamplingPlan {
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 2000;
  double budget_ms = 25.0;
  double kernel_timeout_ms = 0;  // > 0: a launch running longer is a timeout (cudaErrorTimeout)
};

class Timer {
 public:
  /// flush_bytes: size of the buffer overwritten before each sample (at least twice the L2).
  Timer(cudaStream_t stream, size_t flush_bytes);

  /// Samples as the plan says. With abandon_above_ms > 0, stops after the first few samples when
  /// their median exceeds it.
  TimingResult time(const Launcher& launch, const SamplingPlan& plan, double abandon_above_ms);

  /// Runs every launcher once per round, in order, each after a flush; returns samples per launcher.
  /// Interleaving puts all of them under the same clock and thermal conditions.
  /// kernel_timeout_ms > 0 bounds each launch.
  std::vector<TimingResult> time_interleaved(const std::vector<Launcher>& launches, int rounds, int warmup,
                                             double kernel_timeout_ms);

 private:
  void flush();
  /// Waits for `launches` launches, each allowed timeout_ms (0: no limit).
  cudaError_t wait(int launches, double timeout_ms) const;
  cudaStream_t m_stream;
  DeviceBuffer m_flush;
  std::vector<Event> m_start, m_stop;
};

}  // namespace cmt
