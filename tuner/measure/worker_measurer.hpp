// Fault isolation for the measure stage: a Measurer that runs every call in a separate measuring
// process (`cm-tune measure-worker`, measure/worker_loop.hpp) and survives it. A kernel that breaks
// the CUDA context, a worker that dies, or one that does not answer in time costs one trial
// (`crashed` or `timeout`) and a restart, never the run. The tuner process itself never touches
// the GPU.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "measure/worker_protocol.hpp"

namespace cmt {

struct WorkerOptions {
  std::vector<std::string> command;  // argv of the measuring process
  WorkerHello hello;
  /// Added to each call's own bound before the worker counts as hung (it watches each launch
  /// itself, so this only catches a worker stuck outside a kernel: loading, host code).
  double grace_ms = 120'000;
};

/// What the worker cost: requests, restarts, and time spent outside the worker's own work.
struct WorkerStats {
  int64_t requests = 0;
  int64_t restarts = 0;          // after a fault, a timeout or a death
  int64_t faults = 0;            // calls that ended the worker: it died, hung or lost its CUDA context
  double startup_seconds = 0;    // spawning, the hello (CUDA context, cuBLAS) and every restart
  double transport_seconds = 0;  // round trips minus the worker's own time
};

class WorkerMeasurer final : public Measurer {
 public:
  /// Starts the worker and says hello; throws what the worker's hello threw (UsageError,
  /// NoDeviceError, InfraError), or InfraError when it cannot start.
  explicit WorkerMeasurer(WorkerOptions options);
  ~WorkerMeasurer() override;
  WorkerMeasurer(const WorkerMeasurer&) = delete;
  WorkerMeasurer& operator=(const WorkerMeasurer&) = delete;

  /// The device the worker measures on, from its hello.
  const DeviceInfo& device() const { return m_device; }
  const WorkerStats& stats() const { return m_stats; }

  Measurement measure(const KernelUnderTest& kernel, const Problem& problem, const MeasureLimits& limits) override;
  SampleStats measure_cublas(const Problem& problem) override;
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem,
                                   double kernel_timeout_ms) override;
  /// Never: a lost context only costs a restart.
  bool context_lost() const override { return false; }
  int64_t faults() const override { return m_stats.faults; }
  void release_problems() override;

 private:
  /// How one call ended.
  struct Exchange {
    std::optional<WorkerReply> reply;  // set when the worker answered
    std::string failure;               // otherwise why not: it died (how) or did not answer in time
    bool timed_out = false;
  };
  void start();
  /// Kills (if alive) and reaps the worker; returns how it ended, e.g. "killed by signal 11 (...)".
  std::string stop(bool kill_first);
  /// Sends a request (starting a worker first if none runs) and waits up to bound_ms + grace for
  /// the reply. CUBINs the worker already holds are not sent again.
  Exchange call(WorkerRequest request, double bound_ms);
  /// One round trip.
  Exchange exchange(const WorkerRequest& request, double bound_ms);
  /// Throws the exception a worker's error reply names.
  [[noreturn]] void raise(const WorkerReply& reply, const char* call) const;

  WorkerOptions m_options;
  DeviceInfo m_device;
  WorkerStats m_stats;
  pid_t m_pid = -1;
  int m_to_worker = -1;
  int m_from_worker = -1;
  std::set<std::string> m_sent;  // binary keys whose CUBINs this worker was sent
};

/// "exited with status 3", "killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int status);

}  // namespace cmt
