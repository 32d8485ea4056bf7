#include "core/types.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <fmt/format.h>
#include <tuple>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace cmt {

std::string_view dtype_name(DType dtype) { return type_info(dtype).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const TypeInfo& t : k_types) {
    const std::string_view want = t.name;
    bool same = name.size() == want.size();
    for (size_t c = 0; same && c < name.size(); ++c)
      same = (name[c] >= 'A' && name[c] <= 'Z' ? static_cast<char>(name[c] - 'A' + 'a') : name[c]) == want[c];
    if (same) return t.dtype;
  }
  return std::nullopt;
}

int dtype_bytes(DType dtype) { return type_info(dtype).bytes; }

Problem Problem::make(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, int64_t batch, DType dtype) {
  Problem p{m, n, k, trans_a, trans_b, batch};
  p.dtype = dtype;
  if (batch > 1) {
    p.stride_a = p.packed_stride_a();
    p.stride_b = p.packed_stride_b();
    p.stride_c = p.packed_stride_c();
  }
  return p;
}

std::string_view layout_name(bool trans_a, bool trans_b) { return k_layout_names[(trans_a ? 2 : 0) + (trans_b ? 1 : 0)]; }

std::string_view Problem::layout() const { return layout_name(trans_a, trans_b); }

std::optional<std::pair<bool, bool>> parse_layout(std::string_view name) {
  if (name.size() != 2) return std::nullopt;
  bool t[2];
  for (int i = 0; i < 2; ++i) {
    const char c = name[static_cast<size_t>(i)];
    if (c == 'n' || c == 'N') t[i] = false;
    else if (c == 't' || c == 'T') t[i] = true;
    else return std::nullopt;
  }
  return std::make_pair(t[0], t[1]);
}

std::string Problem::shape_string() const { return fmt::format("{}x{}x{}", m, n, k); }

std::string Problem::to_string() const {
  std::string out = shape_string();
  if (trans_a || trans_b) out += fmt::format(":{}", layout());
  if (dtype != DType::f32) out += fmt::format(":{}", dtype_name(dtype));
  if (batch != 1) {
    out += fmt::format("*{}", batch);
    if (stride_a != packed_stride_a()) out += fmt::format(":sa={}", stride_a);
    if (stride_b != packed_stride_b()) out += fmt::format(":sb={}", stride_b);
    if (stride_c != packed_stride_c()) out += fmt::format(":sc={}", stride_c);
  }
  return out;
}

namespace {
auto problem_tie(const Problem& p) {
  return std::tie(p.m, p.n, p.k, p.trans_a, p.trans_b, p.batch, p.stride_a, p.stride_b, p.stride_c, p.dtype);
}

/// The token being parsed and where it came from ("in --sizes"), for the messages.
struct ProblemToken {
  std::string_view text, where;
};

[[noreturn]] void bad_problem(const ProblemToken& token, std::string_view why) {
  throw UsageError(fmt::format("bad size '{}'{}{}: {}", printable(token.text), token.where.empty() ? "" : " ",
                               token.where, printable(why)));
}

int64_t parse_count(std::string_view text, const ProblemToken& token, std::string_view what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size())
    bad_problem(token, fmt::format("{} '{}' is not a whole number", what, text));
  if (v < lo || v > hi) bad_problem(token, fmt::format("{} {} is outside [{}, {}]", what, v, lo, hi));
  return v;
}
}  // namespace

bool Problem::operator==(const Problem& o) const { return problem_tie(*this) == problem_tie(o); }

bool Problem::operator<(const Problem& o) const { return problem_tie(*this) < problem_tie(o); }

std::string stride_problem(const Problem& p) {
  if (p.batch <= 1) {
    if (p.stride_a != 0 || p.stride_b != 0 || p.stride_c != 0) return "strides need a batch above 1";
    return "";
  }
  if (p.stride_a < 0 || p.stride_b < 0 || p.stride_c < 0) return "strides must be >= 0";
  if (p.stride_c < p.packed_stride_c())
    return fmt::format("the stride of C ({}) must be at least M*N = {}, or the matrices of C overlap", p.stride_c,
                       p.packed_stride_c());
  return "";
}

