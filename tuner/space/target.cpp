#include "space/target.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/device_info.hpp"
#include "core/error.hpp"

namespace cmt {

namespace {

/// Per compute capability (the CUDA programming guide's table of technical specifications): the
/// shared memory one block may use after opting in, and what one SM holds.
struct ArchLimits {
  int cc;
  int64_t smem_per_block;
  SmLimits sm;
};
constexpr int64_t k_kib = 1024;
constexpr ArchLimits k_arch_limits[] = {
    {75, 64 * k_kib, {64 * k_kib, 0, 1024, 16, 65536}},      {80, 163 * k_kib, {164 * k_kib, k_kib, 2048, 32, 65536}},
    {86, 99 * k_kib, {100 * k_kib, k_kib, 1536, 16, 65536}},   {87, 163 * k_kib, {164 * k_kib, k_kib, 2048, 32, 65536}},
    {89, 99 * k_kib, {100 * k_kib, k_kib, 1536, 24, 65536}},   {90, 227 * k_kib, {228 * k_kib, k_kib, 2048, 32, 65536}},
    {100, 227 * k_kib, {228 * k_kib, k_kib, 2048, 32, 65536}}, {103, 227 * k_kib, {228 * k_kib, k_kib, 2048, 32, 65536}},
    {110, 227 * k_kib, {228 * k_kib, k_kib, 2048, 32, 65536}}, {120, 99 * k_kib, {100 * k_kib, k_kib, 1536, 32, 65536}},
    {121, 99 * k_kib, {100 * k_kib, k_kib, 1536, 32, 65536}},
};

}  // namespace

SmLimits sm_limits(int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  const ArchLimits* best = &k_arch_limits[0];
  for (const ArchLimits& a : k_arch_limits)
    if (a.cc <= cc) best = &a;   // the table is sorted: the newest known at or below cc
  return best->sm;
}

int resident_blocks(const SmLimits& sm, int64_t threads, int registers, int64_t smem_bytes) {
  if (threads <= 0) return 0;
  const int64_t warps = (threads + 31) / 32;
  int64_t blocks = std::min<int64_t>(sm.max_blocks, sm.max_threads / (warps * 32));
  if (registers > 0) {
    // Registers are allocated per warp in units of 256, from four quarters of the register file.
    const int64_t per_warp = (static_cast<int64_t>(registers) * 32 + 255) / 256 * 256;
    const int64_t warps_by_registers = 4 * ((sm.registers / 4) / per_warp);
    blocks = std::min(blocks, warps_by_registers / warps);
  }
  if (smem_bytes > 0 || sm.smem_reserved_per_block > 0)
    blocks = std::min(blocks, sm.smem_per_sm / (std::max<int64_t>(smem_bytes, 0) + sm.smem_reserved_per_block));
  return static_cast<int>(std::max<int64_t>(blocks, 0));
}

std::optional<int64_t> Target::lookup(std::string_view name) const {
  if (name == "DEVICE_SMEM_PER_BLOCK") return smem_per_block;
  if (name == "DEVICE_CC") {
    // "sm_90" -> 90, "sm_100a" -> 100; 0 for a target of no particular architecture.
    int64_t cc = 0;
    for (size_t i = arch.rfind('_') == std::string::npos ? arch.size() : arch.rfind('_') + 1;
         i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i)
      cc = cc * 10 + (arch[i] - '0');
    return cc;
  }
  return std::nullopt;
}

const std::vector<std::pair<std::string, std::string>>& target_names() {
  static const std::vector<std::pair<std::string, std::string>> k_names = {
      {"DEVICE_SMEM_PER_BLOCK", "bytes of shared memory one block may use (the opt-in maximum)"},
      {"DEVICE_CC", "compute capability as a number: 90 for sm_90, 80 for sm_80 (0: no particular architecture)"},
  };
  return k_names;
}

bool is_target_name(std::string_view name) { return name.substr(0, 7) == "DEVICE_"; }

Target portable_target() { return Target{"any", k_default_smem_per_block}; }

Target target_of(const DeviceInfo& device) {
  return Target{device.arch(), static_cast<int64_t>(device.smem_per_block_optin)};
}

Target target_for_arch(const std::string& arch) {
  std::string digits = arch.rfind("sm_", 0) == 0 ? arch.substr(3) : std::string();
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();  // sm_90a, sm_100f
  for (const ArchLimits& a : k_arch_limits)
    if (digits == std::to_string(a.cc)) return Target{arch, a.smem_per_block};
  std::string known;
  for (const ArchLimits& a : k_arch_limits) known += fmt::format("{}sm_{}", known.empty() ? "" : ", ", a.cc);
  throw UsageError(fmt::format("unknown architecture '{}': cm-tune knows the limits of {}", arch, known));
}

}  // namespace cmt
