// cm-tune measure-worker: the measuring process tune starts (measure/worker_measurer.hpp). Hidden
// from --help: it speaks the worker protocol on descriptors 3 and 4, not to a person.
#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "core/stop_signal.hpp"
#include "cuda/device.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "measure/worker_loop.hpp"

namespace cmt::cli {

namespace {

int run_measure_worker() {
  if (::fcntl(3, F_GETFD) < 0 || ::fcntl(4, F_GETFD) < 0)
    throw UsageError("measure-worker is the measuring process that tune starts, with its pipes on descriptors 3 "
                     "and 4; it is not run by hand");
  // Ctrl-C reaches the whole process group: the tuner decides when to stop, and this process
  // finishes the request in flight. It dies with the tuner, and ends when its input closes.
  ignore_stop_signals();
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 0;
  return serve_measurer(3, 4, [](const WorkerHello& hello, DeviceInfo& device) -> std::unique_ptr<Measurer> {
    device = select_device(resolve_live_device(hello.device).index);
    return std::make_unique<GpuMeasurer>(device, hello.settings, hello.seed);
  });
}

}  // namespace

void add_measure_worker_command(CLI::App& app, Action& action) {
  auto* sub = app.add_subcommand("measure-worker", "The measuring process of tune (internal)");
  sub->group("");  // hidden
  sub->callback([&action] { action = [] { return run_measure_worker(); }; });
}

}  // namespace cmt::cli
