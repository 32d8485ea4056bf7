#include "measure/protocol.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <utility>

#include "core/dtype.hpp"

namespace cmt {

namespace {
int64_t round_up(int64_t x, int64_t align) { return align > 1 ? (x + align - 1) / align * align : x; }
}  // namespace

const char* distribution_name(InputDistribution distribution) {
  return distribution == InputDistribution::normal ? "normal" : "uniform";
}

Layout timing_layout(const Problem& p, int64_t ld_align) {
  Layout l{round_up(stored_a(p).cols, ld_align), round_up(stored_b(p).cols, ld_align), round_up(p.n, ld_align)};
  if (p.batched()) {
    // The packed strides follow the (possibly rounded) leading dimensions; others are the problem's.
    l.stride_a = p.stride_a == p.packed_stride_a() ? stored_a(p).rows * l.lda : p.stride_a;
    l.stride_b = p.stride_b == p.packed_stride_b() ? stored_b(p).rows * l.ldb : p.stride_b;
    l.stride_c = p.stride_c == p.packed_stride_c() ? p.m * l.ldc : p.stride_c;
  }
  return l;
}

Layout validation_layout(const Problem& p, int64_t ld_align) {
  const Layout t = timing_layout(p, ld_align);
  Layout v{t.lda + 8, t.ldb + 8, t.ldc + 8};
  if (p.batched()) {
    constexpr int64_t k_align_floats = 64;  // 256 bytes
    v.stride_a = p.stride_a == 0 ? 0 : round_up(stored_a(p).rows * v.lda, k_align_floats);
    v.stride_b = p.stride_b == 0 ? 0 : round_up(stored_b(p).rows * v.ldb, k_align_floats);
    v.stride_c = round_up(p.m * v.ldc + c_guard_after(v.ldc), k_align_floats);
  }
  return v;
}

std::optional<std::string> unmet_requirements(const Requirements& req, const Layout& layout, DType dtype) {
  const int64_t mult = std::max<int64_t>(1, req.ld_multiple);
  for (const auto& [name, ld] : {std::pair{"lda", layout.lda}, {"ldb", layout.ldb}, {"ldc", layout.ldc}})
    if (ld % mult != 0) return fmt::format("needs {} % {} == 0 ({} = {})", name, mult, name, ld);
  // Matrices a stride of elements apart keep an alignment of align_bytes when the stride is a
  // multiple of align_bytes / dtype_bytes elements.
  const int64_t align = std::max<int64_t>(1, req.align_bytes / dtype_bytes(dtype));
  for (const auto& [name, stride] :
       {std::pair{"the stride of A", layout.stride_a}, {"the stride of B", layout.stride_b}, {"the stride of C", layout.stride_c}})
    if (stride % align != 0)
      return fmt::format("needs {}-byte aligned matrices ({} is {} {})", req.align_bytes, name, stride,
                         type_info(dtype).elements);
  return std::nullopt;
}

}  // namespace cmt
