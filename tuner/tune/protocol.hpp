// The measurement protocol: the layouts candidates are validated and timed in, the alpha/beta cases
// of validation, and the guard values around C. The GPU side (measure/) follows it; the pipeline
// records it (trial keys, baselines), so it lives here, free of CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.hpp"

namespace cmt {

/// Leading dimensions of one row-major layout.
struct Layout {
  int64_t lda = 0, ldb = 0, ldc = 0;
};

/// Timing uses the tight layout: the matrix widths rounded up to a multiple of ld_align (1: packed).
Layout timing_layout(const Problem& problem, int64_t ld_align = 1);
/// Validation pads every leading dimension by 8 more (the extra columns hold NaN), which keeps every
/// ld_multiple up to 8 that the timing layout meets.
Layout validation_layout(const Problem& problem, int64_t ld_align = 1);

/// alpha/beta pairs every candidate is validated with: one with beta != 0, one with beta == 0 and
/// NaN in C. Timing uses alpha = 1, beta = 0.
struct ValidationCase {
  float alpha;
  float beta;
};
constexpr ValidationCase k_validation_cases[] = {{0.75f, -1.25f}, {1.25f, 0.0f}};
constexpr float k_timing_alpha = 1.0f;
constexpr float k_timing_beta = 0.0f;

/// Bit patterns written around and between rows of C.
constexpr uint32_t k_pad_bits = 0x7fc00000u;    // quiet NaN: padding columns of every matrix
constexpr uint32_t k_guard_bits = 0x7fa5a5a5u;  // before and after C's allocation
constexpr int64_t k_guard_floats = 1024;         // 4 KiB before C (keeps it 256-byte aligned)
/// Guard floats after C: a whole row more than before it, so a write to row M is caught.
inline int64_t c_guard_after(int64_t ldc) { return k_guard_floats + ldc; }

/// Why a kernel's requirements rule out a layout, or nullopt when they are met. Workspace buffers
/// come from cudaMalloc (256-byte aligned), so only the leading-dimension multiple can fail.
std::optional<std::string> unmet_requirements(const Requirements& requirements, const Layout& layout);

/// The watchdog on one launch when the user gives no --kernel-timeout: 200x cuBLAS on the same
/// problem, and at least 2 s. No kernel worth keeping is 200x slower than cuBLAS; the floor covers
/// small problems, where launch and clock ramp-up dominate.
inline double default_kernel_timeout_ms(double cublas_ms) { return cublas_ms * 200.0 > 2000.0 ? cublas_ms * 200.0 : 2000.0; }

/// Names this protocol in every trial key: a change to it must change the tag.
constexpr const char* k_trial_protocol = "cm-tune-trial-v1;tight-ld;alpha=1,beta=0;validate=0.75/-1.25,1.25/0";

}  // namespace cmt
