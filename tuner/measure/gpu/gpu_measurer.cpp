#include "measure/gpu/gpu_measurer.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "cuda/check.hpp"
#include "measure/l2_flush.hpp"

namespace cmt {

namespace {

constexpr size_t k_loaded_cache = 16;  // kernels kept loaded, besides the held ones
constexpr double k_cublas_timeout_ms = 60'000;  // cuBLAS is trusted; this only bounds a broken device

/// A launcher bound to a loaded kernel's launch shape and a stream.
GemmLauncher kernel_launch(const LoadedKernel& kernel, const LaunchShape& shape, cudaStream_t stream) {
  return [&kernel, shape, stream](const GemmArgs& args) { return kernel.launch(shape, args, stream); };
}

/// What a failed launch or wait records: a launch still running is a timeout, a sticky error
/// crashed the context, anything else is the launch's own error.
Outcome failure_outcome(cudaError_t status) {
  if (status == cudaErrorTimeout) return Outcome::timeout;
  return is_sticky_error(status) ? Outcome::crashed : Outcome::launch_error;
}

RetimeResult retime_result(const TimingResult& r) {
  RetimeResult out;
  out.ok = r.status == cudaSuccess;
  if (!out.ok) out.error = cudaGetErrorString(r.status);
  out.stats = r.stats;
  return out;
}

}  // namespace

GpuMeasurer::GpuMeasurer(const DeviceInfo& device, const TuneSettings& settings, uint64_t seed)
    : m_device(device), m_settings(settings), m_seed(seed) {
  m_stream = std::make_unique<Stream>();
  m_cublas = std::make_unique<CublasHandle>(m_stream->get());
  m_validator = std::make_unique<Validator>(m_stream->get());
  // Overwriting twice the L2 before each sample keeps small problems from timing out of cache.
  m_timer = std::make_unique<Timer>(m_stream->get(), l2_flush_bytes(device));
}

GpuMeasurer::~GpuMeasurer() {
  m_loaded.clear();
  m_workspaces.clear();
}

SamplingPlan GpuMeasurer::sampling_plan(double kernel_timeout_ms) const {
  return {m_settings.warmup, m_settings.min_samples, m_settings.max_samples, m_settings.budget_ms, kernel_timeout_ms};
}

void GpuMeasurer::note_failure(cudaError_t status) {
  // A kernel past its timeout is still running: nothing else can run in this context.
  m_context_lost = m_context_lost || is_sticky_error(status) || status == cudaErrorTimeout;
}

ProblemWorkspace& GpuMeasurer::workspace(const Problem& problem) {
  auto it = m_workspaces.find(problem);
  if (it == m_workspaces.end()) {
    // A new seed per problem: fresh random inputs for every size.
    Hasher h;
    h.field(static_cast<int64_t>(m_seed)).field(problem.to_string());
    const uint64_t seed = std::stoull(h.hex().substr(0, 15), nullptr, 16);
    it = m_workspaces.emplace(problem, std::make_unique<ProblemWorkspace>(problem, seed, m_stream->get(), *m_cublas)).first;
  }
  return *it->second;
}

std::optional<std::string> GpuMeasurer::load(const KernelUnderTest& k, LoadedKernel*& loaded, Outcome& outcome) {
  const std::string& key = k.binary->key;
  auto it = m_loaded.find(key);
  if (it != m_loaded.end()) {  // most recently used last
    m_loaded_order.erase(std::find(m_loaded_order.begin(), m_loaded_order.end(), key));
    m_loaded_order.push_back(key);
  } else {
    std::unique_ptr<LoadedKernel> kernel;
    try {
      kernel = std::make_unique<LoadedKernel>(k.binary->cubin, k.binary->lowered_name);
    } catch (const InfraError& e) {
      outcome = Outcome::launch_error;
      return fmt::format("cannot load the CUBIN: {}", e.library_message());
    }
    // Evict the least recently used kernel that no launcher holds.
    if (m_loaded_order.size() >= k_loaded_cache + m_held.size()) {
      const auto victim = std::find_if(m_loaded_order.begin(), m_loaded_order.end(),
                                       [&](const std::string& key) { return !m_held.count(key); });
      if (victim != m_loaded_order.end()) {
        m_loaded.erase(*victim);
        m_loaded_order.erase(victim);
      }
    }
    m_loaded_order.push_back(key);
    it = m_loaded.emplace(key, std::move(kernel)).first;
  }
  loaded = it->second.get();
  const KernelAttributes& attr = loaded->attributes();
  const LaunchShape& s = k.shape;
  outcome = Outcome::skipped;
  if (attr.local_bytes > 0 && !m_settings.allow_spills)
    return fmt::format("spills registers: {} bytes of local memory per thread ({} registers); set allow_spills "
                       "in the preset's [tune] to measure it anyway",
                       attr.local_bytes, attr.registers);
  if (s.threads > attr.max_threads_per_block)
    return fmt::format("cannot launch: {} threads per block, but with {} registers per thread at most {} fit",
                       s.threads, attr.registers, attr.max_threads_per_block);
  const int64_t smem = attr.static_smem + s.dynamic_smem;
  if (smem > m_device.smem_per_block_optin)
    return fmt::format("cannot launch: {} bytes of shared memory per block, the device allows {}", smem,
                       m_device.smem_per_block_optin);
  if (s.dynamic_smem > m_device.smem_per_block - attr.static_smem || s.dynamic_smem > k_default_smem_per_block) {
    if (const cudaError_t st = loaded->set_dynamic_smem(static_cast<int>(s.dynamic_smem)); st != cudaSuccess) {
      cudaGetLastError();
      return fmt::format("cannot raise the dynamic shared memory limit to {} bytes: {}", s.dynamic_smem,
                         cudaGetErrorString(st));
    }
  }
  if (loaded->max_active_blocks(static_cast<int>(s.threads), static_cast<int>(s.dynamic_smem), static_cast<int>(s.grid_z)) < 1)
    return fmt::format("cannot launch: no {} fits ({} registers x {} threads, {} bytes shared memory)",
                       s.grid_z > 1 ? fmt::format("cluster of {} blocks", s.grid_z) : std::string("block on an SM"),
                       attr.registers, s.threads, smem);
  return std::nullopt;
}

std::optional<GemmLauncher> GpuMeasurer::kernel_launcher(const KernelUnderTest& k, std::string* why_not) {
  LoadedKernel* kernel = nullptr;
  Outcome outcome{};
  if (auto why = load(k, kernel, outcome)) {
    if (why_not) *why_not = *why;
    return std::nullopt;
  }
  m_held.insert(k.binary->key);
  return kernel_launch(*kernel, k.shape, m_stream->get());
}

GemmLauncher GpuMeasurer::cublas_launcher() const {
  const CublasHandle& cublas = *m_cublas;
  // Every layout and batch: cublas{S,D}gemmStridedBatched when batched, cublas{S,D}gemm otherwise.
  return [&cublas](const GemmArgs& a) {
    return cublas.gemm_status(a) == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
  };
}

GemmLauncher GpuMeasurer::reference_launcher() const {
  const GemmLauncher cublas = cublas_launcher();
  const cudaStream_t stream = m_stream->get();
  return [cublas, stream](const GemmArgs& a) {
    return a.dtype == DType::i32 ? reference_gemm_i32(a, stream) : cublas(a);
  };
}

ValidationResult GpuMeasurer::validate(const GemmLauncher& launch, const Problem& problem) {
  return m_validator->validate(launch, workspace(problem), 0.0);
}

std::vector<TimingResult> GpuMeasurer::time_interleaved(const std::vector<GemmLauncher>& launches,
                                                        const Problem& problem, int rounds, double kernel_timeout_ms) {
  const GemmArgs args = workspace(problem).timing_args();
  std::vector<Launcher> timed;
  for (const GemmLauncher& launch : launches) timed.push_back([&launch, args] { return launch(args); });
  const std::vector<TimingResult> results = m_timer->time_interleaved(timed, rounds, m_settings.warmup, kernel_timeout_ms);
  for (const TimingResult& r : results) note_failure(r.status);
  return results;
}

Measurement GpuMeasurer::measure(const KernelUnderTest& k, const Problem& problem, const MeasureLimits& limits) {
  Measurement m;
  if (m_context_lost) {
    m.outcome = Outcome::crashed;
    m.reason = "the CUDA context was lost earlier in this run";
    return m;
  }
  const ProblemWorkspace& ws = workspace(problem);
  m.layout = ws.timing();
  // The timing layout is the tight one, so it says why; the validation layout (wider leading
  // dimensions, 256-byte aligned matrices) meets every requirement the timing layout meets, but a
  // kernel is never launched on a layout it rules out.
  for (const Layout* layout : {&ws.timing(), &ws.validation()})
    if (auto unmet = unmet_requirements(k.requirements, *layout, problem.dtype)) {
      m.outcome = Outcome::skipped;
      m.reason = *unmet;
      return m;
    }
  LoadedKernel* kernel = nullptr;
  Outcome fail_outcome = Outcome::skipped;
  if (auto why = load(k, kernel, fail_outcome)) {
    m.outcome = fail_outcome;
    m.reason = *why;
    if (kernel) m.registers = kernel->attributes().registers;
    return m;
  }
  m.registers = kernel->attributes().registers;
  m.smem_bytes = kernel->attributes().static_smem + k.shape.dynamic_smem;

  const GemmLauncher launch = kernel_launch(*kernel, k.shape, m_stream->get());
  const ValidationResult v = m_validator->validate(launch, ws, limits.kernel_timeout_ms);
  m.max_abs_error = v.max_abs_error;
  m.max_error_ratio = v.max_error_ratio;
  m.simt_error_ratio = v.simt_error_ratio;
  if (v.status != cudaSuccess) {
    m.outcome = failure_outcome(v.status);
    m.reason = v.reason;
    note_failure(v.status);
    return m;
  }
  if (!v.passed) {
    m.outcome = Outcome::wrong;
    m.reason = v.reason;
    return m;
  }

  const GemmArgs args = ws.timing_args();
  const double abandon_above_ms = limits.abandon_above_ms;
  const TimingResult r = m_timer->time([&launch, args] { return launch(args); }, sampling_plan(limits.kernel_timeout_ms),
                                       abandon_above_ms);
  if (r.status != cudaSuccess) {
    cudaGetLastError();
    m.outcome = failure_outcome(r.status);
    m.reason = r.status == cudaErrorTimeout
                   ? fmt::format("still running after {:.0f} ms, the kernel timeout, while timing", limits.kernel_timeout_ms)
                   : fmt::format("failed while timing: {}", cudaGetErrorString(r.status));
    note_failure(r.status);
    return m;
  }
  m.outcome = r.abandoned ? Outcome::abandoned : Outcome::ok;
  if (r.abandoned)
    m.reason = fmt::format("first {} samples {:.4g} ms > {:.4g} ms ({}x the best so far)", r.stats.count,
                           r.stats.median, abandon_above_ms, m_settings.abandon_factor);
  m.timing = r.stats;
  return m;
}

SampleStats GpuMeasurer::measure_cublas(const Problem& problem) {
  if (!type_info(problem.dtype).cublas_baseline)
    throw InfraError("cuBLAS", "gemm",
                     fmt::format("{}: cuBLAS has no {} GEMM, so the problem has no baseline", problem.to_string(),
                                 dtype_name(problem.dtype)),
                     __FILE__, __LINE__);
  const GemmLauncher cublas = cublas_launcher();
  const GemmArgs args = workspace(problem).timing_args();
  const TimingResult r = m_timer->time([&cublas, args] { return cublas(args); }, sampling_plan(k_cublas_timeout_ms), 0.0);
  note_failure(r.status);
  if (r.status != cudaSuccess)
    throw InfraError("cuBLAS", cublas_routine(problem.dtype, problem.batched()),
                     fmt::format("timing failed: {}", cudaGetErrorString(r.status)), __FILE__, __LINE__);
  return r.stats;
}

std::vector<RetimeResult> GpuMeasurer::retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem,
                                               double kernel_timeout_ms) {
  // The launchers point at the loaded kernels: hold every one of them, whatever their number, for
  // this re-timing only.
  const std::set<std::string> held_before = m_held;
  std::vector<GemmLauncher> launches;
  for (const KernelUnderTest& k : kernels) {
    auto launch = kernel_launcher(k, nullptr);
    launches.push_back(launch ? std::move(*launch) : [](const GemmArgs&) { return cudaErrorInvalidValue; });
  }
  // cuBLAS last, when the problem's type has a baseline; otherwise its place says why not.
  const bool baseline = type_info(problem.dtype).cublas_baseline;
  if (baseline) launches.push_back(cublas_launcher());
  const std::vector<TimingResult> timed = time_interleaved(launches, problem, m_settings.retime_rounds, kernel_timeout_ms);
  m_held = held_before;
  std::vector<RetimeResult> out;
  for (const TimingResult& r : timed) out.push_back(retime_result(r));
  if (!baseline) {
    RetimeResult none;
    none.error = fmt::format("cuBLAS has no {} GEMM: no baseline", dtype_name(problem.dtype));
    out.push_back(none);
  }
  return out;
}

}  // namespace cmt
