// What `cm-tune devices` reports of the GPUs, as output-layer data: apart from the command, so the
// CPU tests pin it without a GPU.
#pragma once

#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "output/table.hpp"

namespace cmt::cli {

/// A row per device, every property a field (`devices --json`'s "devices").
output::Table device_table(const std::vector<DeviceInfo>& devices);
/// One device as `devices` prints it: "device N: NAME", then a property and its value a line.
std::string device_text(const DeviceInfo& device);

}  // namespace cmt::cli
