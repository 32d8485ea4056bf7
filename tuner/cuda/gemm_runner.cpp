#include "cuda/gemm_runner.hpp"

#include <utility>

#include "core/device_info.hpp"

namespace cmt {

CublasRunner::CublasRunner(std::string name, CublasMath math, cudaStream_t stream)
    : m_name(std::move(name)), m_handle(stream, math), m_stream(stream) {}

cudaError_t CublasRunner::run(const GemmArgs& args, cudaStream_t stream) {
  if (stream != m_stream) {
    if (cublasSetStream(m_handle.get(), stream) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
    m_stream = stream;
  }
  return m_handle.gemm_status(args) == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

KernelRunner::KernelRunner(std::string name, const std::vector<char>& cubin, const std::string& lowered_name,
                           const LaunchShape& shape)
    : m_name(std::move(name)), m_kernel(cubin, lowered_name), m_shape(shape) {
  // Static and dynamic shared memory past the default 48 KiB per block need the kernel's opt-in,
  // as GpuMeasurer gives it before measuring.
  if (shape.dynamic_smem > 0 && shape.dynamic_smem + m_kernel.attributes().static_smem > k_default_smem_per_block) {
    m_setup = m_kernel.set_dynamic_smem(static_cast<int>(shape.dynamic_smem));
    if (m_setup != cudaSuccess) cudaGetLastError();
  }
}

cudaError_t KernelRunner::run(const GemmArgs& args, cudaStream_t stream) {
  if (m_setup != cudaSuccess) return m_setup;
  return m_kernel.launch(m_shape, args, stream);
}

GemmLauncher launcher_on(GemmRunner& runner, cudaStream_t stream) {
  return [&runner, stream](const GemmArgs& args) { return runner.run(args, stream); };
}

}  // namespace cmt
