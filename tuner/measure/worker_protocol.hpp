// What the tuner and its measuring process say to each other (measure/worker_measurer.hpp is the
// tuner's side, measure/worker_loop.hpp the worker's). Each message is one frame on a pipe: an 8-byte
// little-endian length, then MessagePack. Requests carry everything a Measurer call takes, CUBINs
// included, so the worker keeps no state the tuner depends on and can be restarted at any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/tune_settings.hpp"
#include "measure/measurer.hpp"

namespace cmt {

/// The first request: which device, and how to measure on it.
struct WorkerHello {
  std::string device = "0";      // --device: a CUDA index, a UUID or a unique part of a name
  TuneSettings settings;
  uint64_t seed = 0;             // input data
};

struct WorkerRequest {
  enum class Kind { hello, measure, cublas, retime, release };
  Kind kind = Kind::release;
  WorkerHello hello;                     // hello
  std::vector<BinaryRecord> binaries;    // measure: one; retime: one per kernel (key, CUBIN, name)
  std::vector<KernelUnderTest> kernels;  // points into binaries
  /// The CUBINs are not in the message: the worker has them from an earlier request (it keeps the
  /// recent ones by key) and says error_kind "missing_cubin" when it does not.
  bool cubins_cached = false;
  Problem problem;                       // measure, cublas, retime
  MeasureLimits limits;                  // measure; retime uses limits.kernel_timeout_ms
};

struct WorkerReply {
  std::string error;                     // the call failed; nothing else is set
  std::string error_kind;                // "usage", "no_device", "infra" (the exception to raise), or
                                         // "missing_cubin" (send the request again with its CUBINs)
  DeviceInfo device;                     // hello
  Measurement measurement;               // measure
  SampleStats stats;                     // cublas
  std::vector<RetimeResult> retimed;     // retime
  bool context_lost = false;             // the worker can measure nothing more; restart it
  double seconds = 0;                    // time the worker spent on the request
};

std::string encode(const WorkerRequest& request);
std::string encode(const WorkerReply& reply);
/// Throw InfraError for a message that does not decode.
WorkerRequest decode_request(const std::string& bytes);
WorkerReply decode_reply(const std::string& bytes);

/// Writes one frame; false when the reader is gone (EPIPE), InfraError for anything else.
bool write_frame(int fd, const std::string& bytes);
/// Reads one frame. nullopt when the writer closed the pipe (before or inside the frame) or, with
/// a deadline, when it passed first (*timed_out is then set). EINTR only retries: a signal that
/// should stop the tuner is seen after the frame arrives.
std::optional<std::string> read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                                      bool* timed_out = nullptr);

}  // namespace cmt
