// A naive GEMM over GemmArgs (every layout, strided batches, every element type: float, double, and
// int32 with wrapping products and sums), compiled by nvcc into the GPU tests, with deliberate
// defects: an implementation independent of cuBLAS and of the INT32 reference to check the
// validator against, and launchers that validation must reject.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/kernel_module.hpp"

namespace cmt::test {

enum class GemmDefect {
  none,                   // correct: one thread per element of C, k in order
  wrong_last_element,     // C[batch - 1][M/2][N/2] is 1 too large
  write_gap,              // also writes the first element past C[0]'s last row (a guard: the gap, or after C)
  skip_first_when_beta0,  // leaves C[0][0][0] unwritten when beta == 0 (the poison it held stays)
  broadcast_as_packed,    // an A or B stride of 0 taken as the packed stride (reads matrices that are not there)
  saturate_i32,           // i32: accumulates in 64 bits and clamps to [INT32_MIN, INT32_MAX] instead of wrapping
  fp32_accumulate,        // f64: multiplies and adds in float (FP32 precision passed off as FP64)
  tf32_one_pass,          // f32: operands rounded to TF32 (cvt.rna) and multiplied once, as one TF32
                          // tensor-core pass does (TF32 passed off as 3xTF32)
};

const char* to_string(GemmDefect defect);

/// Enqueues the naive kernel for args.dtype on the stream; returns the launch status.
cudaError_t launch_naive_gemm(const GemmArgs& args, GemmDefect defect, cudaStream_t stream);

/// A GemmLauncher of the naive kernel with a defect.
inline GemmLauncher naive_gemm_launcher(GemmDefect defect, cudaStream_t stream) {
  return [defect, stream](const GemmArgs& args) { return launch_naive_gemm(args, defect, stream); };
}

}  // namespace cmt::test
