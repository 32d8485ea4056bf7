#include "measure/worker_protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/files.hpp"

namespace cmt {

using json = nlohmann::json;

// Field by field, by name; the two ends are the same binary, so no versioning is needed.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SampleStats, median, min, mean, cv, count)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TuneSettings, budget_ms, min_samples, max_samples, warmup, retime_top, retime_rounds,
                                   abandon_factor, allow_spills)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceInfo, index, name, uuid, cc_major, cc_minor, sm_count, clock_khz,
                                   memory_clock_khz, memory_bus_bits, memory_bytes, free_memory_bytes, l2_bytes,
                                   smem_per_block, smem_per_block_optin, smem_per_sm, regs_per_sm, regs_per_block,
                                   max_threads_per_block, max_threads_per_sm, max_blocks_per_sm, warp_size,
                                   driver_version, runtime_version, visible_devices)

namespace {

constexpr uint64_t k_max_frame = uint64_t{1} << 32;  // far above any request (CUBINs are < 10 MB)

/// Frames and messages begin with a length: 8 bytes, little-endian.
void append_length(std::string& out, uint64_t n) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}
uint64_t length_at(const char* bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return n;
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json();
}
template <class T>
std::optional<T> opt_from(const json& j) {
  return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

json kernel_json(const KernelUnderTest& k) {
  const BinaryRecord& b = *k.binary;
  return {{"key", b.key},
          {"lowered_name", b.lowered_name},
          {"cubin_bytes", b.cubin.size()},  // the bytes follow the header (see encode)
          {"shape", {k.shape.threads, k.shape.tile_m, k.shape.tile_n, k.shape.dynamic_smem, k.shape.grid_z,
                     k.shape.problems_per_block, k.shape.tensor_maps}},
          {"requirements", {k.requirements.align_bytes, k.requirements.ld_multiple}},
          {"label", k.label}};
}

json measurement_json(const Measurement& m) {
  return {{"outcome", std::string(to_string(m.outcome))},
          {"reason", m.reason},
          {"log", m.log},
          {"layout", {m.layout.lda, m.layout.ldb, m.layout.ldc, m.layout.stride_a, m.layout.stride_b, m.layout.stride_c}},
          {"max_abs_error", opt(m.max_abs_error)},
          {"max_error_ratio", opt(m.max_error_ratio)},
          {"simt_error_ratio", opt(m.simt_error_ratio)},
          {"timing", m.timing ? json(*m.timing) : json()},
          {"registers", m.registers},
          {"smem_bytes", m.smem_bytes}};
}
Measurement measurement_from(const json& j) {
  Measurement m;
  m.outcome = outcome_from_string(j.at("outcome").get<std::string>());
  m.reason = j.at("reason");
  m.log = j.at("log");
  const auto& l = j.at("layout");
  m.layout = {l.at(0), l.at(1), l.at(2), l.at(3), l.at(4), l.at(5)};
  m.max_abs_error = opt_from<double>(j.at("max_abs_error"));
  m.max_error_ratio = opt_from<double>(j.at("max_error_ratio"));
  m.simt_error_ratio = opt_from<double>(j.at("simt_error_ratio"));
  if (!j.at("timing").is_null()) m.timing = j.at("timing").get<SampleStats>();
  m.registers = j.at("registers");
  m.smem_bytes = j.at("smem_bytes");
  return m;
}

const char* kind_name(WorkerRequest::Kind k) {
  switch (k) {
    case WorkerRequest::Kind::hello: return "hello";
    case WorkerRequest::Kind::measure: return "measure";
    case WorkerRequest::Kind::cublas: return "cublas";
    case WorkerRequest::Kind::retime: return "retime";
    case WorkerRequest::Kind::release: return "release";
  }
  return "?";
}

WorkerRequest::Kind kind_from(const std::string& name) {
  for (auto k : {WorkerRequest::Kind::hello, WorkerRequest::Kind::measure, WorkerRequest::Kind::cublas,
                 WorkerRequest::Kind::retime, WorkerRequest::Kind::release})
    if (name == kind_name(k)) return k;
  throw std::invalid_argument("unknown request '" + name + "'");
}

/// A message: the MessagePack header's length (8 bytes, little-endian), the header, then raw
/// payload bytes (a request's CUBINs). MessagePack decodes binary a byte at a time, which made
/// every request cost milliseconds; raw bytes cost a copy.
std::string to_bytes(const json& j, const std::vector<const std::vector<char>*>& payload = {}) {
  const std::vector<uint8_t> packed = json::to_msgpack(j);
  size_t total = 8 + packed.size();
  for (const auto* p : payload) total += p->size();
  std::string out;
  out.reserve(total);
  append_length(out, packed.size());
  out.append(packed.begin(), packed.end());
  for (const auto* p : payload) out.append(p->begin(), p->end());
  return out;
}

/// The header; *payload_at is where the raw bytes begin.
json from_bytes(const std::string& bytes, const char* what, size_t* payload_at = nullptr) {
  try {
    if (bytes.size() < 8) throw std::invalid_argument("shorter than its header length");
    const uint64_t n = length_at(bytes.data());
    if (n > bytes.size() - 8) throw std::invalid_argument("header length past the end");
    if (payload_at) *payload_at = 8 + n;
    return json::from_msgpack(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const std::exception& e) {
    throw InfraError("worker", fmt::format("decode {}", what), e.what(), __FILE__, __LINE__);
  }
}

}  // namespace

std::string encode(const WorkerRequest& r) {
  json j = {{"kind", kind_name(r.kind)}};
  std::vector<const std::vector<char>*> cubins;
  if (!r.cubins_cached)
    for (const KernelUnderTest& k : r.kernels) cubins.push_back(&k.binary->cubin);
  switch (r.kind) {
    case WorkerRequest::Kind::hello:
      j["device"] = r.hello.device;
      j["settings"] = r.hello.settings;
      j["seed"] = r.hello.seed;
      break;
    case WorkerRequest::Kind::measure:
    case WorkerRequest::Kind::retime:
      j["kernels"] = json::array();
      for (const KernelUnderTest& k : r.kernels) {
        j["kernels"].push_back(kernel_json(k));
        if (r.cubins_cached) j["kernels"].back()["cubin_bytes"] = 0;
      }
      j["cubins_cached"] = r.cubins_cached;
      [[fallthrough]];
    case WorkerRequest::Kind::cublas:
      j["problem"] = {r.problem.m,        r.problem.n,        r.problem.k,        r.problem.trans_a,
                      r.problem.trans_b,  r.problem.batch,    r.problem.stride_a, r.problem.stride_b,
                      r.problem.stride_c, std::string(dtype_name(r.problem.dtype))};
      j["limits"] = {r.limits.abandon_above_ms, r.limits.kernel_timeout_ms};
      break;
    case WorkerRequest::Kind::release:
      break;
  }
  return to_bytes(j, cubins);
}

WorkerRequest decode_request(const std::string& bytes) {
  size_t payload = 0;
  const json j = from_bytes(bytes, "request", &payload);
  WorkerRequest r;
  try {
    r.kind = kind_from(j.at("kind").get<std::string>());
    if (r.kind == WorkerRequest::Kind::hello) {
      r.hello.device = j.at("device");
      r.hello.settings = j.at("settings").get<TuneSettings>();
      r.hello.seed = j.at("seed");
    }
    if (j.contains("problem")) {
      const auto& p = j["problem"];
      r.problem = {p.at(0), p.at(1), p.at(2), p.at(3), p.at(4), p.at(5), p.at(6), p.at(7), p.at(8)};
      const auto dtype = parse_dtype(p.at(9).get<std::string>());
      if (!dtype) throw std::invalid_argument("unknown element type '" + p.at(9).get<std::string>() + "'");
      r.problem.dtype = *dtype;
      r.limits = {j.at("limits").at(0), j.at("limits").at(1)};
    }
    if (j.contains("kernels")) {
      r.cubins_cached = j.at("cubins_cached");
      const json& ks = j["kernels"];
      r.binaries.reserve(ks.size());  // the kernels point into it
      for (const json& k : ks) {
        BinaryRecord b;
        b.key = k.at("key");
        b.lowered_name = k.at("lowered_name");
        const size_t n = k.at("cubin_bytes");
        if (n > bytes.size() - payload) throw std::invalid_argument("a CUBIN past the end of the message");
        b.cubin.assign(bytes.begin() + static_cast<std::ptrdiff_t>(payload), bytes.begin() + static_cast<std::ptrdiff_t>(payload + n));
        payload += n;
        b.ok = true;
        r.binaries.push_back(std::move(b));
        KernelUnderTest t;
        t.binary = &r.binaries.back();
        const json& s = k.at("shape");
        t.shape = {s.at(0), s.at(1), s.at(2), s.at(3), s.at(4), s.at(5), s.at(6)};
        t.requirements = {k.at("requirements").at(0), k.at("requirements").at(1)};
        t.label = k.at("label");
        r.kernels.push_back(std::move(t));
      }
    }
  } catch (const std::exception& e) {
    throw InfraError("worker", "decode request", e.what(), __FILE__, __LINE__);
  }
  return r;
}

std::string encode(const WorkerReply& r) {
  json j = {{"context_lost", r.context_lost}, {"seconds", r.seconds}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    j["error_kind"] = r.error_kind;
    return to_bytes(j);
  }
  if (!r.device.uuid.empty()) j["device"] = r.device;
  j["measurement"] = measurement_json(r.measurement);
  j["stats"] = r.stats;
  j["retimed"] = json::array();
  for (const RetimeResult& t : r.retimed) j["retimed"].push_back({{"ok", t.ok}, {"error", t.error}, {"stats", t.stats}});
  return to_bytes(j);
}

WorkerReply decode_reply(const std::string& bytes) {
  const json j = from_bytes(bytes, "reply");
  WorkerReply r;
  try {
    r.context_lost = j.at("context_lost");
    r.seconds = j.at("seconds");
    if (j.contains("error")) {
      r.error = j["error"];
      r.error_kind = j.at("error_kind");
      return r;
    }
    if (j.contains("device")) r.device = j["device"].get<DeviceInfo>();
    r.measurement = measurement_from(j.at("measurement"));
    r.stats = j.at("stats").get<SampleStats>();
    for (const json& t : j.at("retimed")) r.retimed.push_back({t.at("ok"), t.at("error"), t.at("stats").get<SampleStats>()});
  } catch (const std::exception& e) {
    throw InfraError("worker", "decode reply", e.what(), __FILE__, __LINE__);
  }
  return r;
}

bool write_frame(int fd, const std::string& bytes) {
  std::string length;
  append_length(length, bytes.size());
  int err = write_all(fd, length);   // two writes, so a request's CUBINs are not copied again
  if (!err) err = write_all(fd, bytes);
  if (err == EPIPE) return false;
  if (err) throw InfraError("posix", "write", std::strerror(err), __FILE__, __LINE__);
  return true;
}

namespace {

/// Reads exactly n bytes; false at end of file.
bool read_exactly(int fd, char* out, size_t n, std::optional<std::chrono::steady_clock::time_point> deadline,
                  bool* timed_out) {
  size_t done = 0;
  while (done < n) {
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) throw InfraError("posix", "poll", std::strerror(errno), __FILE__, __LINE__);
      if (ready == 0) {
        if (timed_out) *timed_out = true;
        return false;
      }
    }
    const ssize_t r = ::read(fd, out + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw InfraError("posix", "read", std::strerror(errno), __FILE__, __LINE__);
    if (r == 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

std::optional<std::string> read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                                      bool* timed_out) {
  if (timed_out) *timed_out = false;
  char header[8];
  if (!read_exactly(fd, header, 8, deadline, timed_out)) return std::nullopt;
  const uint64_t n = length_at(header);
  if (n > k_max_frame)
    throw InfraError("worker", "read frame", fmt::format("a frame of {} bytes: the stream is corrupt", n), __FILE__, __LINE__);
  std::string bytes(n, '\0');
  if (!read_exactly(fd, bytes.data(), n, deadline, timed_out)) return std::nullopt;
  return bytes;
}

}  // namespace cmt
