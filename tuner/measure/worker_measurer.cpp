#include "measure/worker_measurer.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.hpp"

extern char** environ;

namespace cmt {

namespace {

/// The worker's ends of the pipes, as it finds them (measure/worker_loop.hpp reads 3, writes 4).
constexpr int k_worker_in = 3;
constexpr int k_worker_out = 4;

[[noreturn]] void throw_posix(const char* call, int error, const char* file, int line) {
  throw InfraError("posix", call, std::strerror(error), file, line);
}

/// A pipe whose both ends are close-on-exec and numbered above the worker's fixed descriptors, so
/// the dup2 of posix_spawn never meets a descriptor that is already in place.
void make_pipe(int fds[2]) {
  int raw[2];
  if (::pipe2(raw, O_CLOEXEC) != 0) throw_posix("pipe2", errno, __FILE__, __LINE__);
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    const int error = errno;
    ::close(raw[i]);
    if (fds[i] < 0) throw_posix("fcntl(F_DUPFD_CLOEXEC)", error, __FILE__, __LINE__);
  }
  // A request carries a CUBIN (often 100 KB or more): a 1 MiB pipe takes it in one write instead
  // of a ping-pong of 64 KiB. Only a hint: an unprivileged process may be held to less.
  ::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

WorkerMeasurer::WorkerMeasurer(WorkerOptions options) : m_options(std::move(options)) {
  if (m_options.command.empty()) throw InfraError("worker", "start", "no command", __FILE__, __LINE__);
  // A worker that dies while the tuner writes to it must not take the tuner down with SIGPIPE:
  // the write reports EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  start();
}

WorkerMeasurer::~WorkerMeasurer() {
  if (m_pid > 0) {
    // Closing its input ends the worker's loop; kill it only if it does not go.
    ::close(m_to_worker);
    m_to_worker = -1;
    bool timed_out = false;
    read_frame(m_from_worker, std::chrono::steady_clock::now() + std::chrono::seconds(10), &timed_out);
    stop(timed_out);
  }
}

void WorkerMeasurer::start() {
  const auto t0 = std::chrono::steady_clock::now();
  int to_worker[2], from_worker[2];
  make_pipe(to_worker);
  make_pipe(from_worker);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);  // stdout is not the protocol: anything printed goes to stderr
  posix_spawn_file_actions_adddup2(&actions, to_worker[0], k_worker_in);
  posix_spawn_file_actions_adddup2(&actions, from_worker[1], k_worker_out);
  std::vector<char*> argv;
  for (auto& a : m_options.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_worker[0]);
  ::close(from_worker[1]);
  if (spawned != 0) {
    ::close(to_worker[1]);
    ::close(from_worker[0]);
    throw StartError(fmt::format("cannot start the measuring process {}: {}", m_options.command.front(),
                                 std::strerror(spawned)));
  }
  m_pid = pid;
  m_to_worker = to_worker[1];
  m_from_worker = from_worker[0];
  m_sent.clear();

