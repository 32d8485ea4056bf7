// The measurement protocol: the layouts candidates are validated and timed in, the alpha/beta cases
// of validation, and the guard values around C. The GPU side (measure/) follows it; the pipeline
// records it (trial keys, baselines), so it lives here, free of CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.hpp"

namespace cmt {

/// Leading dimensions and batch strides (elements; 0 for an unbatched problem or a broadcast
/// operand) of one row-major memory layout.
struct Layout {
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

/// Rows and columns of a matrix as stored (row-major).
struct Extent {
  int64_t rows = 0, cols = 0;
};
/// A as stored: M x K, or K x M when transposed.
inline Extent stored_a(const Problem& p) { return p.trans_a ? Extent{p.k, p.m} : Extent{p.m, p.k}; }
/// B as stored: K x N, or N x K when transposed.
inline Extent stored_b(const Problem& p) { return p.trans_b ? Extent{p.n, p.k} : Extent{p.k, p.n}; }
inline Extent stored_c(const Problem& p) { return Extent{p.m, p.n}; }

/// Elements a batch of `batch` matrices of `rows` rows (leading dimension ld) spans when each
/// starts `stride` after the previous one (0: one matrix, shared).
inline int64_t batch_span(int64_t batch, int64_t stride, int64_t rows, int64_t ld) {
  return (stride == 0 ? 0 : (batch - 1) * stride) + rows * ld;
}

/// Timing uses the tight layout: the stored matrices' widths rounded up to a multiple of ld_align
/// (1: packed), and the problem's strides (the packed ones become rows * ld).
Layout timing_layout(const Problem& problem, int64_t ld_align = 1);
/// Validation pads every leading dimension by 8 more (the extra columns hold NaN), which keeps every
/// ld_multiple up to 8 that the timing layout meets. A batch's matrices lie one after another
/// (a stride of 0 stays 0), each starting 256-byte aligned; consecutive matrices of C have a guard
/// region of c_guard_after(ldc) floats between them.
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
/// come from cudaMalloc (256-byte aligned), so only the leading-dimension multiple and the batch
/// strides (each matrix must keep the alignment) can fail.
std::optional<std::string> unmet_requirements(const Requirements& requirements, const Layout& layout);

/// The watchdog on one launch when the user gives no --kernel-timeout: 200x cuBLAS on the same
/// problem, and at least 2 s. No kernel worth keeping is 200x slower than cuBLAS; the floor covers
/// small problems, where launch and clock ramp-up dominate.
inline double default_kernel_timeout_ms(double cublas_ms) { return cublas_ms * 200.0 > 2000.0 ? cublas_ms * 200.0 : 2000.0; }

/// Names this protocol in every trial key: a change to it must change the tag.
constexpr const char* k_trial_protocol = "cm-tune-trial-v1;tight-ld;alpha=1,beta=0;validate=0.75/-1.25,1.25/0";

}  // namespace cmt
