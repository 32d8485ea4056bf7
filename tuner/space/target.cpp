#include "space/target.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace cmt {

namespace {

/// Shared memory one block may use after opting in, per compute capability (the CUDA programming
/// guide's table of technical specifications).
struct ArchLimits {
  int cc;
  int64_t smem_per_block;
};
constexpr ArchLimits k_arch_limits[] = {
    {75, 64 * 1024},  {80, 163 * 1024}, {86, 99 * 1024},  {87, 163 * 1024}, {89, 99 * 1024},  {90, 227 * 1024},
    {100, 227 * 1024}, {103, 227 * 1024}, {110, 227 * 1024}, {120, 99 * 1024}, {121, 99 * 1024},
};

}  // namespace

std::optional<int64_t> Target::lookup(std::string_view name) const {
  if (name == "DEVICE_SMEM_PER_BLOCK") return smem_per_block;
  return std::nullopt;
}

const std::vector<std::pair<std::string, std::string>>& target_names() {
  static const std::vector<std::pair<std::string, std::string>> k_names = {
      {"DEVICE_SMEM_PER_BLOCK", "bytes of shared memory one block may use (the opt-in maximum)"},
  };
  return k_names;
}

bool is_target_name(std::string_view name) { return name.substr(0, 7) == "DEVICE_"; }

Target portable_target() { return Target{"any", 48 * 1024}; }

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
