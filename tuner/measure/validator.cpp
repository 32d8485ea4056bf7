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
}  // namespace

Validator::Validator(cudaStream_t stream) : m_stream(stream), m_stats(sizeof(CompareStats)) {}

ValidationResult Validator::validate(const GemmLauncher& launch, const ProblemWorkspace& ws, double kernel_timeout_ms) {
  ValidationResult result;
  const Problem& p = ws.problem();
  const Layout& v = ws.validation();
  const int64_t c_elems = ws.c_val_elements();
  auto* stats_dev = static_cast<CompareStats*>(m_stats.get());

  for (size_t i = 0; i < std::size(k_validation_cases); ++i) {
    const ValidationCase vc = k_validation_cases[i];
    // Guards on both sides, then C: C0 for beta != 0, NaN poison for beta == 0 so unwritten
    // elements fail.
    fill_bits(ws.c_work_allocation(), k_guard_floats + c_elems + ws.c_guard_after(), k_guard_bits, m_stream);
    if (vc.beta != 0.0f)
      CMT_CUDA_CHECK(cudaMemcpyAsync(ws.c_work(), ws.c0_val(), c_elems * sizeof(float), cudaMemcpyDeviceToDevice, m_stream));
    else
      fill_bits(ws.c_work(), c_elems, k_pad_bits, m_stream);

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

    CMT_CUDA_CHECK(cudaMemsetAsync(stats_dev, 0, sizeof(CompareStats), m_stream));
    CMT_CUDA_CHECK(cudaMemsetAsync(&stats_dev->first_bad_row, 0xff, 2 * sizeof(uint32_t), m_stream));
    compare_gemm(ws.c_work(), ws.reference(int(i)), ws.abs_ab_val(), vc.beta != 0.0f ? ws.abs_c0_val() : nullptr,
                 int(p.m), int(p.n), int(v.ldc), int(p.k), vc.alpha, vc.beta, k_pad_bits, stats_dev, m_stream);
    check_bits(ws.c_work_allocation(), k_guard_floats, k_guard_bits, stats_dev, m_stream);
    check_bits(ws.c_work() + c_elems, ws.c_guard_after(), k_guard_bits, stats_dev, m_stream);
    CompareStats st{};
    CMT_CUDA_CHECK(cudaMemcpyAsync(&st, stats_dev, sizeof st, cudaMemcpyDeviceToHost, m_stream));
    CMT_CUDA_CHECK(cudaStreamSynchronize(m_stream));

    result.max_error_ratio = std::max<double>(result.max_error_ratio, from_bits(st.max_ratio_bits));
    result.max_abs_error = std::max<double>(result.max_abs_error, from_bits(st.max_abs_err_bits));
    if (st.bad_elements > 0 || st.guard_violations > 0) {
      result.reason = st.bad_elements > 0
                          ? fmt::format("{} of {} elements wrong (alpha={}, beta={}); e.g. C[{}][{}]; max error/tolerance {:.3g}",
                                        st.bad_elements, p.m * p.n, vc.alpha, vc.beta, st.first_bad_row, st.first_bad_col,
                                        from_bits(st.max_ratio_bits))
                          : "";
      if (st.guard_violations > 0)
        result.reason += fmt::format("{}{} writes outside C's M x N block (alpha={}, beta={})",
                                     result.reason.empty() ? "" : "; ", st.guard_violations, vc.alpha, vc.beta);
      return result;
    }
  }
  result.passed = true;
  return result;
}

}  // namespace cmt
