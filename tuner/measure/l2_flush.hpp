// The buffer a timed sample overwrites first, so that no operand is left in the L2 cache from the
// sample before: the GPU measurer's and precision's timers use it, and tune counts it in the memory
// a run needs.
#pragma once

#include <algorithm>
#include <cstddef>

#include "core/device_info.hpp"

namespace cmt {

/// Bytes of the flush buffer: twice the device's L2, and at least 64 MiB.
inline size_t l2_flush_bytes(const DeviceInfo& device) {
  return std::max<size_t>(2 * static_cast<size_t>(device.l2_bytes), size_t{64} << 20);
}

}  // namespace cmt
