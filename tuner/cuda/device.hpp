// GPU discovery through the CUDA runtime (statically linked; libcuda is loaded by the runtime
// only when present, so cm-tune starts on machines without a driver).
#pragma once

#include <vector>

#include "core/device_info.hpp"

namespace cmt {

/// Number of CUDA devices. Throws NoDeviceError("no CUDA driver found ...") when the driver is
/// missing or too old.
int device_count();
/// Properties of one device. Throws NoDeviceError("device 3 not found (1 device present)").
DeviceInfo query_device(int index);
/// Every device.
std::vector<DeviceInfo> query_devices();
/// Makes index current (query_device's checks included) and returns its info.
DeviceInfo select_device(int index);

}  // namespace cmt
