// A compiled candidate loaded into the current context (cudaLibrary), ready to launch.
#pragma once

#include <cuda_runtime_api.h>
#include <functional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// Resource usage read from the loaded function.
struct KernelAttributes {
  int registers = 0;
  int static_smem = 0;
  int local_bytes = 0;
  int max_threads_per_block = 0;
};

/// Arguments of every SGEMM template, in kernel-signature order (a batched family's kernel takes the
/// three strides after ldc, one with problems_per_block the batch's problem count after them; the
/// others stop at ldc), then what the kernels know at compile time (the layout) or from the grid
/// (the batch, of kernels without a problem count).
struct GemmArgs {
  int m, n, k;
  float alpha;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float beta;
  float* c;
  int ldc;
  long long stride_a = 0, stride_b = 0, stride_c = 0;  // elements between matrices of the batch
  int batch = 1;
  bool trans_a = false, trans_b = false;               // op(A), op(B) over row-major storage
};

/// Enqueues one GEMM implementation (a kernel, cuBLAS, an exported header) on the given arguments;
/// returns the launch status.
using GemmLauncher = std::function<cudaError_t(const GemmArgs&)>;

class LoadedKernel {
 public:
  /// Loads the cubin and looks the lowered name up; throws InfraError on failure.
  LoadedKernel(const std::vector<char>& cubin, const std::string& lowered_name);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  const KernelAttributes& attributes() const { return m_attributes; }
  /// Raises the dynamic shared memory limit (needed above 48 KiB); returns the CUDA status.
  cudaError_t set_dynamic_smem(int bytes);
  /// Blocks of `threads` threads with `dynamic_smem` bytes that fit on one SM at once (0: cannot launch).
  /// For a kernel with a compile-time cluster (grid_z > 1), 0 also when no whole cluster fits the GPU.
  int max_active_blocks(int threads, int dynamic_smem, int grid_z) const;
  /// Enqueues one launch with the template grid convention; returns the launch status.
  cudaError_t launch(const LaunchShape& shape, const GemmArgs& args, cudaStream_t stream) const;

 private:
  cudaLibrary_t m_library = nullptr;
  cudaKernel_t m_kernel = nullptr;
  KernelAttributes m_attributes;
};

/// Grid of the template convention: (ceil(N/tile_n), ceil(M/tile_m), grid_z * ceil(batch /
/// problems_per_block)), for a batch whose grid fits (LoadedKernel::launch splits larger ones).
dim3 gemm_grid(const LaunchShape& shape, int m, int n, int batch = 1);

}  // namespace cmt
