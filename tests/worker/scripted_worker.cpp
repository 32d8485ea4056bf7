// A measuring process for the CPU tests: speaks the real worker protocol (measure/worker_loop.hpp)
// over the real pipes, but scripts the measurements, since there is no GPU here. What it does is
// chosen by the kernel's label, so a test can make one candidate fault in each way a GPU kernel
// can, and by the environment:
//   CMTUNE_SCRIPT_DELAY_MS  sleep this long in every measurement (gives kill tests time to hit)
//   CMTUNE_SCRIPT_LOG       append "<pid> <request> <label> <problem>" for every request
//   CMTUNE_SCRIPT_HASHED    1: times from a hash of the label and the problem (1 to 2 ms), so each
//                           problem has a winner of its own among otherwise equal candidates
//   CMTUNE_SCRIPT_DEVICES   how many GPUs the host has (default 1); --device picks one by index.
//                           Each has a UUID of its own; they are of one model unless:
//   CMTUNE_SCRIPT_MODELS    a comma list of their names, by index (default "Scripted H100" for all)
//   CMTUNE_SCRIPT_FAULTY    the index of a GPU whose measuring process dies (SIGSEGV) in every
//                           measurement, as one on a failing GPU would
// Labels: "segv" dies of SIGSEGV, "exit" exits with status 7, "lost" breaks the context (crashed),
// "hang" runs past the kernel timeout (timeout, as the GPU measurer's watchdog reports it),
// "stuck" never answers. The fault fixture (tests/fixtures/faults) maps onto these: FAULT=1, 2 and 4
// break the context, FAULT=3 hangs. Otherwise times come from the label: naive 4 ms, BLOCK=32
// 0.5 ms, anything else 2 ms. i32 problems have no cuBLAS baseline, as on a GPU.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <thread>
#include <unistd.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "measure/worker_loop.hpp"

namespace {

using namespace cmt;

void log_line(const std::string& line) {
  if (const char* path = std::getenv("CMTUNE_SCRIPT_LOG")) {
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%d %s\n", static_cast<int>(::getpid()), line.c_str());
      std::fclose(f);
    }
  }
}

bool has(const std::string& label, const char* what) { return label.find(what) != std::string::npos; }

