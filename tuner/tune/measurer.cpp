#include "tune/measurer.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "cuda/check.hpp"

namespace cmt {

namespace {
constexpr size_t k_loaded_cache = 16;  // kernels kept loaded (more while re-timing holds more)
}  // namespace

std::optional<std::string> unmet_requirements(const Requirements& req, const Layout& layout) {
  const int64_t mult = std::max<int64_t>(1, req.ld_multiple);
  for (const auto& [name, ld] : {std::pair{"lda", layout.lda}, {"ldb", layout.ldb}, {"ldc", layout.ldc}})
    if (ld % mult != 0) return fmt::format("needs {} % {} == 0 ({} = {})", name, mult, name, ld);
  return std::nullopt;  // buffers come from cudaMalloc: 256-byte aligned
}

InProcessMeasurer::InProcessMeasurer(const DeviceInfo& device, const TuneSettings& settings, uint64_t seed)
    : m_device(device), m_settings(settings), m_seed(seed) {
  m_stream = std::make_unique<Stream>();
  m_cublas = std::make_unique<CublasHandle>(m_stream->get());
  m_validator = std::make_unique<Validator>(m_stream->get());
  // Overwriting twice the L2 before each sample keeps small problems from timing out of cache.
  m_timer = std::make_unique<Timer>(m_stream->get(), std::max<size_t>(2 * static_cast<size_t>(device.l2_bytes), 64u << 20));
}

InProcessMeasurer::~InProcessMeasurer() {
  m_loaded.clear();
  m_workspaces.clear();
}

void InProcessMeasurer::prepare(const Problem& problem) { workspace(problem); }

ProblemWorkspace& InProcessMeasurer::workspace(const Problem& problem) {
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

std::optional<std::string> InProcessMeasurer::load(const KernelUnderTest& k, LoadedKernel*& loaded, Outcome& outcome) {
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
    if (m_loaded_order.size() >= std::max(k_loaded_cache, m_pinned)) {
      m_loaded.erase(m_loaded_order.front());
      m_loaded_order.erase(m_loaded_order.begin());
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
  if (s.dynamic_smem > m_device.smem_per_block - attr.static_smem || s.dynamic_smem > 48 * 1024) {
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

Launcher InProcessMeasurer::timing_launcher(const LoadedKernel& kernel, const LaunchShape& shape,
                                            const ProblemWorkspace& ws) {
  const Problem& p = ws.problem();
  const Layout& t = ws.timing();
  const GemmArgs args{int(p.m), int(p.n), int(p.k), k_timing_alpha, ws.a_time(), int(t.lda), ws.b_time(), int(t.ldb),
                      k_timing_beta, ws.c_time(), int(t.ldc)};
  cudaStream_t stream = m_stream->get();
  return [&kernel, shape, args, stream] { return kernel.launch(shape, args, stream); };
}

TrialRecord InProcessMeasurer::measure(const KernelUnderTest& k, const Problem& problem, double abandon_above_ms) {
  TrialRecord t;
  t.problem = problem;
  t.threads = k.shape.threads;
  t.requirements = k.requirements;
  if (m_context_lost) {
    t.outcome = Outcome::crashed;
    t.reason = "the CUDA context was lost earlier in this run";
    return t;
  }
  const ProblemWorkspace& ws = workspace(problem);
  t.lda = ws.timing().lda;
  t.ldb = ws.timing().ldb;
  t.ldc = ws.timing().ldc;
  if (auto unmet = unmet_requirements(k.requirements, ws.timing())) {
    t.outcome = Outcome::skipped;
    t.reason = *unmet;
    return t;
  }
  LoadedKernel* kernel = nullptr;
  Outcome fail_outcome = Outcome::skipped;
  if (auto why = load(k, kernel, fail_outcome)) {
    t.outcome = fail_outcome;
    t.reason = *why;
    if (kernel) t.registers = kernel->attributes().registers;
    return t;
  }
  t.registers = kernel->attributes().registers;
  t.smem_bytes = kernel->attributes().static_smem + k.shape.dynamic_smem;

  const LaunchShape shape = k.shape;
  cudaStream_t stream = m_stream->get();
  const ValidationResult v =
      m_validator->validate([&](const GemmArgs& args) { return kernel->launch(shape, args, stream); }, ws);
  t.max_abs_error = v.max_abs_error;
  t.max_error_ratio = v.max_error_ratio;
  if (v.status != cudaSuccess) {
    t.outcome = is_sticky_error(v.status) ? Outcome::crashed : Outcome::launch_error;
    t.reason = v.reason;
    m_context_lost = m_context_lost || is_sticky_error(v.status);
    return t;
  }
  if (!v.passed) {
    t.outcome = Outcome::wrong;
    t.reason = v.reason;
    return t;
  }

  const TimingResult r = m_timer->time(timing_launcher(*kernel, shape, ws), m_settings, abandon_above_ms);
  if (r.status != cudaSuccess) {
    cudaGetLastError();
    t.outcome = is_sticky_error(r.status) ? Outcome::crashed : Outcome::launch_error;
    t.reason = fmt::format("failed while timing: {}", cudaGetErrorString(r.status));
    m_context_lost = m_context_lost || is_sticky_error(r.status);
    return t;
  }
  t.outcome = r.abandoned ? Outcome::abandoned : Outcome::ok;
  if (r.abandoned)
    t.reason = fmt::format("first {} samples {:.4g} ms > {:.4g} ms ({}x the best so far)", r.stats.count,
                           r.stats.median, abandon_above_ms, m_settings.abandon_factor);
  t.median_ms = r.stats.median;
  t.min_ms = r.stats.min;
  t.cv = r.stats.cv;
  t.samples = r.stats.count;
  t.gflops = gflops(problem.flops(), r.stats.median);
  return t;
}

Launcher InProcessMeasurer::cublas_launcher(const ProblemWorkspace& ws) {
  const CublasHandle& cublas = *m_cublas;
  return [&cublas, &ws] {
    const Problem& p = ws.problem();
    const Layout& t = ws.timing();
    const cublasStatus_t s = cublas.sgemm_status(int(p.m), int(p.n), int(p.k), k_timing_alpha, ws.a_time(), int(t.lda),
                                                 ws.b_time(), int(t.ldb), k_timing_beta, ws.c_time(), int(t.ldc));
    return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
  };
}

SampleStats InProcessMeasurer::measure_cublas(const Problem& problem) {
  const Launcher launch = cublas_launcher(workspace(problem));
  const TimingResult r = m_timer->time(launch, m_settings, 0.0);
  if (r.status != cudaSuccess)
    throw InfraError("cuBLAS", "cublasSgemm", fmt::format("timing failed: {}", cudaGetErrorString(r.status)), __FILE__,
                     __LINE__);
  return r.stats;
}

std::vector<TimingResult> InProcessMeasurer::retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem) {
  const ProblemWorkspace& ws = workspace(problem);
  // The launchers hold the loaded kernels: keep all of them loaded, whatever their number.
  m_pinned = kernels.size() + 1;
  std::vector<Launcher> launches;
  for (size_t i = 0; i < kernels.size(); ++i) {
    LoadedKernel* kernel = nullptr;
    Outcome outcome{};
    if (load(kernels[i], kernel, outcome)) {
      launches.push_back([] { return cudaErrorInvalidValue; });
      continue;
    }
    launches.push_back(timing_launcher(*kernel, kernels[i].shape, ws));
  }
  launches.push_back(cublas_launcher(ws));
  std::vector<TimingResult> results = m_timer->time_interleaved(launches, m_settings.retime_rounds, m_settings.warmup);
  m_pinned = 0;
  return results;
}

}  // namespace cmt
