// Choosing a database device from --device.
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"

namespace cmt::cli {

namespace {

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string describe(const DeviceRecord& d, size_t position) {
  return fmt::format("[{}] {} (sm_{}{}, {} SMs, {})", position, d.name, d.cc_major, d.cc_minor, d.sm_count, d.uuid);
}

/// "[0] NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, GPU-...); [1] ..." for present GPUs, as for the database's.
std::string describe_live(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const auto& d : devices)
    out += fmt::format("{}[{}] {} ({}, {} SMs, {})", out.empty() ? "" : "; ", d.index, d.name, d.arch(), d.sm_count, d.uuid);
  return out;
}

}  // namespace

std::string resolve_arch(const std::string& requested, const std::string& device) {
  if (!requested.empty()) {
    check_arch(requested);
    return requested;
  }
  try {
    return resolve_live_device(device).arch();
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(fmt::format("cannot find the target arch: {}; pass --arch (e.g. --arch sm_90)", e.what()));
  }
}

Target resolve_target(const std::string& requested_arch, std::string* note) {
  if (!requested_arch.empty()) {
    check_arch(requested_arch);
    return target_for_arch(requested_arch);
  }
  try {
    if (device_count() > 0) {
      const DeviceInfo gpu = query_device(0);
      if (note) *note = fmt::format("device 0, {}", gpu.name);
      return target_of(gpu);
    }
  } catch (const NoDeviceError&) {
  }
  if (note) *note = "no GPU here; --arch chooses another";
  return target_for_arch(k_default_arch);
}

std::string describe_db_devices(Store& store) {
  const auto devices = store.devices();
  if (devices.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? "; " : "") + describe(devices[i], i);
  return out;
}

DeviceRecord resolve_db_device(Store& store, const std::string& spec, bool ask_gpu) {
  // An empty spec is part of every name, so it would pick a device the user never named.
  if (spec.empty() || spec[0] == '-')
    throw UsageError(fmt::format("--device '{}' names no device: give a CUDA index (0, 1, ...), a position in the "
                                 "database, a UUID or a unique part of the device's name",
                                 spec));
  const auto devices = store.devices();
  const auto not_tuned = [&](const std::string& what) {
    return UsageError(fmt::format("{} has not been tuned in {}; tuned devices: {}", what, store.file().string(),
                                  describe_db_devices(store)));
  };
  if (is_index(spec)) {
    const int index = std::stoi(spec);
    // With a GPU present, an index means that GPU, identified by its UUID.
    std::optional<DeviceInfo> gpu;
    try {
      if (ask_gpu && index < device_count()) gpu = query_device(index);
    } catch (const std::exception&) {
      gpu.reset();
    }
    if (gpu) {
      for (const auto& d : devices)
        if (d.uuid == gpu->uuid) return d;
      // Another GPU of the same model (name, compute capability, SMs) serves, as in the exported
      // header, whose tables are per model: a database tuned on one H100 runs on any.
      for (const auto& d : devices)
        if (model_identity(d) == model_identity(*gpu)) {
          spdlog::info("device {} ({}) was not tuned itself; the database's {} of the same model ({}) stands for it",
                       index, gpu->uuid, d.name, d.uuid);
          return d;
        }
      throw not_tuned(fmt::format("device {} ({}, {})", index, gpu->name, gpu->uuid));
    }
    if (static_cast<size_t>(index) < devices.size()) return devices[static_cast<size_t>(index)];
    throw not_tuned(fmt::format("device {}", index));
  }
  std::vector<const DeviceRecord*> matches;
  for (const auto& d : devices)
    if (d.uuid == spec || d.name.find(spec) != std::string::npos) matches.push_back(&d);
  if (matches.size() == 1) return *matches.front();
  if (matches.empty()) throw not_tuned(fmt::format("device '{}'", spec));
  throw UsageError(fmt::format("device '{}' is ambiguous: {}", spec, describe_db_devices(store)));
}

DeviceInfo resolve_live_device(const std::string& spec) {
  // No GPU name starts with '-': "-1" is a mistyped index, said before the driver is asked.
  if (spec.empty() || spec[0] == '-')
    throw UsageError(fmt::format("--device '{}' names no GPU: give a CUDA index (0, 1, ...), a UUID or a unique part of "
                                 "the GPU's name (cm-tune devices lists them)",
                                 spec));
  const std::vector<DeviceInfo> devices = query_devices();
  if (devices.empty()) throw NoDeviceError(fmt::format("--device {}: no CUDA device present", spec));
  if (std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const size_t index = spec.size() < 6 ? std::stoul(spec) : devices.size();   // longer: past any GPU
    if (index < devices.size()) return devices[index];
    throw NoDeviceError(fmt::format("--device {}: no such GPU; present: {}", spec, describe_live(devices)));
  }
  std::vector<const DeviceInfo*> matches;
  for (const auto& d : devices)
    if (d.uuid == spec || d.name.find(spec) != std::string::npos) matches.push_back(&d);
  if (matches.size() == 1) return *matches.front();
  throw UsageError(fmt::format("--device '{}' {}; present: {}", spec,
                               matches.empty() ? "matches no GPU's UUID or name" : "matches more than one GPU: give its index or UUID",
                               describe_live(devices)));
}

}  // namespace cmt::cli
