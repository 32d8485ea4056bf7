#include "cuda/nvml_energy.hpp"

#include <chrono>
#include <dlfcn.h>
#include <fmt/format.h>
#include <thread>
#include <utility>

namespace cmt {

// The part of nvml.h that cm-tune calls (NVML's API is C, its enums int-sized): no header needed.
// Named, not anonymous: NvmlEnergy::Api holds these types.
namespace nvml {
using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
constexpr nvmlReturn_t k_nvml_success = 0;
constexpr nvmlReturn_t k_nvml_error_not_supported = 3;

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using HandleByTextFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using EnergyFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using PowerLimitFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);

}  // namespace nvml


struct NvmlEnergy::Api {
  void* library = nullptr;
  bool initialized = false;
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;      // optional
  nvml::HandleByTextFn by_uuid = nullptr;
  nvml::HandleByTextFn by_pci_bus_id = nullptr;    // optional
  nvml::EnergyFn total_energy = nullptr;
  nvml::PowerLimitFn enforced_power_limit = nullptr;  // optional
  nvml::nvmlDevice_t device = nullptr;

  ~Api() {
    if (initialized) shutdown();
    if (library) dlclose(library);
  }
  /// NVML's name for a status, and its number.
  std::string message(nvml::nvmlReturn_t status) const {
    const char* text = error_string ? error_string(status) : nullptr;
    return text ? fmt::format("{} (NVML status {})", text, status) : fmt::format("NVML status {}", status);
  }
  template <class F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(dlsym(library, name));
  }
};

std::optional<EnergyUse> energy_between(uint64_t start_mj, uint64_t end_mj, int64_t runs, double seconds,
                                        std::string* why) {
  const auto fail = [why](std::string text) -> std::optional<EnergyUse> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (runs < 1) return fail("no runs between the readings");
  if (!(seconds > 0)) return fail("no time between the readings");
  if (end_mj < start_mj)
    return fail(fmt::format("the energy counter went back from {} mJ to {} mJ (was the driver reloaded?)", start_mj,
                            end_mj));
  EnergyUse use;
  use.runs = runs;
  use.joules = static_cast<double>(end_mj - start_mj) / 1e3;
  use.seconds = seconds;
  return use;
}

NvmlEnergy::NvmlEnergy(const std::string& uuid, const std::string& pci_bus_id, const std::string& library) {
  auto api = std::make_unique<Api>();
  dlerror();
  api->library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    const char* error = dlerror();
    m_why = fmt::format("NVML cannot be loaded: {}", error ? error : library + ": dlopen failed");
    return;
  }
  api->init = api->symbol<nvml::InitFn>("nvmlInit_v2");
  api->shutdown = api->symbol<nvml::ShutdownFn>("nvmlShutdown");
  api->by_uuid = api->symbol<nvml::HandleByTextFn>("nvmlDeviceGetHandleByUUID");
  api->total_energy = api->symbol<nvml::EnergyFn>("nvmlDeviceGetTotalEnergyConsumption");
  api->error_string = api->symbol<nvml::ErrorStringFn>("nvmlErrorString");
  api->by_pci_bus_id = api->symbol<nvml::HandleByTextFn>("nvmlDeviceGetHandleByPciBusId_v2");
  api->enforced_power_limit = api->symbol<nvml::PowerLimitFn>("nvmlDeviceGetEnforcedPowerLimit");
  for (const auto& [name, found] : {std::pair<const char*, bool>{"nvmlInit_v2", api->init != nullptr},
                                    {"nvmlShutdown", api->shutdown != nullptr},
                                    {"nvmlDeviceGetHandleByUUID", api->by_uuid != nullptr},
                                    {"nvmlDeviceGetTotalEnergyConsumption", api->total_energy != nullptr}})
    if (!found) {
      m_why = fmt::format("{} lacks {}: not NVML, or an NVML without the total-energy counter", library, name);
      return;
    }
  if (const nvml::nvmlReturn_t status = api->init(); status != nvml::k_nvml_success) {
    m_why = fmt::format("NVML does not start: nvmlInit_v2: {}", api->message(status));
    return;
  }
  api->initialized = true;
  nvml::nvmlReturn_t status = api->by_uuid(uuid.c_str(), &api->device);
  if (status != nvml::k_nvml_success && !pci_bus_id.empty() && api->by_pci_bus_id)
    status = api->by_pci_bus_id(pci_bus_id.c_str(), &api->device);
  if (status != nvml::k_nvml_success) {
    m_why = fmt::format("NVML finds no GPU with UUID {}{}: {}", uuid,
                        pci_bus_id.empty() ? "" : fmt::format(" or PCI bus id {}", pci_bus_id), api->message(status));
    return;
  }
  unsigned long long millijoules = 0;
  status = api->total_energy(api->device, &millijoules);
  if (status == nvml::k_nvml_error_not_supported) {
    m_why = fmt::format("the GPU has no total-energy counter (nvmlDeviceGetTotalEnergyConsumption: {})",
                        api->message(status));
    return;
  }
  if (status != nvml::k_nvml_success) {
    m_why = fmt::format("the energy counter cannot be read: nvmlDeviceGetTotalEnergyConsumption: {}",
                        api->message(status));
    return;
  }
  m_api = std::move(api);
}

NvmlEnergy::~NvmlEnergy() = default;

std::optional<uint64_t> NvmlEnergy::read_millijoules(std::string* why) const {
  if (!m_api) {
    if (why) *why = m_why;
    return std::nullopt;
  }
  unsigned long long millijoules = 0;
  if (const nvml::nvmlReturn_t status = m_api->total_energy(m_api->device, &millijoules); status != nvml::k_nvml_success) {
    if (why) *why = fmt::format("nvmlDeviceGetTotalEnergyConsumption: {}", m_api->message(status));
    return std::nullopt;
  }
  return static_cast<uint64_t>(millijoules);
}

std::optional<uint64_t> NvmlEnergy::read_after_step(double max_wait_ms, std::string* why) const {
  const auto first = read_millijoules(why);
  if (!first) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(max_wait_ms);
  std::optional<uint64_t> last = first;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    last = read_millijoules(why);
    if (!last || *last != *first) return last;
  }
  return last;
}

std::optional<double> NvmlEnergy::power_limit_watts() const {
  if (!m_api || !m_api->enforced_power_limit) return std::nullopt;
  unsigned int milliwatts = 0;
  if (m_api->enforced_power_limit(m_api->device, &milliwatts) != nvml::k_nvml_success) return std::nullopt;
  return milliwatts / 1e3;
}

}  // namespace cmt