  WorkerRequest hello;
  hello.kind = WorkerRequest::Kind::hello;
  hello.hello = m_options.hello;
  const Exchange ex = exchange(hello, 0.0);
  if (!ex.reply) {
    throw StartError(fmt::format("the measuring process {} {} before it answered", m_options.command.front(),
                                 ex.failure));
  }
  if (!ex.reply->error.empty()) {
    stop(false);
    raise(*ex.reply, "hello");
  }
  if (!m_device.uuid.empty() && ex.reply->device.uuid != m_device.uuid)
    throw InfraError("worker", "restart",
                     fmt::format("the new measuring process measures on {} ({}), not {} ({})", ex.reply->device.name,
                                 ex.reply->device.uuid, m_device.name, m_device.uuid),
                     __FILE__, __LINE__);
  m_device = ex.reply->device;
  m_stats.startup_seconds += seconds_since(t0);
}

std::string WorkerMeasurer::stop(bool kill_first) {
  if (m_pid <= 0) return "was not running";
  if (m_to_worker >= 0) ::close(m_to_worker);
  if (m_from_worker >= 0) ::close(m_from_worker);
  m_to_worker = m_from_worker = -1;
  if (kill_first) ::kill(m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
  return describe_wait_status(status);
}

WorkerMeasurer::Exchange WorkerMeasurer::call(WorkerRequest request, double bound_ms) {
  if (m_pid <= 0) {
    start();
    ++m_stats.restarts;
  }
  request.cubins_cached = !request.kernels.empty() &&
                          std::all_of(request.kernels.begin(), request.kernels.end(),
                                      [&](const KernelUnderTest& k) { return m_sent.count(k.binary->key) > 0; });
  Exchange ex = exchange(request, bound_ms);
  if (ex.reply && ex.reply->error_kind == "missing_cubin") {  // it let some go: send them again
    request.cubins_cached = false;
    ex = exchange(request, bound_ms);
  }
  if (ex.reply && !request.cubins_cached && m_pid > 0)
    for (const KernelUnderTest& k : request.kernels) m_sent.insert(k.binary->key);
  return ex;
}

WorkerMeasurer::Exchange WorkerMeasurer::exchange(const WorkerRequest& request, double bound_ms) {
  Exchange ex;
  ++m_stats.requests;
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double, std::milli>(bound_ms + m_options.grace_ms));
  bool timed_out = false;
  std::optional<std::string> frame;
  if (write_frame(m_to_worker, encode(request))) frame = read_frame(m_from_worker, deadline, &timed_out);
  if (!frame) {
    ex.timed_out = timed_out;
    ++m_stats.faults;
    // Died (EOF or EPIPE) or hung: either way this worker is done; the next call starts another.
    const std::string how = stop(true);
    ex.failure = timed_out ? fmt::format("did not answer within {:.0f} s and was killed", (bound_ms + m_options.grace_ms) / 1e3)
                           : fmt::format("died ({})", how);
    return ex;
  }
  ex.reply = decode_reply(*frame);
  m_stats.transport_seconds += std::max(0.0, seconds_since(t0) - ex.reply->seconds);
  if (ex.reply->context_lost) {  // it ends itself; a kernel may still hold the GPU
    ++m_stats.faults;
    stop(true);
  }
  return ex;
}

void WorkerMeasurer::raise(const WorkerReply& reply, const char* call) const {
  if (reply.error_kind == "usage") throw UsageError(reply.error);
  if (reply.error_kind == "no_device") throw NoDeviceError(reply.error);
  throw InfraError("worker", call, reply.error, __FILE__, __LINE__);
}

Measurement WorkerMeasurer::measure(const KernelUnderTest& kernel, const Problem& problem, const MeasureLimits& limits) {
  WorkerRequest r;
  r.kind = WorkerRequest::Kind::measure;
  r.kernels = {kernel};
  r.problem = problem;
  r.limits = limits;
  // Launches of one measurement: validation, warm-up, then samples in batches of at most 16.
  const TuneSettings& s = m_options.hello.settings;
  const double bound = limits.kernel_timeout_ms * (2 + s.warmup + std::max(s.min_samples, 3) + 16) + s.budget_ms;
  const Exchange ex = call(r, bound);
  if (ex.reply && !ex.reply->error.empty()) raise(*ex.reply, "measure");
  if (ex.reply) {
    Measurement m = ex.reply->measurement;
    if (ex.reply->context_lost) m.reason += "; the measuring process was restarted";
    return m;
  }
  Measurement m;
  m.outcome = ex.timed_out ? Outcome::timeout : Outcome::crashed;
  m.reason = fmt::format("the measuring process {} while measuring this kernel; it was restarted", ex.failure);
  return m;
}

SampleStats WorkerMeasurer::measure_cublas(const Problem& problem) {
  WorkerRequest r;
  r.kind = WorkerRequest::Kind::cublas;
  r.problem = problem;
  const Exchange ex = call(r, 0.0);
  if (!ex.reply) throw InfraError("worker", "measure_cublas", fmt::format("the measuring process {}", ex.failure), __FILE__, __LINE__);
  if (!ex.reply->error.empty()) raise(*ex.reply, "measure_cublas");
  return ex.reply->stats;
}

std::vector<RetimeResult> WorkerMeasurer::retime(const std::vector<KernelUnderTest>& kernels, const Problem& problem,
                                                 double kernel_timeout_ms) {
  WorkerRequest r;
  r.kind = WorkerRequest::Kind::retime;
  r.kernels = kernels;
  r.problem = problem;
  r.limits.kernel_timeout_ms = kernel_timeout_ms;
  const TuneSettings& s = m_options.hello.settings;
  const double bound = kernel_timeout_ms * static_cast<double>(kernels.size() + 1) * (s.warmup + s.retime_rounds);
  const Exchange ex = call(r, bound);
  if (ex.reply && !ex.reply->error.empty()) raise(*ex.reply, "retime");
  if (ex.reply) return ex.reply->retimed;
  std::vector<RetimeResult> failed(kernels.size() + 1);
  for (RetimeResult& f : failed) f.error = fmt::format("the measuring process {}", ex.failure);
  return failed;
}

void WorkerMeasurer::release_problems() {
  if (m_pid <= 0) return;  // a new worker holds nothing yet
  WorkerRequest r;
  r.kind = WorkerRequest::Kind::release;
  const Exchange ex = call(r, 0.0);
  if (ex.reply && !ex.reply->error.empty()) raise(*ex.reply, "release_problems");
}

}  // namespace cmt
