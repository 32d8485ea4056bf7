// TMA tensor maps of a GEMM's operands, for kernels that declare [launch] tensor_maps
// (LaunchShape::tensor_maps): encoded with the driver's cuTensorMapEncodeTiled, reached through the
// runtime (cudaGetDriverEntryPointByVersion), so nothing links libcuda.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only: no driver symbol is linked
#include <cuda_runtime_api.h>

#include <array>
#include <mutex>

#include "cuda/kernel_module.hpp"

namespace cmt {

/// The two maps a TMA kernel takes after its fifteen standard arguments.
struct GemmTensorMaps {
  CUtensorMap a;
  CUtensorMap b;
};

/// Encodes the maps of `args` (one launch's matrices; a batch as the third dimension, one matrix
/// for a stride of 0) for a kernel of `shape`: a K-major operand (A in nn and nt, B in nt and tt)
/// in boxes of 32 k by tile_m or tile_n rows, the other in 32 x 32 boxes, FP32 in the 128-byte
/// swizzle, zero-filled outside the matrix. cudaErrorInvalidValue where TMA cannot take the
/// operands (a base not 16-byte aligned, a leading dimension or stride not a multiple of 16 bytes,
/// a type other than FP32 storage), or where the driver has no cuTensorMapEncodeTiled; what the
/// driver's encoder refuses comes back as cudaErrorInvalidValue as well.
cudaError_t encode_gemm_tensor_maps(const LaunchShape& shape, const GemmArgs& args, GemmTensorMaps& out);

/// The last few encodings, keyed by everything a map holds (pointers, extents, strides, boxes), so
/// that a timing loop or a program calling with the same matrices encodes once.
class TensorMapCache {
 public:
  cudaError_t get(const LaunchShape& shape, const GemmArgs& args, GemmTensorMaps& out);

 private:
  struct Entry {
    std::array<long long, 16> key{};
    GemmTensorMaps maps{};
    bool used = false;
  };
  std::mutex m_mutex;
  std::array<Entry, 8> m_entries{};
  size_t m_next = 0;
};

}  // namespace cmt
