// Choosing a database device from --device.
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/nvrtc_compiler.hpp"

namespace cmt::cli {

namespace {

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string describe(const DeviceRecord& d, size_t position) {
  return fmt::format("[{}] {} (sm_{}{}, {} SMs, {})", position, d.name, d.cc_major, d.cc_minor, d.sm_count, d.uuid);
}

}  // namespace

std::string resolve_arch(const std::string& requested, int device) {
  if (!requested.empty()) {
    check_arch(requested);
    return requested;
  }
  try {
    return query_device(device).arch();
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

DeviceRecord resolve_db_device(Store& store, const std::string& spec) {
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
      if (index < device_count()) gpu = query_device(index);
    } catch (const std::exception&) {
      gpu.reset();
    }
    if (gpu) {
      for (const auto& d : devices)
        if (d.uuid == gpu->uuid) return d;
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

}  // namespace cmt::cli
