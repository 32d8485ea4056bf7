// One GEMM implementation that a report measures beside others (`precision`): a name for its row and
// a launch on any stream. cuBLAS in a math mode and a kernel loaded from its cubin are here; the
// exported header, or kernels built elsewhere, plug in as further GemmRunners.
#pragma once

#include <cuda_runtime_api.h>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "cuda/cublas_ref.hpp"
#include "cuda/kernel_module.hpp"

namespace cmt {

class GemmRunner {
 public:
  virtual ~GemmRunner() = default;
  /// The row's name: "cuBLAS SGEMM", "tf32x3_mma[BM=128,BN=128,...]".
  virtual const std::string& name() const = 0;
  /// Enqueues row-major C = alpha * op(A) * op(B) + beta * C on `stream`, in the layout and batch the
  /// arguments give (FP32 storage: args.dtype is f32); returns the launch status, never throws.
  virtual cudaError_t run(const GemmArgs& args, cudaStream_t stream) = 0;
};

/// cuBLAS SGEMM (cublasSgemmStridedBatched for a batch) in a math mode, on a handle of its own.
class CublasRunner final : public GemmRunner {
 public:
  /// Creates the handle (InfraError when cuBLAS fails), bound to `stream` until a run names another.
  CublasRunner(std::string name, CublasMath math, cudaStream_t stream);
  const std::string& name() const override { return m_name; }
  /// cudaErrorUnknown when cuBLAS refuses the call.
  cudaError_t run(const GemmArgs& args, cudaStream_t stream) override;

 private:
  std::string m_name;
  CublasHandle m_handle;
  cudaStream_t m_stream;
};

/// A compiled kernel of a template (a cubin, e.g. a database winner's), launched with its launch shape
/// as the tuner measured it.
class KernelRunner final : public GemmRunner {
 public:
  /// Loads the cubin and finds the kernel (InfraError when either fails), and raises its dynamic
  /// shared-memory limit where the kernel needs more than the default 48 KiB per block (a refusal is
  /// what every run then returns).
  KernelRunner(std::string name, const std::vector<char>& cubin, const std::string& lowered_name,
               const LaunchShape& shape);
  const std::string& name() const override { return m_name; }
  cudaError_t run(const GemmArgs& args, cudaStream_t stream) override;

 private:
  std::string m_name;
  LoadedKernel m_kernel;
  LaunchShape m_shape;
  cudaError_t m_setup = cudaSuccess;
};

/// The runner as a launcher on one stream (what the validator and the timer take). The runner must
/// outlive it.
GemmLauncher launcher_on(GemmRunner& runner, cudaStream_t stream);

}  // namespace cmt
