#include "measure/gpu/timer.hpp"

#include <algorithm>
#include <chrono>

#include "cuda/check.hpp"

namespace cmt {

namespace {
constexpr int k_batch = 16;          // samples enqueued between synchronizations
constexpr int k_abandon_probe = 3;   // samples looked at before deciding to abandon
}  // namespace

Timer::Timer(cudaStream_t stream, size_t flush_bytes) : m_stream(stream), m_flush(flush_bytes) {
  for (int i = 0; i < k_batch; ++i) {
    m_start.emplace_back();
    m_stop.emplace_back();
  }
}

cudaError_t Timer::wait(int launches, double timeout_ms) const {
  return synchronize_within(m_stream, timeout_ms > 0 ? timeout_ms * std::max(launches, 1) : 0.0);
}

void Timer::flush() { CMT_CUDA_CHECK(cudaMemsetAsync(m_flush.get(), 0, m_flush.bytes(), m_stream)); }

TimingResult Timer::time(const Launcher& launch, const SamplingPlan& plan, double abandon_above_ms) {
  TimingResult r;
  for (int i = 0; i < plan.warmup; ++i)
    if ((r.status = launch()) != cudaSuccess) return r;
  if ((r.status = wait(plan.warmup, plan.kernel_timeout_ms)) != cudaSuccess) return r;

  const auto start = std::chrono::steady_clock::now();
  for (bool first_batch = true;; first_batch = false) {
    const int remaining = plan.max_samples - static_cast<int>(r.samples_ms.size());
    // The first batch is short so a hopeless candidate is dropped quickly.
    const int batch = std::min(first_batch ? k_abandon_probe : k_batch, remaining);
    for (int i = 0; i < batch; ++i) {
      flush();
      m_start[i].record(m_stream);
      if ((r.status = launch()) != cudaSuccess) return r;
      m_stop[i].record(m_stream);
    }
    if ((r.status = wait(batch, plan.kernel_timeout_ms)) != cudaSuccess) return r;
    for (int i = 0; i < batch; ++i) r.samples_ms.push_back(m_stop[i].elapsed_since(m_start[i]));
    if (first_batch && abandon_above_ms > 0 &&
        summarize(r.samples_ms).median > abandon_above_ms) {
      r.abandoned = true;
      break;
    }
    const double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const int n = static_cast<int>(r.samples_ms.size());
    if (n >= plan.max_samples || (n >= plan.min_samples && elapsed_ms >= plan.budget_ms)) break;
  }
  r.stats = summarize(r.samples_ms);
  return r;
}

std::vector<TimingResult> Timer::time_interleaved(const std::vector<Launcher>& launches, int rounds, int warmup,
                                                 double kernel_timeout_ms) {
  std::vector<TimingResult> results(launches.size());
  for (size_t j = 0; j < launches.size(); ++j)
    for (int i = 0; i < warmup && results[j].status == cudaSuccess; ++i) results[j].status = launches[j]();
  if (const cudaError_t s = wait(warmup * static_cast<int>(launches.size()), kernel_timeout_ms); s != cudaSuccess)
    for (auto& r : results) r.status = s;
  // Events are reused per round: one pair per launcher, so batches hold k_batch launchers.
  for (int round = 0; round < rounds; ++round) {
    for (size_t first = 0; first < launches.size(); first += k_batch) {
      const size_t last = std::min(launches.size(), first + k_batch);
      for (size_t j = first; j < last; ++j) {
        if (results[j].status != cudaSuccess) continue;
        flush();
        m_start[j - first].record(m_stream);
        results[j].status = launches[j]();
        m_stop[j - first].record(m_stream);
      }
      if (const cudaError_t s = wait(static_cast<int>(last - first), kernel_timeout_ms); s != cudaSuccess) {
        for (auto& r : results) r.status = s;
        return results;
      }
      for (size_t j = first; j < last; ++j)
        if (results[j].status == cudaSuccess) results[j].samples_ms.push_back(m_stop[j - first].elapsed_since(m_start[j - first]));
    }
  }
  for (auto& r : results) r.stats = summarize(r.samples_ms);
  return results;
}

}  // namespace cmt
