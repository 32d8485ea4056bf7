// The GPU a search space is enumerated for. Descriptors may name its limits in their expressions
// (DEVICE_SMEM_PER_BLOCK, ...), so a constraint such as "the tile's shared memory fits" reads the
// device instead of a number written into the descriptor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_info.hpp"
#include "core/types.hpp"

namespace cmt {

struct Target {
  std::string arch;                 // "sm_90"
  int64_t smem_per_block = 0;       // bytes of shared memory one block may use (the opt-in maximum)
  /// The layouts to enumerate candidates for (the problems' layouts); a family enumerates those
  /// it supports.
  std::vector<std::string> layouts{"nn"};
  /// The element types to enumerate candidates for (the problems' types), likewise.
  std::vector<DType> dtypes{DType::f32};

  /// The value of a DEVICE_* name, or nullopt for any other name.
  std::optional<int64_t> lookup(std::string_view name) const;
};

/// The DEVICE_* names descriptors may use, with a one-line meaning each.
const std::vector<std::pair<std::string, std::string>>& target_names();
/// Whether a name is reserved for the target (starts with DEVICE_).
bool is_target_name(std::string_view name);

/// What one SM of an architecture holds, for occupancy.
struct SmLimits {
  int64_t smem_per_sm = 0;             // bytes
  int64_t smem_reserved_per_block = 0; // bytes the system takes per resident block
  int64_t max_threads = 0;
  int64_t max_blocks = 0;
  int64_t registers = 0;               // 32-bit registers
};

/// The SM limits of a compute capability: the newest known architecture at or below it.
SmLimits sm_limits(int cc_major, int cc_minor);
/// How many blocks of a kernel one SM holds at once (the occupancy calculator's answer), from its
/// threads per block, registers per thread (<= 0: unknown, not a limit) and shared memory per block.
int resident_blocks(const SmLimits& sm, int64_t threads, int registers, int64_t smem_bytes);

/// Any GPU: what every one gives a block without opting in (48 KiB of shared memory). The exported
/// header's generic default kernel, which runs where no table matches, is chosen for it.
Target portable_target();
/// The target of a device, from what it reports.
Target target_of(const DeviceInfo& device);
/// The target of an architecture, from NVIDIA's per-compute-capability limits ("sm_90", "sm_90a").
/// UsageError naming the architectures it knows for one it does not.
Target target_for_arch(const std::string& arch);

}  // namespace cmt
