// The GPU side of the measure stage: validation, then timing, in this process on the current
// device. It implements the pipeline's Measurer and lends the same machinery (loaded kernels,
// workspaces, validator, timer) to `bench`, so every timing cm-tune reports is taken one way.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/tune_settings.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/gpu.hpp"
#include "cuda/kernel_module.hpp"
#include "measure/gpu/timer.hpp"
#include "measure/gpu/validator.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/measurer.hpp"

namespace cmt {

class GpuMeasurer final : public Measurer {
 public:
  /// Inputs of every problem are drawn from `seed` and the problem.
  GpuMeasurer(const DeviceInfo& device, const TuneSettings& settings, uint64_t seed);
  ~GpuMeasurer() override;
  GpuMeasurer(const GpuMeasurer&) = delete;
  GpuMeasurer& operator=(const GpuMeasurer&) = delete;

  Measurement measure(const KernelUnderTest& kernel, const Problem& problem, const MeasureLimits& limits) override;
  SampleStats measure_cublas(const Problem& problem) override;
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem,
                                   double kernel_timeout_ms) override;
  bool context_lost() const override { return m_context_lost; }
  void release_problems() override { m_workspaces.clear(); }

  /// The stream every launch goes to.
  cudaStream_t stream() const { return m_stream->get(); }
  /// A kernel, loaded and checked for launchability (kept loaded while the measurer lives, beyond
  /// its small cache), as a launcher; or nullopt and the reason in *why_not.
  std::optional<GemmLauncher> kernel_launcher(const KernelUnderTest& kernel, std::string* why_not);
  /// cuBLAS on this measurer's stream, for any GemmArgs of f32 (SGEMM, TF32 off) or f64 (DGEMM): the
  /// ops of trans_a/trans_b, and the strided-batched routine when batch > 1. i32 calls fail.
  GemmLauncher cublas_launcher() const;
  /// The reference validation compares with: cublas_launcher() for f32 and f64, the exact wrapping
  /// INT32 kernel (measure/gpu/validation_kernels.hpp) for i32.
  GemmLauncher reference_launcher() const;
  /// Validates an implementation on the problem's workspace (tune's validation, guards and all).
  ValidationResult validate(const GemmLauncher& launch, const Problem& problem);
  /// Times implementations interleaved on the problem's timing layout: `rounds` rounds, each
  /// running every implementation once after an L2 flush; one result per implementation.
  std::vector<TimingResult> time_interleaved(const std::vector<GemmLauncher>& launches, const Problem& problem,
                                             int rounds, double kernel_timeout_ms = 0);

 private:
  ProblemWorkspace& workspace(const Problem& problem);
  /// Loads (or reuses) the kernel and checks that it can launch; returns a reason when it cannot.
  std::optional<std::string> load(const KernelUnderTest& kernel, LoadedKernel*& loaded, Outcome& outcome);
  SamplingPlan sampling_plan(double kernel_timeout_ms) const;
  /// Records that the context is unusable after `status` (a sticky error, or a kernel still running).
  void note_failure(cudaError_t status);

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
  std::set<std::string> m_held;  // never evicted: kernels whose launchers are out (bench, re-timing)
  bool m_context_lost = false;
};

}  // namespace cmt
