// The measuring of `cm-tune precision`: on one problem, each of a list of GemmRunners is checked
// against an FP64 reference (the largest error in units of 2^-24 of each element's scale), timed
// interleaved with the others, and run in a loop of at least a given length while NVML's energy
// counter is read before and after.
#pragma once

#include <memory>
#include <vector>

#include "cli/precision_report.hpp"
#include "core/device_info.hpp"
#include "cuda/gemm_runner.hpp"
#include "cuda/gpu.hpp"
#include "cuda/nvml_energy.hpp"
#include "measure/gpu/timer.hpp"
#include "measure/gpu/validator.hpp"

namespace cmt::cli {

struct PrecisionSettings {
  InputDistribution data = InputDistribution::uniform;
  uint64_t seed = 1;            // with the problem, draws its inputs: a rerun measures the same data
  int rounds = 50;              // interleaved timing rounds
  double energy_seconds = 2.0;  // the least length of an energy loop
};

/// A runner and what it is to the report.
struct RunnerEntry {
  GemmRunner* runner = nullptr;
  PrecisionRole role = PrecisionRole::kernel;
};

class PrecisionMeasurer {
 public:
  /// On the current device (select_device first). `energy` is read around each loop when available,
  /// and no loop runs when it is not; it must outlive the measurer.
  PrecisionMeasurer(const DeviceInfo& device, const PrecisionSettings& settings, const NvmlEnergy& energy);
  PrecisionMeasurer(const PrecisionMeasurer&) = delete;
  PrecisionMeasurer& operator=(const PrecisionMeasurer&) = delete;

  /// The stream every runner is launched on.
  cudaStream_t stream() const { return m_stream.get(); }
  /// Device memory measuring the problem needs (its workspace: inputs, the FP64 copies and
  /// references, C under test, the timing buffers), in bytes.
  static size_t bytes_needed(const Problem& problem);
  /// Measures every runner on the problem (f32, or tf32x3 as the same FP32 storage), a row each in
  /// order. A runner whose launch fails has its row's `failure` and is left out of what follows. The
  /// workspace is freed before returning.
  std::vector<PrecisionRow> measure(const Problem& problem, const std::vector<RunnerEntry>& runners);

 private:
  /// Runs the launcher in a loop of at least energy_seconds (the count from median_ms), after a
  /// warm-up, between two readings of the counter; the row's energy or its energy_note.
  void measure_energy(const GemmLauncher& launch, const GemmArgs& args, double flops, PrecisionRow& row);

  DeviceInfo m_device;
  PrecisionSettings m_settings;
  const NvmlEnergy& m_energy;
  Stream m_stream;
  CublasHandle m_reference;  // the workspace's SGEMM and DGEMM, TF32 off
  Validator m_validator;
  Timer m_timer;
};

}  // namespace cmt::cli
