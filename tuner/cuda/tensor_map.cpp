#include "cuda/tensor_map.hpp"

#include <algorithm>
#include <cstdint>

namespace cmt {

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/// The driver's encoder, looked up once (nullptr where the driver lacks it).
EncodeTiled encoder() {
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return EncodeTiled{nullptr};
    }
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

/// One operand stored as `rows` x `cols` (row-major, ld elements apart), `batch` matrices `stride`
/// elements apart, in boxes of 32 columns by box_rows rows.
cudaError_t encode(CUtensorMap& map, const void* base, long long rows, long long cols, long long ld, long long stride,
                   long long batch, int box_rows) {
  const EncodeTiled fn = encoder();
  if (!fn) return cudaErrorInvalidValue;
  const long long matrices = stride != 0 ? batch : 1;
  // Extents of 0 (K = 0: the kernel reads nothing) are encoded as 1.
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(std::max(cols, 1LL)), static_cast<cuuint64_t>(std::max(rows, 1LL)),
                              static_cast<cuuint64_t>(std::max(matrices, 1LL))};
  const long long matrix_bytes = stride != 0 ? stride * 4 : std::max(rows, 1LL) * ld * 4;
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * 4, static_cast<cuuint64_t>((matrix_bytes + 15) / 16 * 16)};
  const cuuint32_t box[3] = {32, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  if ((reinterpret_cast<uintptr_t>(base) & 15) != 0 || (ld * 4) % 16 != 0 || (stride * 4) % 16 != 0)
    return cudaErrorInvalidValue;
  const CUresult r = fn(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(base), dims, strides, box,
                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace

cudaError_t encode_gemm_tensor_maps(const LaunchShape& shape, const GemmArgs& args, GemmTensorMaps& out) {
  if (dtype_bytes(args.dtype) != 4 || args.dtype == DType::i32) return cudaErrorInvalidValue;
  // With nothing to read (K = 0: the kernel only scales C; M or N = 0: nothing is launched) the
  // maps are never used, and the leading dimensions may be anything BLAS allows.
  if (args.k == 0 || args.m == 0 || args.n == 0) {
    out = GemmTensorMaps{};
    return cudaSuccess;
  }
  // Stored shapes: A is M x K (K x M transposed), B is K x N (N x K transposed). K-major operands
  // take boxes of their tile's rows, the others 32 x 32 boxes.
  const cudaError_t a = args.trans_a
                            ? encode(out.a, args.a, args.k, args.m, args.lda, args.stride_a, args.batch, 32)
                            : encode(out.a, args.a, args.m, args.k, args.lda, args.stride_a, args.batch,
                                     static_cast<int>(shape.tile_m));
  if (a != cudaSuccess) return a;
  return args.trans_b ? encode(out.b, args.b, args.n, args.k, args.ldb, args.stride_b, args.batch,
                               static_cast<int>(shape.tile_n))
                      : encode(out.b, args.b, args.k, args.n, args.ldb, args.stride_b, args.batch, 32);
}

cudaError_t TensorMapCache::get(const LaunchShape& shape, const GemmArgs& args, GemmTensorMaps& out) {
  const std::array<long long, 16> key{reinterpret_cast<long long>(args.a), reinterpret_cast<long long>(args.b),
                                      args.m, args.n, args.k, args.lda, args.ldb, args.stride_a, args.stride_b,
                                      args.batch, args.trans_a, args.trans_b, shape.tile_m, shape.tile_n,
                                      static_cast<long long>(args.dtype), 0};
  std::lock_guard<std::mutex> lock(m_mutex);
  for (const Entry& e : m_entries)
    if (e.used && e.key == key) {
      out = e.maps;
      return cudaSuccess;
    }
  const cudaError_t status = encode_gemm_tensor_maps(shape, args, out);
  if (status != cudaSuccess) return status;
  Entry& e = m_entries[m_next];
  m_next = (m_next + 1) % m_entries.size();
  e = Entry{key, out, true};
  return cudaSuccess;
}

}  // namespace cmt
