#include "cli/precision_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <string>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/stats.hpp"
#include "cuda/check.hpp"
#include "measure/gpu/workspace.hpp"
#include "measure/l2_flush.hpp"
#include "measure/tolerance.hpp"

namespace cmt::cli {

namespace {

constexpr int k_warmup = 2;                       // launches of each runner before the timed rounds
constexpr double k_energy_warmup_share = 0.2;     // of the loop, run before the first reading
constexpr double k_counter_step_wait_ms = 1000;   // the longest wait for the energy counter to step
constexpr double k_energy_margin = 1.02;          // the loop's count aims this far past --energy-seconds

/// The problem as its workspace is built: the tf32x3 class, whose references are FP64 (cuBLAS DGEMM
/// of the same inputs) beside SGEMM's results, in FP32 storage like f32.
Problem fp64_checked(Problem p) {
  p.dtype = DType::tf32x3;
  return p;
}

/// The inputs' seed: from the run's seed and the problem, as GpuMeasurer draws them.
uint64_t problem_seed(uint64_t seed, const Problem& p) {
  Hasher h;
  h.field(static_cast<int64_t>(seed)).field(p.to_string());
  return std::stoull(h.hex().substr(0, 15), nullptr, 16);
}

}  // namespace

PrecisionMeasurer::PrecisionMeasurer(const DeviceInfo& device, const PrecisionSettings& settings,
                                     const NvmlEnergy& energy)
    : m_device(device),
      m_settings(settings),
      m_energy(energy),
      m_reference(m_stream.get()),
      m_validator(m_stream.get()),
      // Overwriting twice the L2 before each timed launch, as bench does.
      m_timer(m_stream.get(), l2_flush_bytes(device)) {}

size_t PrecisionMeasurer::bytes_needed(const Problem& problem) {
  return ProblemWorkspace::bytes_needed(fp64_checked(problem));
}

std::vector<PrecisionRow> PrecisionMeasurer::measure(const Problem& problem, const std::vector<RunnerEntry>& runners) {
  Problem p = problem;
  p.dtype = DType::f32;
  const ProblemWorkspace ws(fp64_checked(p), problem_seed(m_settings.seed, p), m_stream.get(), m_reference, 1,
                            m_settings.data);
  std::vector<PrecisionRow> rows(runners.size());
  std::vector<GemmLauncher> launches;
  for (const RunnerEntry& e : runners) launches.push_back(launcher_on(*e.runner, m_stream.get()));

  // Accuracy: every validation case against FP64, and the tuner's verdict on the same data.
  std::vector<size_t> running;
  for (size_t i = 0; i < runners.size(); ++i) {
    PrecisionRow& row = rows[i];
    row.problem = p;
    row.implementation = runners[i].runner->name();
    row.role = runners[i].role;
    const ErrorMeasurement errors = m_validator.measure_errors(launches[i], ws, 0.0);
    if (errors.status != cudaSuccess) {
      if (is_sticky_error(errors.status))
        throw InfraError("CUDA", row.implementation, errors.reason + " (the CUDA context is lost)", __FILE__, __LINE__);
      row.failure = errors.reason;
      continue;
    }
    for (const double ratio : errors.max_error_ratio) row.error_units.push_back(fp32_error_units(ratio, p.k));
    const ValidationResult verdict = m_validator.validate(launches[i], ws, 0.0);
    row.passes = verdict.passed;
    row.check = verdict.reason;
    running.push_back(i);
  }

  // Speed: the runners that ran, interleaved, each launch after an L2 flush.
  const GemmArgs args = ws.timing_args();
  std::vector<Launcher> timed;
  for (const size_t i : running) timed.push_back([&launch = launches[i], args] { return launch(args); });
  const std::vector<TimingResult> times = m_timer.time_interleaved(timed, m_settings.rounds, k_warmup, 0.0);
  std::vector<size_t> timed_ok;
  for (size_t j = 0; j < running.size(); ++j) {
    PrecisionRow& row = rows[running[j]];
    if (times[j].status != cudaSuccess) {
      if (is_sticky_error(times[j].status))
        throw InfraError("CUDA", row.implementation, cudaGetErrorString(times[j].status), __FILE__, __LINE__);
      row.failure = fmt::format("failed while timing: {}", cudaGetErrorString(times[j].status));
      continue;
    }
    row.median_ms = times[j].stats.median;
    row.tflops = gflops(p.flops(), row.median_ms) / 1e3;
    timed_ok.push_back(running[j]);
  }

  // Energy: a loop of each, one after the other.
  if (m_energy.available())
    for (const size_t i : timed_ok) measure_energy(launches[i], args, p.flops(), rows[i]);
  return rows;
}

void PrecisionMeasurer::measure_energy(const GemmLauncher& launch, const GemmArgs& args, double flops,
                                       PrecisionRow& row) {
  const double target_ms = m_settings.energy_seconds * 1e3;
  const auto loop = [&](int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      if (const cudaError_t status = launch(args); status != cudaSuccess) return status;
    return cudaSuccess;
  };
  // The warm-up (a fifth of the loop, by the timed median) brings the GPU to this GEMM's clocks and
  // power before the counter is read, and times back-to-back runs, which are faster than the timed
  // ones where the inputs stay in L2: the loop's count comes from it.
  const auto warmup = static_cast<int64_t>(std::ceil(target_ms * k_energy_warmup_share / std::max(row.median_ms, 1e-6)));
  Event warm_begin, warm_end;
  warm_begin.record(m_stream.get());
  cudaError_t status = loop(warmup);
  warm_end.record(m_stream.get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(m_stream.get());
  if (status != cudaSuccess) {
    if (is_sticky_error(status))
      throw InfraError("CUDA", row.implementation, cudaGetErrorString(status), __FILE__, __LINE__);
    row.energy_note = fmt::format("the warm-up loop failed: {}", cudaGetErrorString(status));
    return;
  }
  const double per_run_ms = std::max(static_cast<double>(warm_end.elapsed_since(warm_begin)) / static_cast<double>(warmup), 1e-6);
  const auto runs = static_cast<int64_t>(std::ceil(target_ms * k_energy_margin / per_run_ms));
  std::string why;
  // Both readings just after the counter steps: the first is current when the loop starts; the
  // second comes after the loop's end, so it includes all of the loop's energy (and at most one
  // step of the idle GPU after it).
  const auto start_mj = m_energy.read_after_step(k_counter_step_wait_ms, &why);
  const auto start = std::chrono::steady_clock::now();
  if (!start_mj) {
    row.energy_note = why;
    return;
  }
  Event begin, end;
  begin.record(m_stream.get());
  status = loop(runs);
  end.record(m_stream.get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(m_stream.get());
  if (status != cudaSuccess) {
    if (is_sticky_error(status))
      throw InfraError("CUDA", row.implementation, cudaGetErrorString(status), __FILE__, __LINE__);
    row.energy_note = fmt::format("the energy loop failed: {}", cudaGetErrorString(status));
    return;
  }
  const auto end_mj = m_energy.read_after_step(k_counter_step_wait_ms, &why);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!end_mj) {
    row.energy_note = why;
    return;
  }
  const auto use = energy_between(*start_mj, *end_mj, runs, seconds, &why);
  if (!use) {
    row.energy_note = why;
    return;
  }
  PrecisionEnergy e;
  e.runs = runs;
  e.joules_per_gemm = use->joules_per_run();
  e.watts = use->watts();
  e.seconds = use->seconds;
  const double loop_ms = end.elapsed_since(begin);
  e.loop_tflops = loop_ms > 0 ? flops * static_cast<double>(runs) / (loop_ms * 1e9) : 0.0;
  row.energy = e;
}

}  // namespace cmt::cli
