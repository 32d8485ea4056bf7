#include "cuda/kernel_module.hpp"

#include <algorithm>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "cuda/tensor_map.hpp"

namespace cmt {

dim3 gemm_grid(const LaunchShape& shape, int m, int n, int batch) {
  const auto blocks = [](int64_t extent, int64_t tile) { return static_cast<unsigned>((extent + tile - 1) / tile); };
  const int64_t per_block = std::max<int64_t>(1, shape.problems_per_block);
  return dim3(blocks(n, shape.tile_n), blocks(m, shape.tile_m),
              static_cast<unsigned>(shape.grid_z * ((batch + per_block - 1) / per_block)));
}

GemmScalar GemmScalar::of(DType dtype, double value) {
  return visit_storage_type(dtype, [value](auto zero) { return GemmScalar(static_cast<decltype(zero)>(value)); });
}

double GemmScalar::value() const {
  return visit_storage_type(m_dtype, [this](auto zero) { return static_cast<double>(as<decltype(zero)>()); });
}

GemmArgs GemmArgs::batch_slice(int first, int count) const {
  GemmArgs out = *this;
  out.batch = count;
  // Byte offsets: the pointers are untyped, the strides count elements of dtype.
  const long long bytes = dtype_bytes(dtype);
  out.a = static_cast<const char*>(a) + first * stride_a * bytes;
  out.b = static_cast<const char*>(b) + first * stride_b * bytes;
  out.c = static_cast<char*>(c) + first * stride_c * bytes;
  return out;
}

LoadedKernel::LoadedKernel(const std::vector<char>& cubin, const std::string& lowered_name)
    : m_maps(std::make_unique<TensorMapCache>()) {
  CMT_CUDA_CHECK(cudaLibraryLoadData(&m_library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  try {
    CMT_CUDA_CHECK(cudaLibraryGetKernel(&m_kernel, m_library, lowered_name.c_str()));
    cudaFuncAttributes attr{};
    CMT_CUDA_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(m_kernel)));
    m_attributes.registers = attr.numRegs;
    m_attributes.static_smem = static_cast<int>(attr.sharedSizeBytes);
    m_attributes.local_bytes = static_cast<int>(attr.localSizeBytes);
    m_attributes.max_threads_per_block = attr.maxThreadsPerBlock;
    // Clusters of more than 8 blocks (clusterk's CLUSTER_K up to 16) launch only with this set. It
    // is refused on GPUs without clusters; the launch then fails and is recorded as the reason.
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(m_kernel), cudaFuncAttributeNonPortableClusterSizeAllowed,
                             1) != cudaSuccess)
      cudaGetLastError();
  } catch (...) {
    cudaLibraryUnload(m_library);
    throw;
  }
}

LoadedKernel::~LoadedKernel() {
  if (m_library) cudaLibraryUnload(m_library);
}

cudaError_t LoadedKernel::set_dynamic_smem(int bytes) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(m_kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                              bytes);
}

int LoadedKernel::max_active_blocks(int threads, int dynamic_smem, int grid_z) const {
  const void* kernel = reinterpret_cast<const void*>(m_kernel);
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, static_cast<size_t>(dynamic_smem)) !=
      cudaSuccess) {
    cudaGetLastError();
    blocks = 0;
  }
  if (grid_z <= 1) return blocks;
  // The cluster size is the kernel's own (__cluster_dims__), so the config leaves it unset.
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1, 1, static_cast<unsigned>(grid_z));
  config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  config.dynamicSmemBytes = static_cast<size_t>(dynamic_smem);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters < 1 ? 0 : (blocks > 0 ? blocks : 1);
}

cudaError_t LoadedKernel::launch(const LaunchShape& shape, const GemmArgs& args, cudaStream_t stream) const {
  if (!args.typed_consistently()) return cudaErrorInvalidValue;
  // Grid z holds at most 65535 blocks: a larger batch goes in several launches, each passing its
  // own problem count.
  cudaError_t status = cudaSuccess;
  for (const BatchLaunch& l : batch_launches(shape, args.batch)) {
    GemmArgs a = args.batch_slice(static_cast<int>(l.first), static_cast<int>(l.count));
    // Kernels read the parameters they have: 11 without batching, 14 with the strides, 15 with
    // the problem count as well (problems_per_block). alpha and beta are passed in the element
    // type (float, double or int32_t), as the kernel declares them.
    // A TMA kernel takes the two tensor maps of this launch's matrices after them.
    GemmTensorMaps maps;
    if (shape.tensor_maps != 0) {
      status = m_maps->get(shape, a, maps);
      if (status != cudaSuccess) break;
    }
    void* params[] = {&a.m,        &a.n,        &a.k,        a.alpha.arg(), &a.a,   &a.lda,  &a.b,  &a.ldb, a.beta.arg(),
                      &a.c,        &a.ldc,      &a.stride_a, &a.stride_b,   &a.stride_c, &a.batch, &maps.a, &maps.b};
    const dim3 block(static_cast<unsigned>(shape.threads), 1, 1);
    const dim3 grid = gemm_grid(shape, a.m, a.n, a.batch);
    status = cudaLaunchKernel(reinterpret_cast<const void*>(m_kernel), grid, block, params,
                              static_cast<size_t>(shape.dynamic_smem), stream);
    if (status != cudaSuccess) break;
  }
  // A launch that fails is reported through the return value (data about the candidate); clear the
  // runtime's last error so the next, unrelated CUDA check does not pick it up.
  if (status != cudaSuccess) cudaGetLastError();
  return status;
}

}  // namespace cmt
