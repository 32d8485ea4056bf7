#include "core/types.hpp"

#include <array>
#include <charconv>
#include <fmt/format.h>
#include <tuple>

#include "core/error.hpp"

namespace cmt {

std::string Problem::to_string() const { return fmt::format("{}x{}x{}", m, n, k); }

bool Problem::operator<(const Problem& o) const { return std::tie(m, n, k) < std::tie(o.m, o.n, o.k); }

std::string params_to_string(const ParamValues& values) {
  std::string out;
  for (const auto& [name, value] : values) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", name, value);
  }
  return out;
}

ParamValues params_from_string(std::string_view text) {
  ParamValues out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const auto eq = item.find('=');
    int64_t value = 0;
    if (eq == std::string_view::npos || eq == 0) throw UsageError(fmt::format("bad parameter '{}': expected NAME=VALUE", item));
    const std::string_view digits = item.substr(eq + 1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || ptr != digits.data() + digits.size() || digits.empty())
      throw UsageError(fmt::format("bad parameter '{}': value is not an integer", item));
    out.emplace_back(std::string(item.substr(0, eq)), value);
  }
  return out;
}

std::optional<int64_t> find_param(const ParamValues& values, std::string_view name) {
  for (const auto& [n, v] : values)
    if (n == name) return v;
  return std::nullopt;
}

namespace {
constexpr std::array<std::pair<Outcome, std::string_view>, 8> k_outcome_names{{
    {Outcome::ok, "ok"},
    {Outcome::compile_error, "compile_error"},
    {Outcome::launch_error, "launch_error"},
    {Outcome::wrong, "wrong"},
    {Outcome::abandoned, "abandoned"},
    {Outcome::skipped, "skipped"},
    {Outcome::crashed, "crashed"},
    {Outcome::timeout, "timeout"},
}};
}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [o, name] : k_outcome_names)
    if (o == outcome) return name;
  return "unknown";
}

Outcome outcome_from_string(std::string_view name) {
  for (const auto& [o, n] : k_outcome_names)
    if (n == name) return o;
  throw UsageError(fmt::format("unknown outcome '{}'", name));
}

std::string Requirements::to_string() const {
  if (none()) return "none";
  return fmt::format("{}-byte aligned A/B/C, lda/ldb/ldc % {} == 0", align_bytes, ld_multiple);
}

}  // namespace cmt
