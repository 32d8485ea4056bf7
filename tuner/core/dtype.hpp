// What an element type is, in one table: every stage that branches on a DType reads its row here,
// so a new type or precision class is a row, not an edit in every module. (The CUTLASS profiler
// keeps its NumericTypeID as data the same way.)
#pragma once

#include <string_view>

#include "core/device_info.hpp"
#include "core/types.hpp"

namespace cmt {

/// Which of the device's peak rates a type's GEMM is held against.
enum class PeakKind : uint8_t {
  fp32,   // FP32 on the CUDA cores
  fp64,   // FP64 on the tensor cores where the GPU has them (DMMA), else on the CUDA cores
  int32,  // INT32 multiply-add
};

/// One element type.
struct TypeInfo {
  DType dtype;
  std::string_view name;          // "f32": sizes files, --dtype, problem keys
  int bytes;                      // of one element
  std::string_view c_type;        // "float": the header's and the kernels' C type
  char routine;                   // 's': the header's sgemm, dgemm, igemm and cuBLAS's S, D
  std::string_view elements;      // "floats": in messages about buffers of them
  std::string_view rate_unit;     // "TF/s", or "TOP/s" for an integer type
  /// cuBLAS has a GEMM of the type: the validation reference and the baseline every ratio is
  /// measured against. Without one (i32) kernels are validated against cm-tune's own reference
  /// and timed alone.
  bool cublas_baseline;
  /// Results are exact (integer arithmetic, wrapping): validated bit for bit, with no error bound.
  bool exact;
  PeakKind peak;
};

/// The rows, in DType order.
inline constexpr TypeInfo k_types[] = {
    {DType::f32, "f32", 4, "float", 's', "floats", "TF/s", true, false, PeakKind::fp32},
    {DType::f64, "f64", 8, "double", 'd', "doubles", "TF/s", true, false, PeakKind::fp64},
    {DType::i32, "i32", 4, "int", 'i', "ints", "TOP/s", false, true, PeakKind::int32},
};

/// The row of a type.
const TypeInfo& type_info(DType dtype);

/// The peak rate (T/s) a GEMM of the type is held against on the device (TypeInfo::peak); 0 when
/// the device's clocks are unknown.
double type_peak(const DeviceInfo& device, DType dtype);

}  // namespace cmt
