// Measuring candidates on the GPU: validation, then timing. The Measurer interface takes a
// compiled candidate and returns a trial record, so the loop can later move into a worker process.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/kernel_module.hpp"
#include "space/preset.hpp"
#include "space/space.hpp"
#include "store/records.hpp"
#include "tune/stats.hpp"
#include "tune/timer.hpp"
#include "tune/validator.hpp"
#include "tune/workspace.hpp"

namespace cmt {

/// One compiled kernel to run: its binary and launch shape.
struct KernelUnderTest {
  const BinaryRecord* binary = nullptr;
  LaunchShape shape;
  Requirements requirements;
  std::string label;                  // for messages
};

/// Fills outcome, reason, log, errors, timing, resources of a trial; keys and ids are the caller's.
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// Validates, then times one kernel on one problem. abandon_above_ms > 0 allows stopping early.
  virtual TrialRecord measure(const KernelUnderTest& kernel, const Problem& problem, double abandon_above_ms) = 0;
  /// Times cuBLAS on a problem with the same protocol.
  virtual SampleStats measure_cublas(const Problem& problem) = 0;
  /// Times the kernels and cuBLAS interleaved, round-robin; returns one result per kernel, cuBLAS last.
  virtual std::vector<TimingResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem) = 0;
  /// True once a kernel has broken the CUDA context; nothing more can be measured in this process.
  virtual bool context_lost() const = 0;
};

/// Measures in this process, on the current device.
class InProcessMeasurer final : public Measurer {
 public:
  InProcessMeasurer(const DeviceInfo& device, const TuneSettings& settings, uint64_t seed);
  ~InProcessMeasurer() override;

  /// Creates the workspace (inputs, references) of a problem ahead of use.
  void prepare(const Problem& problem);

  TrialRecord measure(const KernelUnderTest& kernel, const Problem& problem, double abandon_above_ms) override;
  SampleStats measure_cublas(const Problem& problem) override;
  std::vector<TimingResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem) override;
  bool context_lost() const override { return m_context_lost; }

 private:
  ProblemWorkspace& workspace(const Problem& problem);
  /// Loads (or reuses) the kernel and checks that it can launch; returns a reason when it cannot.
  std::optional<std::string> load(const KernelUnderTest& kernel, LoadedKernel*& loaded, Outcome& outcome);
  Launcher timing_launcher(const LoadedKernel& kernel, const LaunchShape& shape, const ProblemWorkspace& ws);
  /// cuBLAS on the workspace's timing layout, with the timing alpha and beta.
  Launcher cublas_launcher(const ProblemWorkspace& ws);

  DeviceInfo m_device;
  TuneSettings m_settings;
  uint64_t m_seed;
  std::unique_ptr<Stream> m_stream;
  std::unique_ptr<CublasHandle> m_cublas;
  std::unique_ptr<Validator> m_validator;
  std::unique_ptr<Timer> m_timer;
  std::map<Problem, std::unique_ptr<ProblemWorkspace>> m_workspaces;
  std::map<std::string, std::unique_ptr<LoadedKernel>> m_loaded;   // by binary key; small LRU
  std::vector<std::string> m_loaded_order;                         // least recently used first
  size_t m_pinned = 0;  // while re-timing: the cache keeps at least this many kernels
  bool m_context_lost = false;
};

/// Why a kernel's requirements rule out a layout, or nullopt when they are met.
std::optional<std::string> unmet_requirements(const Requirements& req, const Layout& layout);

}  // namespace cmt
