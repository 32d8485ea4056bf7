// A compiled candidate loaded into the current context (cudaLibrary), ready to launch.
#pragma once

#include <cuda_runtime_api.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
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

/// alpha or beta of a GEMM, held in the element type: a kernel receives it as float, double or
/// int32_t. Built implicitly from each of the three, so FP32 code reads as it always did
/// (args.alpha = 0.75f); an integer literal makes an i32 scalar.
class GemmScalar {
 public:
  GemmScalar() { m_value.f32 = 0.0f; }
  GemmScalar(float v) : m_dtype(DType::f32) { m_value.f32 = v; }
  GemmScalar(double v) : m_dtype(DType::f64) { m_value.f64 = v; }
  GemmScalar(int32_t v) : m_dtype(DType::i32) { m_value.i32 = v; }
  /// `value` in `dtype` (an i32 takes the value truncated toward zero; callers pass whole numbers).
  static GemmScalar of(DType dtype, double value);

  DType dtype() const { return m_dtype; }
  /// The value in its type; each may only be asked of a scalar of that type.
  float f32() const { return m_value.f32; }
  double f64() const { return m_value.f64; }
  int32_t i32() const { return m_value.i32; }
  /// The value as T, one of float, double and int32_t: f32(), f64() or i32().
  template <class T>
  T as() const {
    if constexpr (std::is_same_v<T, double>)
      return m_value.f64;
    else if constexpr (std::is_same_v<T, int32_t>)
      return m_value.i32;
    else
      return m_value.f32;
  }
  /// The value as a double (exact for all three types), e.g. for messages.
  double value() const;
  bool is_zero() const { return value() == 0.0; }
  /// The value in its own type, for a kernel's parameter array (cudaLaunchKernel reads as many
  /// bytes as the kernel's parameter has).
  void* arg() { return &m_value; }

 private:
  union {
    float f32;
    double f64;
    int32_t i32;
  } m_value;
  DType m_dtype = DType::f32;
};

/// Arguments of every GEMM template, in kernel-signature order (a batched family's kernel takes the
/// three strides after ldc, one with problems_per_block the batch's problem count after them; the
/// others stop at ldc), then what the kernels know at compile time (the layout, the element type)
/// or from the grid (the batch, of kernels without a problem count). A, B and C hold elements of
/// `dtype`; alpha and beta are of the same type; leading dimensions and strides count elements.
struct GemmArgs {
  int m, n, k;
  GemmScalar alpha;
  const void* a;
  int lda;
  const void* b;
  int ldb;
  GemmScalar beta;
  void* c;
  int ldc;
  long long stride_a = 0, stride_b = 0, stride_c = 0;  // elements between matrices of the batch
  int batch = 1;
  bool trans_a = false, trans_b = false;               // op(A), op(B) over row-major storage
  DType dtype = DType::f32;                            // of A, B, C, alpha and beta

  /// Whether alpha and beta are of `dtype` (a kernel would read the wrong bytes otherwise).
  bool typed_consistently() const { return alpha.dtype() == dtype && beta.dtype() == dtype; }
  /// Matrices [first, first + count) of the batch: A, B and C moved by `first` strides.
  GemmArgs batch_slice(int first, int count) const;
  /// The pointers as `T` (T must be the element type of `dtype`).
  template <class T>
  const T* a_as() const { return static_cast<const T*>(a); }
  template <class T>
  const T* b_as() const { return static_cast<const T*>(b); }
  template <class T>
  T* c_as() const { return static_cast<T*>(c); }
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
  /// The tensor maps of a TMA kernel's recent calls (LaunchShape::tensor_maps).
  std::unique_ptr<class TensorMapCache> m_maps;
};

/// Grid of the template convention: (ceil(N/tile_n), ceil(M/tile_m), grid_z * ceil(batch /
/// problems_per_block)), for a batch whose grid fits (LoadedKernel::launch splits larger ones).
dim3 gemm_grid(const LaunchShape& shape, int m, int n, int batch = 1);

}  // namespace cmt
