// The types of an exported header's dispatch tables. Pasted by `cm-tune export` inside the header's
// namespace NS, before the rules and the generated tables; tests/cuda/test_header_runtime.cu
// compiles it as code.

/// Whether an operand is used as stored (N) or transposed (T), as cuBLAS's op flags say.
enum class Op { N = 0, T = 1 };

/// A tuned problem: C is M x N, the product's depth is K; layout 2 * (op(A) == T) + (op(B) == T)
/// (nn 0, nt 1, tn 2, tt 3); batch 1 for a plain GEMM; broadcast 1 when A's batch stride is 0, 2 when
/// B's is, 3 for both (0 unbatched); dtype the element type: 0 float (sgemm), 1 double (dgemm), 2 int
/// (igemm), or the opt-in precision class 3 tf32x3 (float data on the tensor cores: sgemm_tf32x3).
/// dtype is last, so initialisers written before it existed still compile (as float).
struct TunedProblem {
  int m, n, k;
  int layout;
  int batch;
  int broadcast;
  int dtype;
};

namespace detail {

/// One kernel: its instantiation, launch shape and what it requires of a call.
struct KernelInfo {
  const char* name;     // the instantiation, as tuned
  const char* source;   // namespace of its source bundle, under detail
  int threads;          // 1-D blocks
  int tile_m;           // rows of C per block
  int tile_n;           // columns of C per block
  int dynamic_smem;     // bytes
  int grid_z;           // blocks per tile along z (K split across a cluster)
  int align_bytes;      // A, B and C base addresses must be aligned to this
  int ld_multiple;      // lda, ldb and ldc must be multiples of this
  int layout;           // the layout it computes (as TunedProblem::layout)
  int batched;          // 1: takes the batch strides (BatchedKernelFn) and the batch on grid z
  int problems_per_block;  // 0: one problem per block; n >= 1: each block computes its tile of n
                           // consecutive problems, and the kernel takes the launch's problem count
                           // after the strides (BatchCountKernelFn)
  int dtype;            // the element type it computes (as TunedProblem::dtype)
  int tensor_maps;      // 1: reads A and B through TMA and takes two tensor maps after the 15 arguments
                        // (built for each launch, detail::encode_tensor_maps), on compute capability 9.0
                        // in a build with sm_90a device code (detail::tma_ready); 0 (left out): none
};

/// A tuned problem and its kernels, as indices into k_kernels.
struct Entry {
  TunedProblem problem;
  int primary;          // the fastest kernel
  int portable;         // the fastest without requirements; -1: none (the generic default runs)
};

/// One kernel's cost model on one device (dispatch rules, "the cost model"): predicted microseconds
/// are coef . features(shape), trusted within a factor of two of the shapes it was measured on.
struct KernelModel {
  int kernel;              // index into k_kernels
  int blocks_per_sm;       // resident blocks per SM on this device
  double coef[4];          // fixed, per million multiply-adds, per thousand k steps, per thousand outputs
  long long min_m, max_m, min_n, max_n, min_k, max_k;  // the shapes it was measured on
};

/// The dispatch table of one device, keyed by what cudaGetDeviceProperties reports.
struct DeviceTable {
  const char* name;
  int cc_major, cc_minor, sm_count;
  const Entry* entries;    // tuned problems: a call of exactly one of these runs its measured winner
  int entry_count;
  const KernelModel* models;  // every other call runs the kernel with the least predicted time
  int model_count;
  double bytes_per_us;     // the memory bandwidth split K's sum is predicted with; 0: K is never split
};

/// The number of an element type (TunedProblem::dtype, KernelInfo::dtype): float 0, double 1, int 2.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  enum { value = 0 };
};
template <>
struct DTypeOf<double> {
  enum { value = 1 };
};
template <>
struct DTypeOf<int> {
  enum { value = 2 };
};
/// The element types of the header's entry points: k_generic_kernels has one row per type. The opt-in
/// class tf32x3 (dtype 3) has no row: no generic default computes it, and its calls fall back to f32's
/// dispatch (dispatch rules, opt_in_storage).
constexpr int k_dtype_count = 3;
/// The opt-in class of sgemm_tf32x3 (TunedProblem::dtype, KernelInfo::dtype): FP32 data, three TF32
/// products on the tensor cores.
constexpr int k_dtype_tf32x3 = 3;

/// The header's own kernels (export/runtime/header_kernels.cuh), as helper_function numbers them: C =
/// beta*C, and split K's sum, each plus the element type (DTypeOf).
constexpr int k_helper_scale = 0;
constexpr int k_helper_split_sum = 3;
constexpr int k_helper_count = 6;

/// Every kernel has the GEMM contract signature (templates/README.md) over its element type T (alpha,
/// beta, A, B and C all of type T); a batched one takes the strides of A, B and C after ldc, and one
/// that computes several problems per block the launch's problem count after them.
template <class T>
using TypedKernelFn = void (*)(int, int, int, T, const T*, int, const T*, int, T, T*, int);
template <class T>
using TypedBatchedKernelFn = void (*)(int, int, int, T, const T*, int, const T*, int, T, T*, int, long long, long long,
                                      long long);
template <class T>
using TypedBatchCountKernelFn = void (*)(int, int, int, T, const T*, int, const T*, int, T, T*, int, long long,
                                         long long, long long, int);
/// The FP32 signatures, by the names of headers before there were other types.
typedef TypedKernelFn<float> KernelFn;
typedef TypedBatchedKernelFn<float> BatchedKernelFn;
typedef TypedBatchCountKernelFn<float> BatchCountKernelFn;

}  // namespace detail
