#include "tune/protocol.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <utility>

namespace cmt {

namespace {
int64_t round_up(int64_t x, int64_t align) { return align > 1 ? (x + align - 1) / align * align : x; }
}  // namespace

Layout timing_layout(const Problem& p, int64_t ld_align) {
  return {round_up(p.k, ld_align), round_up(p.n, ld_align), round_up(p.n, ld_align)};
}

Layout validation_layout(const Problem& p, int64_t ld_align) {
  const Layout t = timing_layout(p, ld_align);
  return {t.lda + 8, t.ldb + 8, t.ldc + 8};
}

std::optional<std::string> unmet_requirements(const Requirements& req, const Layout& layout) {
  const int64_t mult = std::max<int64_t>(1, req.ld_multiple);
  for (const auto& [name, ld] : {std::pair{"lda", layout.lda}, {"ldb", layout.ldb}, {"ldc", layout.ldc}})
    if (ld % mult != 0) return fmt::format("needs {} % {} == 0 ({} = {})", name, mult, name, ld);
  return std::nullopt;
}

}  // namespace cmt
