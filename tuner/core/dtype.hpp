// What an element type is, in one table: every stage that branches on a DType reads its row here,
// so a new type or precision class is a row, not an edit in every module. (The CUTLASS profiler
// keeps its NumericTypeID as data the same way.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_info.hpp"
#include "core/types.hpp"

namespace cmt {

/// Which of the device's peak rates a type's GEMM is held against.
enum class PeakKind : uint8_t {
  fp32,   // FP32 on the CUDA cores
  fp64,   // FP64 on the tensor cores where the GPU has them (DMMA), else on the CUDA cores
  int32,  // INT32 multiply-add
  tf32x3, // TF32 on the tensor cores, three products per multiply-add (a third of the TF32 peak)
};

/// What a type's candidates are validated against.
enum class Reference : uint8_t {
  same_type,  // the type's own cuBLAS GEMM (the floats), within the K-scaled tolerance
  exact,      // cm-tune's own exact kernel, bit for bit (i32)
  fp64,       // an FP64 GEMM of the same data, within the K-scaled tolerance and no worse than the
              // storage type's cuBLAS GEMM (FP32 SIMT) is on the same data
};

/// One element type, or precision class of one.
struct TypeInfo {
  DType dtype;
  std::string_view name;          // "f32": sizes files, --dtype, problem keys
  /// The type its elements are stored as, in memory and in every buffer: itself, or f32 for
  /// tf32x3, which differs from f32 only in how its kernels multiply.
  DType storage;
  int bytes;                      // of one element
  std::string_view c_type;        // "float": the header's and the kernels' C type
  char routine;                   // 's': the header's sgemm, dgemm, igemm and cuBLAS's S, D
  std::string_view elements;      // "floats": in messages about buffers of them
  std::string_view rate_unit;     // "TF/s", or "TOP/s" for an integer type
  /// cuBLAS has a GEMM of the storage type: the baseline every ratio is measured against (for
  /// tf32x3, SGEMM with TF32 off). Without one (i32) kernels are timed alone.
  bool cublas_baseline;
  /// Results are exact (integer arithmetic, wrapping): validated bit for bit, with no error bound.
  bool exact;
  PeakKind peak;
  Reference reference;
  /// Runs only where the user opts in (the header's sgemm takes it when asked; a tune names it
  /// with --dtype): a precision class other than IEEE arithmetic in the storage type.
  bool opt_in;
};

/// The rows, in DType order.
inline constexpr TypeInfo k_types[] = {
    {DType::f32, "f32", DType::f32, 4, "float", 's', "floats", "TF/s", true, false, PeakKind::fp32,
     Reference::same_type, false},
    {DType::f64, "f64", DType::f64, 8, "double", 'd', "doubles", "TF/s", true, false, PeakKind::fp64,
     Reference::same_type, false},
    {DType::i32, "i32", DType::i32, 4, "int", 'i', "ints", "TOP/s", false, true, PeakKind::int32, Reference::exact,
     false},
    {DType::tf32x3, "tf32x3", DType::f32, 4, "float", 's', "floats", "TF/s", true, false, PeakKind::tf32x3,
     Reference::fp64, true},
};

/// The type a class stores its elements as (TypeInfo::storage).
DType storage_of(DType dtype);

/// Calls `f` with a value of the C++ type that `dtype`'s elements are stored as (float, double or
/// int32_t) and returns what it returns. It is the one switch from a DType to a C++ type, so a new
/// precision class stored as an existing type (a row of k_types) needs no case label elsewhere.
template <class F>
decltype(auto) visit_storage_type(DType dtype, F&& f) {
  switch (storage_of(dtype)) {
    case DType::f64: return f(double{});
    case DType::i32: return f(int32_t{});
    case DType::f32:
    case DType::tf32x3: break;  // storage_of never gives a class stored as another type
  }
  return f(float{});
}

/// The rows' names joined for a message, "f32, f64, i32 or tf32x3" (`last` joins the last two; ","
/// joins them all alike).
std::string type_names(std::string_view last = "or");
/// The types `all` names: every row but the opt-in classes, which are named one by one.
std::vector<DType> all_types();

/// The row of a type.
const TypeInfo& type_info(DType dtype);

/// Bytes a GEMM moves at the least: A and B read once (a broadcast operand, stride 0, once for the
/// whole batch) and C written once, as the timing runs it (beta = 0), in elements of the type's size.
/// Its flops over this are the problem's arithmetic intensity (a roofline's x).
int64_t problem_bytes(const Problem& p);

/// The peak rate (T/s) a GEMM of the type is held against on the device (TypeInfo::peak); 0 when
/// the device's clocks are unknown.
double type_peak(const DeviceInfo& device, DType dtype);

/// That peak with what reaches it, for a report's roofline.
struct Peak {
  std::string name;            // "FP32, CUDA cores", "FP64, tensor cores (DMMA)", "TF32 tensor cores / 3"
  double rate = 0;             // T/s, as type_peak gives it
  bool tensor_cores = false;   // reached on the tensor cores, not the CUDA cores (SIMT)
};
Peak type_peak_of(const DeviceInfo& device, DType dtype);

}  // namespace cmt
