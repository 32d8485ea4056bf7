#include "measure/gpu/validator.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "measure/gpu/validation_kernels.hpp"
#include "measure/tolerance.hpp"

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

/// "alpha=0.75, beta=-1.25" (both as the element type prints them), and for the INT32 wrap check
/// ", inputs that overflow".
std::string case_text(const ValidationCase& vc) {
  return fmt::format("alpha={}, beta={}{}", vc.alpha, vc.beta, vc.large_inputs ? ", inputs that overflow" : "");
}

/// Element `offset` of a device buffer of `dtype`, printed: the shortest text that reads back as the
/// same float or double, or the integer.
std::string read_element(const void* base, int64_t offset, DType dtype) {
  const int bytes = dtype_bytes(dtype);
  unsigned char raw[8] = {};
  CMT_CUDA_CHECK(cudaMemcpy(raw, static_cast<const char*>(base) + offset * bytes, static_cast<size_t>(bytes),
                            cudaMemcpyDeviceToHost));
  return visit_storage_type(dtype, [&raw](auto v) {
    std::memcpy(&v, raw, sizeof v);
    return fmt::format("{}", v);
  });
}

/// Why case `args` did not run: a launch past the kernel timeout, or a failed launch or wait.
std::string failed_case_text(cudaError_t status, double kernel_timeout_ms, const std::string& args) {
  if (status == cudaErrorTimeout)
    return fmt::format("still running after {:.0f} ms, the kernel timeout ({})", kernel_timeout_ms, args);
  return fmt::format("launch failed ({}): {}", args, cudaGetErrorString(status));
}

}  // namespace

std::string describe_c_offset(const CWorkLayout& l, int64_t offset) {
  int64_t b = 0, r = 0;
  if (locate(l, offset, b, r)) {
    const int64_t row = r / l.ldc, col = r % l.ldc;
    return element_name(l, b, row, col) + (col >= l.n ? " (a padding column)" : "");
  }
  const std::string_view unit = type_info(l.dtype).elements;
  if (offset < l.lead)
    return fmt::format("{} {} before {}", l.lead - offset, unit, l.batch > 1 ? "the first C" : "C");
  const int64_t off = offset - l.lead;
  b = std::min<int64_t>(l.batch - 1, l.batch > 1 ? off / l.stride : 0);
  const int64_t past = off - b * (l.batch > 1 ? l.stride : 0) - l.matrix() + 1;
  if (b + 1 < l.batch)
    return fmt::format("{} {} after C[b={}] (the gap before C[b={}])", past, unit, b, b + 1);
  return fmt::format("{} {} after {}", past, unit, l.batch > 1 ? "the last C" : "C");
}

Validator::Validator(cudaStream_t stream) : m_stream(stream), m_stats(sizeof(CompareStats)) {}

cudaError_t Validator::run_case(const GemmLauncher& launch, const ProblemWorkspace& ws, size_t index,
                                double kernel_timeout_ms, CompareStats* stats) {
  const Problem& p = ws.problem();
  const DType dtype = ws.dtype();  // the storage type
  const CWorkLayout& layout = ws.c_layout();
  auto* stats_dev = static_cast<CompareStats*>(m_stats.get());
  const ValidationCase& vc = validation_cases(dtype)[index];
  // Guards around and between the matrices, then C: C0 for beta != 0, the poison for beta == 0
  // (NaN; INT32's sentinel) so unwritten elements fail.
  prepare_c(ws.c_work_allocation(), layout, guard_bits(dtype), vc.beta != 0.0 ? ws.c0_val() : nullptr,
            ws.ref_stride(), pad_bits(dtype), m_stream);

  cudaError_t status = launch(ws.validation_args(vc));
  if (status == cudaSuccess) status = synchronize_within(m_stream, kernel_timeout_ms);
  if (status != cudaSuccess) {
    if (status != cudaErrorTimeout) cudaGetLastError();
    return status;
  }

  reset_stats(stats_dev, m_stream);
  compare_gemm(ws.c_work_allocation(), layout, ws.reference(int(index)), ws.abs_ab_val(),
               vc.beta != 0.0 ? ws.c0_ref() : nullptr, ws.ref_stride(), int(p.k), vc.alpha, vc.beta, pad_bits(dtype),
               guard_bits(dtype), stats_dev, m_stream, ws.fp64_reference());
  CMT_CUDA_CHECK(cudaMemcpyAsync(stats, stats_dev, sizeof *stats, cudaMemcpyDeviceToHost, m_stream));
  CMT_CUDA_CHECK(cudaStreamSynchronize(m_stream));
  return cudaSuccess;
}

