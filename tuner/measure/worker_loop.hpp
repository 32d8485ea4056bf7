// The measuring process's side of measure/worker_protocol.hpp: reads requests, runs them on a
// Measurer, writes replies. CUDA-free: `cm-tune measure-worker` gives it the GPU measurer, the CPU
// tests a scripted one.
#pragma once

#include <functional>
#include <memory>

#include "measure/worker_protocol.hpp"

namespace cmt {

/// Makes the measurer a hello asks for and fills in the device it measures on. May throw
/// UsageError or NoDeviceError (sent back as such) or anything else (sent back as InfraError).
using MeasurerFactory = std::function<std::unique_ptr<Measurer>(const WorkerHello& hello, DeviceInfo& device)>;

/// Serves requests from in_fd, replying on out_fd, until in_fd closes, the hello fails, or the
/// measurer loses its context (the tuner then starts a new worker). Returns the exit status.
int serve_measurer(int in_fd, int out_fd, const MeasurerFactory& make);

}  // namespace cmt
