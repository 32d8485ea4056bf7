// NVML's total-energy counter of one GPU (nvmlDeviceGetTotalEnergyConsumption: millijoules since the
// driver was loaded), read through libnvidia-ml loaded at run time with dlopen and dlsym. cm-tune
// never links NVML, as it never links the driver: it starts where neither is installed, and a missing
// library, a GPU that NVML does not find or a counter the GPU lacks is a reason to report, never a
// failure. The few NVML types and prototypes it calls are declared in nvml_energy.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cmt {

/// The library the driver installs (the soname, as NVML's own documentation loads it).
constexpr const char* k_nvml_library = "libnvidia-ml.so.1";

/// The energy a loop of `runs` runs used, from two readings of the counter.
struct EnergyUse {
  int64_t runs = 0;
  double joules = 0;   // between the two readings
  double seconds = 0;  // between the two readings
  double joules_per_run() const { return joules / static_cast<double>(runs); }
  /// The average power between the readings.
  double watts() const { return joules / seconds; }
};

/// The use between counter readings start_mj and end_mj (millijoules) taken `seconds` apart around
/// `runs` runs; nullopt and *why when they cannot be one loop's (no runs, no time, or a counter that
/// went back: the driver was reloaded).
std::optional<EnergyUse> energy_between(uint64_t start_mj, uint64_t end_mj, int64_t runs, double seconds,
                                        std::string* why);

class NvmlEnergy {
 public:
  /// Loads `library`, initializes NVML, finds the GPU by its UUID as the CUDA runtime gives it
  /// ("GPU-8b2472d4-..."), else by its PCI bus id ("0000:3b:00.0"; empty: not tried), and reads the
  /// counter once. Never throws: available() says whether the counter can be read, and
  /// why_unavailable() why not, in one line ("NVML cannot be loaded: libnvidia-ml.so.1: cannot open
  /// shared object file: No such file or directory").
  explicit NvmlEnergy(const std::string& uuid, const std::string& pci_bus_id = "",
                      const std::string& library = k_nvml_library);
  /// Shuts NVML down and unloads the library.
  ~NvmlEnergy();
  NvmlEnergy(const NvmlEnergy&) = delete;
  NvmlEnergy& operator=(const NvmlEnergy&) = delete;

  bool available() const { return m_api != nullptr; }
  /// Empty when available.
  const std::string& why_unavailable() const { return m_why; }

  /// The counter, in millijoules; nullopt and *why (one line) when it cannot be read.
  std::optional<uint64_t> read_millijoules(std::string* why) const;
  /// The first reading that differs from the one taken on entry, polling for up to max_wait_ms (then
  /// the last reading). The counter advances in steps, so a reading taken just after one is current:
  /// a loop started then leaves no energy of the time before it in the counter, and a loop's end
  /// read this way includes all of the loop's.
  std::optional<uint64_t> read_after_step(double max_wait_ms, std::string* why) const;
  /// The power limit the GPU enforces, in watts; nullopt where NVML does not say.
  std::optional<double> power_limit_watts() const;

 private:
  struct Api;
  std::unique_ptr<Api> m_api;
  std::string m_why;
};

}  // namespace cmt