Problem parse_problem(std::string_view text, int64_t max_dimension, int64_t max_batch, std::string_view where) {
  const ProblemToken token{text, where};
  // MxNxK[:LAYOUT][:DTYPE][*BATCH][:sa=S][:sb=S][:sc=S]; the layout and the type in either order.
  const size_t star = text.find('*');
  std::string_view head = text.substr(0, star);
  std::string_view tail = star == std::string_view::npos ? std::string_view{} : text.substr(star + 1);
  std::optional<std::pair<bool, bool>> layout;
  std::optional<DType> dtype;
  if (const size_t colon = head.find(':'); colon != std::string_view::npos) {
    std::string_view items = head.substr(colon);
    head = head.substr(0, colon);
    while (!items.empty()) {
      items.remove_prefix(1);  // ':'
      const size_t next = items.find(':');
      const std::string_view item = items.substr(0, next);
      items = next == std::string_view::npos ? std::string_view{} : items.substr(next);
      if (const auto l = parse_layout(item)) {
        if (layout) bad_problem(token, "the layout is given twice");
        layout = l;
      } else if (const auto d = parse_dtype(item)) {
        if (dtype) bad_problem(token, "the element type is given twice");
        dtype = d;
      } else {
        bad_problem(token, fmt::format("unknown item '{}' (a layout nn, nt, tn or tt, or a type {})", item, type_names()));
      }
    }
  }
  int64_t dims[3];
  int count = 0;
  for (size_t p = 0; p <= head.size(); ++count) {
    const size_t x = head.find_first_of("xX", p);
    if (count == 3) bad_problem(token, "a rectangular size is MxNxK");
    dims[count] = parse_count(head.substr(p, x == std::string_view::npos ? std::string_view::npos : x - p), token,
                              "dimension", 1, max_dimension);
    p = x == std::string_view::npos ? head.size() + 1 : x + 1;
  }
  if (count == 1) dims[1] = dims[2] = dims[0];
  else if (count != 3) bad_problem(token, "a rectangular size is MxNxK");
  bool ta = false, tb = false;
  if (layout) std::tie(ta, tb) = *layout;
  int64_t batch = 1;
  std::string_view strides;
  if (star != std::string_view::npos) {
    const size_t colon = tail.find(':');
    batch = parse_count(tail.substr(0, colon), token, "batch", 1, max_batch);
    strides = colon == std::string_view::npos ? std::string_view{} : tail.substr(colon);
  }
  Problem p = Problem::make(dims[0], dims[1], dims[2], ta, tb, batch, dtype.value_or(DType::f32));
  bool seen[3] = {false, false, false};
  while (!strides.empty()) {
    strides.remove_prefix(1);  // ':'
    const size_t next = strides.find(':');
    const std::string_view item = strides.substr(0, next);
    strides = next == std::string_view::npos ? std::string_view{} : strides.substr(next);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const int which = name == "sa" ? 0 : name == "sb" ? 1 : name == "sc" ? 2 : -1;
    if (which < 0 || eq == std::string_view::npos)
      bad_problem(token, fmt::format("unknown item '{}' after the batch (sa=, sb= or sc=)", item));
    if (seen[which]) bad_problem(token, fmt::format("{} is given twice", name));
    seen[which] = true;
    if (batch == 1) bad_problem(token, "strides need a batch above 1 (*BATCH)");
    const int64_t v = parse_count(item.substr(eq + 1), token, name, 0, int64_t{1} << 50);
    (which == 0 ? p.stride_a : which == 1 ? p.stride_b : p.stride_c) = v;
  }
  if (const std::string why = stride_problem(p); !why.empty()) bad_problem(token, why);
  return p;
}

std::string params_to_string(const ParamValues& values) {
  std::string out;
  for (const auto& [name, value] : values) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", name, value);
  }
  return out;
}

std::string kernel_label(std::string_view template_name, std::string_view params) {
  return fmt::format("{}[{}]", template_name, params);
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
constexpr std::array<std::pair<Outcome, std::string_view>, std::size(k_outcomes)> k_outcome_names{{
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

std::vector<BatchLaunch> batch_launches(const LaunchShape& shape, int64_t batch) {
  const int64_t z = std::max<int64_t>(1, shape.grid_z);
  const int64_t per_block = std::max<int64_t>(1, shape.problems_per_block);
  // Blocks along z per tile, then problems per launch: a whole number of blocks of problems.
  const int64_t per_launch = std::max<int64_t>(1, k_max_grid_z / z) * per_block;
  std::vector<BatchLaunch> out;
  for (int64_t first = 0; first < batch; first += per_launch) {
    const int64_t count = std::min(per_launch, batch - first);
    out.push_back({first, count, z * ((count + per_block - 1) / per_block)});
  }
  return out;
}

std::string Requirements::to_string() const {
  if (none()) return "none";
  return fmt::format("{}-byte aligned A/B/C, lda/ldb/ldc % {} == 0", align_bytes, ld_multiple);
}

}  // namespace cmt