double time_of(const std::string& label, const Problem& p) {
  if (const char* hashed = std::getenv("CMTUNE_SCRIPT_HASHED"); hashed != nullptr && std::string(hashed) == "1") {
    uint64_t h = 1469598103934665603ull;   // FNV-1a: the same on every run and machine
    for (const char c : label + " " + p.to_string()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return 1.0 + static_cast<double>(h % 1000) / 1000.0;
  }
  if (has(label, "naive")) return 4.0;
  if (has(label, "BLOCK=32")) return 0.5;
  return 2.0;
}

class ScriptedMeasurer final : public Measurer {
 public:
  explicit ScriptedMeasurer(bool faulty) : m_faulty(faulty) {}
  Measurement measure(const KernelUnderTest& k, const Problem& p, const MeasureLimits& limits) override {
    log_line(fmt::format("measure {} {}", k.label, p.to_string()));
    if (m_faulty) std::raise(SIGSEGV);
    if (const char* delay = std::getenv("CMTUNE_SCRIPT_DELAY_MS"))
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
    Measurement m;
    if (has(k.label, "segv")) std::raise(SIGSEGV);
    if (has(k.label, "exit")) std::_Exit(7);
    if (has(k.label, "stuck")) std::this_thread::sleep_for(std::chrono::hours(1));
    if (has(k.label, "lost") || has(k.label, "FAULT=1") || has(k.label, "FAULT=2") || has(k.label, "FAULT=4")) {
      m.outcome = Outcome::crashed;
      m.reason = "launch failed (alpha=0.75, beta=-1.25): an illegal memory access was encountered";
      m_lost = true;
      return m;
    }
    if (has(k.label, "hang") || has(k.label, "FAULT=3")) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(limits.kernel_timeout_ms));
      m.outcome = Outcome::timeout;
      m.reason = fmt::format("still running after {:.0f} ms, the kernel timeout", limits.kernel_timeout_ms);
      m_lost = true;
      return m;
    }
    const double ms = time_of(k.label, p);
    m.outcome = limits.abandon_above_ms > 0 && ms > limits.abandon_above_ms ? Outcome::abandoned : Outcome::ok;
    m.timing = SampleStats{ms, ms * 0.99, ms, 0.01, 10};
    m.max_error_ratio = 0.01;
    m.max_abs_error = 1e-6;
    // A type validated against FP64 (tf32x3) carries the FP32 SIMT reference's error as its bar.
    if (type_info(p.dtype).reference == Reference::fp64) m.simt_error_ratio = 0.02;
    m.registers = 32;
    return m;
  }
  // As the GPU measurer: i32 has no cuBLAS baseline, so asking for one is an error, and a
  // re-timing's last result (cuBLAS's place) is not ok.
  SampleStats measure_cublas(const Problem& p) override {
    log_line(fmt::format("cublas - {}", p.to_string()));
    if (!type_info(p.dtype).cublas_baseline)
      throw InfraError("cuBLAS", "gemm", fmt::format("{}: cuBLAS has no {} GEMM (scripted)", p.to_string(), dtype_name(p.dtype)),
                       __FILE__, __LINE__);
    return SampleStats{1.0, 1.0, 1.0, 0.0, 10};
  }
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>& kernels, const Problem& p, double) override {
    log_line(fmt::format("retime {} {}", kernels.size(), p.to_string()));
    std::vector<RetimeResult> out;
    for (const auto& k : kernels) out.push_back({true, "", SampleStats{time_of(k.label, p) * 1.01, 0, 0, 0, 30}});
    if (type_info(p.dtype).cublas_baseline)
      out.push_back({true, "", SampleStats{1.0, 1.0, 1.0, 0.0, 30}});
    else
      out.push_back({false, "cuBLAS has no i32 GEMM: no baseline (scripted)", SampleStats{}});
    return out;
  }
  bool context_lost() const override { return m_lost; }

 private:
  bool m_faulty = false;
  bool m_lost = false;
};

DeviceInfo scripted_device() {
  DeviceInfo d;
  d.name = "Scripted H100";
  d.uuid = "GPU-5c41b7ed-0000-4000-8000-000000000001";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.memory_bytes = d.free_memory_bytes = size_t{80} << 30;
  d.l2_bytes = 50 << 20;
  d.smem_per_block = 48 << 10;
  d.smem_per_block_optin = 227 << 10;
  d.smem_per_sm = 228 << 10;
  d.regs_per_sm = d.regs_per_block = 65536;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.warp_size = 32;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, SIG_IGN);   // as the real worker: the tuner decides when to stop
  std::signal(SIGTERM, SIG_IGN);
  (void)argc;
  (void)argv;
  return cmt::serve_measurer(3, 4, [](const WorkerHello& hello, DeviceInfo& device) -> std::unique_ptr<Measurer> {
    log_line(fmt::format("hello {}", hello.device));
    if (hello.device == "none") throw NoDeviceError("no CUDA device (scripted)");
    const char* count_env = std::getenv("CMTUNE_SCRIPT_DEVICES");
    const int count = count_env ? std::atoi(count_env) : 1;
    int index = -1;
    for (int i = 0; i < count; ++i)
      if (hello.device == std::to_string(i)) index = i;
    if (index < 0) throw UsageError(fmt::format("--device '{}': no such device (scripted)", hello.device));
    device = scripted_device();
    device.index = index;
    device.visible_devices = count;
    device.uuid.back() = static_cast<char>('1' + index);   // GPU-...-000000000001, ...0002
    if (const char* models = std::getenv("CMTUNE_SCRIPT_MODELS")) {
      std::string list = std::string(models) + ",";
      for (int i = 0; i <= index && !list.empty(); ++i) {
        const size_t comma = list.find(',');
        if (i == index) device.name = list.substr(0, comma);
        list.erase(0, comma + 1);
      }
    }
    const char* faulty = std::getenv("CMTUNE_SCRIPT_FAULTY");
    return std::make_unique<ScriptedMeasurer>(faulty != nullptr && std::to_string(index) == faulty);
  });
}