ErrorMeasurement Validator::measure_errors(const GemmLauncher& launch, const ProblemWorkspace& ws,
                                           double kernel_timeout_ms) {
  ErrorMeasurement out;
  const ValidationCases cases = validation_cases(ws.dtype());
  for (size_t i = 0; i < cases.size(); ++i) {
    CompareStats st{};
    out.status = run_case(launch, ws, i, kernel_timeout_ms, &st);
    if (out.status != cudaSuccess) {
      out.reason = failed_case_text(out.status, kernel_timeout_ms, case_text(cases[i]));
      return out;
    }
    out.max_error_ratio.push_back(from_bits(st.max_ratio_bits));
    out.bad_elements += st.bad_elements;
    out.outside_writes += st.guard_violations + st.pad_violations;
  }
  return out;
}

ValidationResult Validator::validate(const GemmLauncher& launch, const ProblemWorkspace& ws, double kernel_timeout_ms) {
  ValidationResult result;
  const Problem& p = ws.problem();
  const DType dtype = ws.dtype();  // the storage type
  const bool wide = ws.fp64_reference();
  const CWorkLayout& layout = ws.c_layout();

  const ValidationCases cases = validation_cases(dtype);
  for (size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& vc = cases[i];
    const std::string args = case_text(vc);
    CompareStats st{};
    const cudaError_t status = run_case(launch, ws, i, kernel_timeout_ms, &st);
    if (status != cudaSuccess) {
      result.status = status;
      result.reason = failed_case_text(status, kernel_timeout_ms, args);
      return result;
    }

    result.max_error_ratio = std::max<double>(result.max_error_ratio, from_bits(st.max_ratio_bits));
    result.max_abs_error = std::max<double>(result.max_abs_error, from_bits(st.max_abs_err_bits));
    if (wide) {
      // No worse than the FP32 SIMT reference on the same data, but for the split's own error
      // (k_fp64_reference_slack_units of 2^-24 of the scale |alpha||A||B| + |beta||C0|): tolerance
      // ratios are those errors / (2 (K + 4)).
      const double simt = ws.simt_ratio(int(i));
      result.simt_error_ratio = std::max(result.simt_error_ratio.value_or(0.0), simt);
      const double mine = from_bits(st.max_ratio_bits);
      if (st.bad_elements == 0 && mine > simt + k_fp64_reference_slack_units / fp32_error_units(1.0, p.k)) {
        result.reason = fmt::format(
            "less accurate than FP32 SIMT ({}): largest error {:.3g} units of 2^-24 against FP64, the FP32 SIMT "
            "reference's {:.3g}",
            args, fp32_error_units(mine, p.k), fp32_error_units(simt, p.k));
        return result;
      }
    }
    if (st.bad_elements == 0 && st.guard_violations == 0 && st.pad_violations == 0) continue;

    if (st.bad_elements > 0) {
      const auto first = static_cast<int64_t>(st.first_bad);
      int64_t b = 0, r = 0;
      locate(layout, first, b, r);
      const std::string name = element_name(layout, b, r / layout.ldc, r % layout.ldc);
      const std::string got = read_element(ws.c_work_allocation(), first, dtype);
      const std::string want =
          read_element(ws.reference(int(i)), b * ws.ref_stride() + r, wide ? DType::f64 : dtype);
      if (type_info(dtype).exact)
        result.reason = fmt::format("{} of {} elements wrong ({}); first {} is {}, expected {}{}", st.bad_elements,
                                    p.m * p.n * p.batch, args, name, got, want,
                                    got == std::to_string(static_cast<int32_t>(k_pad_bits)) ? " (never written)" : "");
      else
        result.reason = fmt::format("{} of {} elements wrong ({}); first {} = {}, expected {}; max "
                                    "error/tolerance {:.3g}",
                                    st.bad_elements, p.m * p.n * p.batch, args, name, got, want,
                                    from_bits(st.max_ratio_bits));
    }
    if (st.guard_violations > 0 || st.pad_violations > 0) {
      const std::string_view unit = type_info(dtype).elements;
      std::string what;
      if (st.guard_violations > 0) what = fmt::format("{} guard {}", st.guard_violations, unit);
      if (st.pad_violations > 0)
        what += fmt::format("{}{} padding-column {}", what.empty() ? "" : " and ", st.pad_violations, unit);
      result.reason += fmt::format("{}writes outside C's M x N block{}: {} changed ({}); first at {}",
                                   result.reason.empty() ? "" : "; ", p.batched() ? "s" : "", what, args,
                                   describe_c_offset(layout, static_cast<int64_t>(st.first_guard)));
    }
    return result;
  }
  result.passed = true;
  return result;
}

}  // namespace cmt
