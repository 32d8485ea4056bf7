#include "measure/worker_loop.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "core/error.hpp"

namespace cmt {

namespace {

constexpr size_t k_cached_cubins = 64;  // a candidate's problems, and every leader re-timed, fit

/// The CUBINs of recent requests, by binary key, so the tuner sends each one once per candidate
/// rather than once per problem.
class CubinCache {
 public:
  /// Points the request's kernels at cached binaries, storing the ones it carries; false when a
  /// cached one it names is gone.
  bool resolve(WorkerRequest& request) {
    for (size_t i = 0; i < request.kernels.size(); ++i) {
      const std::string key = request.kernels[i].binary->key;  // a copy: the binary moves below
      auto it = m_binaries.find(key);
      if (request.cubins_cached) {
        if (it == m_binaries.end()) return false;
      } else if (it == m_binaries.end()) {
        it = m_binaries.emplace(key, std::move(request.binaries[i])).first;
        m_order.push_back(key);
      } else {
        it->second = std::move(request.binaries[i]);
      }
      request.kernels[i].binary = &it->second;
    }
    // Evict the oldest, never one this request uses.
    while (m_order.size() > k_cached_cubins) {
      const auto victim = std::find_if(m_order.begin(), m_order.end(), [&](const std::string& key) {
        return std::none_of(request.kernels.begin(), request.kernels.end(),
                            [&](const KernelUnderTest& k) { return k.binary->key == key; });
      });
      if (victim == m_order.end()) break;
      m_binaries.erase(*victim);
      m_order.erase(victim);
    }
    return true;
  }

 private:
  std::map<std::string, BinaryRecord> m_binaries;
  std::deque<std::string> m_order;  // oldest first
};

}  // namespace

int serve_measurer(int in_fd, int out_fd, const MeasurerFactory& make) {
  std::unique_ptr<Measurer> measurer;
  CubinCache cubins;
  while (const auto frame = read_frame(in_fd, std::nullopt)) {
    WorkerRequest request = decode_request(*frame);
    const auto start = std::chrono::steady_clock::now();
    WorkerReply reply;
    if (!cubins.resolve(request)) {
      reply.error = "a CUBIN this process no longer holds";
      reply.error_kind = "missing_cubin";
      if (!write_frame(out_fd, encode(reply))) return 0;
      continue;
    }
    try {
      if (request.kind != WorkerRequest::Kind::hello && !measurer)
        throw InfraError("worker", "serve", "a request before the hello", __FILE__, __LINE__);
      switch (request.kind) {
        case WorkerRequest::Kind::hello:
          measurer = make(request.hello, reply.device);
          break;
        case WorkerRequest::Kind::measure:
          if (request.kernels.size() != 1) throw InfraError("worker", "measure", "expects one kernel", __FILE__, __LINE__);
          reply.measurement = measurer->measure(request.kernels.front(), request.problem, request.limits);
          break;
        case WorkerRequest::Kind::cublas:
          reply.stats = measurer->measure_cublas(request.problem);
          break;
        case WorkerRequest::Kind::retime:
          reply.retimed = measurer->retime(request.kernels, request.problem, request.limits.kernel_timeout_ms);
          break;
        case WorkerRequest::Kind::release:
          measurer->release_problems();
          break;
      }
    } catch (const UsageError& e) {
      reply.error = e.what();
      reply.error_kind = "usage";
    } catch (const NoDeviceError& e) {
      reply.error = e.what();
      reply.error_kind = "no_device";
    } catch (const std::exception& e) {
      reply.error = e.what();
      reply.error_kind = "infra";
    }
    reply.context_lost = measurer && measurer->context_lost();
    reply.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!write_frame(out_fd, encode(reply))) return 0;  // the tuner is gone
    if (!measurer || reply.context_lost) return 0;
  }
  return 0;
}

}  // namespace cmt
