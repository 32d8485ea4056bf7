#include "measure/validator.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "cuda/check.hpp"
#include "measure/validation_kernels.hpp"

namespace cmt {

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Matrix b and offset r within it of an allocation offset inside the matrices' span; false in a
/// guard region.
bool locate(const CWorkLayout& l, int64_t offset, int64_t& b, int64_t& r) {
  const int64_t off = offset - l.lead;
  if (off < 0) return false;
  b = l.batch > 1 ? off / l.stride : 0;
  r = off - b * (l.batch > 1 ? l.stride : 0);
  return b < l.batch && r < l.matrix();
}

std::string element_name(const CWorkLayout& l, int64_t b, int64_t row, int64_t col) {
  return l.batch > 1 ? fmt::format("C[b={}][{}][{}]", b, row, col) : fmt::format("C[{}][{}]", row, col);
}

std::string matrix_name(const CWorkLayout& l, int64_t b) {
  return l.batch > 1 ? fmt::format("C[b={}]", b) : std::string("C");
}

}  // namespace

std::string describe_c_offset(const CWorkLayout& l, int64_t offset) {
  int64_t b = 0, r = 0;
  if (locate(l, offset, b, r)) {
    const int64_t row = r / l.ldc, col = r % l.ldc;
    return element_name(l, b, row, col) + (col >= l.n ? " (a padding column)" : "");
  }
  if (offset < l.lead) return fmt::format("{} floats before {}", l.lead - offset, l.batch > 1 ? "the first C" : "C");
  const int64_t off = offset - l.lead;
  b = std::min<int64_t>(l.batch - 1, l.batch > 1 ? off / l.stride : 0);
  const int64_t past = off - b * (l.batch > 1 ? l.stride : 0) - l.matrix() + 1;
  if (b + 1 < l.batch)
    return fmt::format("{} floats after C[b={}] (the gap before C[b={}])", past, b, b + 1);
  return fmt::format("{} floats after {}", past, l.batch > 1 ? "the last C" : "C");
}

Validator::Validator(cudaStream_t stream) : m_stream(stream), m_stats(sizeof(CompareStats)) {}

ValidationResult Validator::validate(const GemmLauncher& launch, const ProblemWorkspace& ws, double kernel_timeout_ms) {
  ValidationResult result;
  const Problem& p = ws.problem();
  const CWorkLayout& layout = ws.c_layout();
  auto* stats_dev = static_cast<CompareStats*>(m_stats.get());

  for (size_t i = 0; i < std::size(k_validation_cases); ++i) {
    const ValidationCase vc = k_validation_cases[i];
    // Guards around and between the matrices, then C: C0 for beta != 0, NaN poison for beta == 0 so
    // unwritten elements fail.
    prepare_c(ws.c_work_allocation(), layout, k_guard_bits, vc.beta != 0.0f ? ws.c0_val() : nullptr, ws.ref_stride(),
              k_pad_bits, m_stream);

    cudaError_t status = launch(ws.validation_args(vc));
    if (status == cudaSuccess) status = synchronize_within(m_stream, kernel_timeout_ms);
    if (status == cudaErrorTimeout) {
      result.status = status;
      result.reason = fmt::format("still running after {:.0f} ms, the kernel timeout (alpha={}, beta={})",
                                  kernel_timeout_ms, vc.alpha, vc.beta);
      return result;
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      result.status = status;
      result.reason = fmt::format("launch failed (alpha={}, beta={}): {}", vc.alpha, vc.beta, cudaGetErrorString(status));
      return result;
    }

    reset_stats(stats_dev, m_stream);
    compare_gemm(ws.c_work_allocation(), layout, ws.reference(int(i)), ws.abs_ab_val(),
                 vc.beta != 0.0f ? ws.c0_val() : nullptr, ws.ref_stride(), int(p.k), vc.alpha, vc.beta, k_pad_bits,
                 k_guard_bits, stats_dev, m_stream);
    CompareStats st{};
    CMT_CUDA_CHECK(cudaMemcpyAsync(&st, stats_dev, sizeof st, cudaMemcpyDeviceToHost, m_stream));
    CMT_CUDA_CHECK(cudaStreamSynchronize(m_stream));

    result.max_error_ratio = std::max<double>(result.max_error_ratio, from_bits(st.max_ratio_bits));
    result.max_abs_error = std::max<double>(result.max_abs_error, from_bits(st.max_abs_err_bits));
    if (st.bad_elements == 0 && st.guard_violations == 0 && st.pad_violations == 0) continue;

    if (st.bad_elements > 0) {
      const auto first = static_cast<int64_t>(st.first_bad);
      int64_t b = 0, r = 0;
      locate(layout, first, b, r);
      float got = 0, want = 0;
      CMT_CUDA_CHECK(cudaMemcpy(&got, ws.c_work_allocation() + first, sizeof got, cudaMemcpyDeviceToHost));
      CMT_CUDA_CHECK(cudaMemcpy(&want, ws.reference(int(i)) + b * ws.ref_stride() + r, sizeof want, cudaMemcpyDeviceToHost));
      result.reason = fmt::format("{} of {} elements wrong (alpha={}, beta={}); first {} = {}, expected {}; max "
                                  "error/tolerance {:.3g}",
                                  st.bad_elements, p.m * p.n * p.batch, vc.alpha, vc.beta,
                                  element_name(layout, b, r / layout.ldc, r % layout.ldc), got, want,
                                  from_bits(st.max_ratio_bits));
    }
    if (st.guard_violations > 0 || st.pad_violations > 0) {
      std::string what;
      if (st.guard_violations > 0) what = fmt::format("{} guard floats", st.guard_violations);
      if (st.pad_violations > 0)
        what += fmt::format("{}{} padding-column floats", what.empty() ? "" : " and ", st.pad_violations);
      result.reason += fmt::format("{}writes outside C's M x N block{}: {} changed (alpha={}, beta={}); first at {}",
                                   result.reason.empty() ? "" : "; ", p.batched() ? "s" : "", what, vc.alpha, vc.beta,
                                   describe_c_offset(layout, static_cast<int64_t>(st.first_guard)));
    }
    return result;
  }
  result.passed = true;
  return result;
}

}  // namespace cmt
