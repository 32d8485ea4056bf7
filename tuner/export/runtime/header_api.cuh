// The run-time half of an exported header: device identification, kernel selection, launching,
// and the public API (sgemm and its helpers). Pasted by `cm-tune export` inside the header's
// namespace NS, after the generated tables (k_kernels, k_device_tables, kernel_function) and the
// dispatch rules it calls; tests/cuda/test_header_runtime.cu compiles it as code.

namespace detail {

/// Same characters.
inline bool same_name(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

/// The table serving a device: the exact device (name, compute capability, SM count), else the
/// first table of the same compute capability, else -1 (the generic default kernel). Host only.
inline int match_device_table(const char* name, int cc_major, int cc_minor, int sm_count) {
  for (int t = 0; t < k_device_table_count; ++t) {
    const DeviceTable& d = k_device_tables[t];
    if (d.cc_major == cc_major && d.cc_minor == cc_minor && d.sm_count == sm_count && same_name(d.name, name)) return t;
  }
  for (int t = 0; t < k_device_table_count; ++t)
    if (k_device_tables[t].cc_major == cc_major && k_device_tables[t].cc_minor == cc_minor) return t;
  return -1;
}

/// Largest power of two dividing every matrix's address (the bases, and the byte strides between the
/// matrices of a batch), capped at 256.
inline int alignment_of(const void* a, const void* b, const void* c, long long stride_a = 0, long long stride_b = 0,
                        long long stride_c = 0) {
  return alignment_of_bits(static_cast<unsigned long long>(reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b) |
                                                           reinterpret_cast<size_t>(c)) |
                           static_cast<unsigned long long>((stride_a | stride_b | stride_c) * 4));
}

/// A call as the dispatch sees it.
struct Call {
  int layout;          // layout_index(op(A) == T, op(B) == T)
  int batch;           // 1: not batched
  int broadcast;       // broadcast_bits
  int M, N, K, lda, ldb, ldc;
  int alignment;       // alignment_of(...)
};

/// The call of a product (strides 0 when batch <= 1).
inline Call make_call(Op op_a, Op op_b, int M, int N, int K, const float* A, int lda, long long stride_a, const float* B,
                      int ldb, long long stride_b, const float* C, int ldc, long long stride_c, int batch) {
  const Call call = {layout_index(op_a == Op::T, op_b == Op::T),
                     batch,
                     broadcast_bits(batch, stride_a, stride_b),
                     M,
                     N,
                     K,
                     lda,
                     ldb,
                     ldc,
                     alignment_of(A, B, C, stride_a, stride_b, stride_c)};
  return call;
}

/// Whether a call may run a kernel: the kernel computes its layout (and batch), and the call meets
/// the kernel's requirements.
struct CallRequirements {
  const Call& call;
  bool operator()(int kernel) const {
    const KernelInfo& k = k_kernels[kernel];
    return kernel_serves(k.layout, k.batched, call.layout, call.batch) &&
           requirements_met(k.align_bytes, k.ld_multiple, call.lda, call.ldb, call.ldc, call.alignment);
  }
};

/// The kernel (index into k_kernels) a call runs on a device served by `table` (-1: none), by the
/// dispatch rules: for a tuned problem (same shape, layout, batch and broadcast), its measured winner
/// when the call meets the winner's requirements, else its best kernel without requirements; for any
/// other call, the kernel of its layout the table's cost model predicts fastest among those whose
/// requirements the call meets; else the layout's generic default (-1: none, the call is refused).
/// Host only, no GPU: tests compare it with cm-tune's choice.
inline int select(int table, const Call& call) {
  const int g = k_generic_kernels[call.layout];
  const int generic = g >= 0 && kernel_serves(k_kernels[g].layout, k_kernels[g].batched, call.layout, call.batch) ? g : -1;
  if (table < 0 || table >= k_device_table_count) return generic;
  const DeviceTable& t = k_device_tables[table];
  const CallRequirements usable = {call};
  const int e = exact_entry(t.entries, t.entry_count, call.M, call.N, call.K, call.layout, call.batch, call.broadcast);
  if (e >= 0) return entry_kernel(t.entries[e].primary, usable(t.entries[e].primary), t.entries[e].portable, generic);
  const int m = best_predicted(t.models, t.model_count, k_kernels, t.sm_count, call.M, call.N, call.K, call.batch, usable,
                               static_cast<double*>(0));
  return m < 0 ? generic : t.models[m].kernel;
}

/// The NN select of earlier headers: select for a row-major NN call.
inline int select(int table, int M, int N, int K, int lda, int ldb, int ldc, int alignment) {
  const Call call = {0, 1, 0, M, N, K, lda, ldb, ldc, alignment};
  return select(table, call);
}

/// select, remembered per thread for the last few distinct calls (no locks: each thread has its own).
inline int cached_select(int table, const Call& call) {
  constexpr int k_key = 11;
  struct Slot {
    int key[k_key];
    int kernel;
  };
  constexpr int k_slots = 8;
  static thread_local Slot slots[k_slots];   // zero: M = 0 never reaches here
  static thread_local unsigned next_slot = 0;
  const int key[k_key] = {table,  call.layout, call.batch, call.broadcast, call.M,        call.N,
                          call.K, call.lda,    call.ldb,   call.ldc,       call.alignment};
  for (int i = 0; i < k_slots; ++i) {
    bool same = true;
    for (int j = 0; j < k_key && same; ++j) same = slots[i].key[j] == key[j];
    if (same) return slots[i].kernel;
  }
  Slot& slot = slots[next_slot++ % k_slots];
  for (int j = 0; j < k_key; ++j) slot.key[j] = key[j];
  slot.kernel = select(table, call);
  return slot.kernel;
}

// Per-device state, computed once: which table serves the device, and per kernel whether its
// dynamic shared memory limit was raised. Writes are idempotent, so a race between threads costs
// at most a repeated query; the flags use atomic loads and stores where the compiler has them.
constexpr int k_max_cached_devices = 64;   // higher ordinals are identified on every call

struct DeviceState {
  int table_plus_2;                 // 0: not identified yet; else table + 2
  int smem_raised[k_kernel_count];  // 1: prepare_kernel's attributes set on this device
};

inline DeviceState* device_state(int device) {
  static DeviceState states[k_max_cached_devices];  // zero-initialized
  return device >= 0 && device < k_max_cached_devices ? &states[device] : nullptr;
}

inline int load_flag(const int* p) {
#if defined(__GNUC__) || defined(__clang__)
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
  return *static_cast<const volatile int*>(p);
#endif
}

inline void store_flag(int* p, int value) {
#if defined(__GNUC__) || defined(__clang__)
  __atomic_store_n(p, value, __ATOMIC_RELEASE);
#else
  *static_cast<volatile int*>(p) = value;
#endif
}

/// The table serving a device (-1: none), identified by name, compute capability and SM count.
inline cudaError_t table_of_device(int device, int* table) {
  DeviceState* state = device_state(device);
  if (state != nullptr) {
    const int cached = load_flag(&state->table_plus_2);
    if (cached != 0) {
      *table = cached - 2;
      return cudaSuccess;
    }
  }
  cudaDeviceProp prop;
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return err;
  *table = match_device_table(prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  if (state != nullptr) store_flag(&state->table_plus_2, *table + 2);
  return cudaSuccess;
}

/// The current device and its table.
inline cudaError_t current_table(int* device, int* table) {
  const cudaError_t err = cudaGetDevice(device);
  if (err != cudaSuccess) return err;
  return table_of_device(*device, table);
}

/// Sets a kernel's attributes on a device, once: a dynamic shared memory limit above 48 KiB, and
/// clusters of more than the portable 8 blocks.
inline cudaError_t prepare_kernel(int device, int kernel) {
  const KernelInfo& info = k_kernels[kernel];
  if (info.dynamic_smem <= 48 * 1024 && info.grid_z <= 8) return cudaSuccess;
  DeviceState* state = device_state(device);
  if (state != nullptr && load_flag(&state->smem_raised[kernel]) != 0) return cudaSuccess;
  cudaError_t err = cudaSuccess;
  if (info.dynamic_smem > 48 * 1024)
    err = cudaFuncSetAttribute(kernel_function(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, info.dynamic_smem);
  if (err == cudaSuccess && info.grid_z > 8)
    err = cudaFuncSetAttribute(kernel_function(kernel), cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (err == cudaSuccess && state != nullptr) store_flag(&state->smem_raised[kernel], 1);
  return err;
}

/// C = beta*C on the M x N blocks of a batch (blockIdx.z: the matrix, stride_c apart) without reading
/// A or B; C is not read when beta == 0, so NaN in C does not survive (BLAS semantics). A template so
/// that several -rdc translation units may include it.
template <int Unused = 0>
__global__ void __launch_bounds__(256) scale_kernel(int M, int N, float beta, float* __restrict__ C, int ldc,
                                                    long long stride_c) {
  const long long col = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (col >= N) return;
  C += static_cast<long long>(blockIdx.z) * stride_c;
  for (int row = blockIdx.y; row < M; row += gridDim.y) {
    float* p = C + static_cast<long long>(row) * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

inline cudaError_t launch_scale(int M, int N, float beta, float* C, int ldc, long long stride_c, int batch,
                                cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  for (int first = 0; first < batch && err == cudaSuccess; first += 65535) {
    const int count = batch - first < 65535 ? batch - first : 65535;
    float* c = C + static_cast<long long>(first) * stride_c;
    const dim3 grid(static_cast<unsigned>((N - 1) / 256 + 1), static_cast<unsigned>(M < 65535 ? M : 65535),
                    static_cast<unsigned>(count));
    void* args[] = {&M, &N, &beta, &c, &ldc, &stride_c};
    err = cudaLaunchKernel(reinterpret_cast<const void*>(&scale_kernel<>), grid, dim3(256), args, 0, stream);
  }
  return err;
}

/// The problems of a batch one launch of a kernel runs: grid z, grid_z blocks for each group of
/// problems_per_block problems, stays within 65535 blocks.
inline int problems_per_launch(const KernelInfo& info) {
  const int per_block = info.problems_per_block > 1 ? info.problems_per_block : 1;
  return (65535 / info.grid_z) * per_block;
}

/// Grid z of a launch of `count` problems: grid_z blocks per group of problems_per_block problems.
inline unsigned launch_grid_z(const KernelInfo& info, int count) {
  const int per_block = info.problems_per_block > 1 ? info.problems_per_block : 1;
  return static_cast<unsigned>(info.grid_z * ((count + per_block - 1) / per_block));
}

/// Checks a row-major call, and runs it: C = alpha * op(A) * op(B) + beta * C, `batch` times.
/// cudaErrorInvalidValue for bad arguments, cudaErrorNotSupported when no kernel of the header
/// computes the layout (an edited generic template without it).
inline cudaError_t gemm(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda, long long stride_a,
                        const float* B, int ldb, long long stride_b, float beta, float* C, int ldc, long long stride_c,
                        int batch, cudaStream_t stream) {
  const bool ta = op_a == Op::T, tb = op_b == Op::T;
  if ((op_a != Op::N && !ta) || (op_b != Op::N && !tb)) return cudaErrorInvalidValue;
  if (M < 0 || N < 0 || K < 0 || batch < 0) return cudaErrorInvalidValue;
  const int a_cols = ta ? M : K, b_cols = tb ? K : N;
  if (lda < (a_cols > 1 ? a_cols : 1) || ldb < (b_cols > 1 ? b_cols : 1) || ldc < (N > 1 ? N : 1))
    return cudaErrorInvalidValue;
  if (batch > 1 && (stride_a < 0 || stride_b < 0 || stride_c < static_cast<long long>(M - 1) * ldc + N))
    return cudaErrorInvalidValue;  // the matrices of C may not overlap
  if (batch <= 1) stride_a = stride_b = stride_c = 0;
  if (M == 0 || N == 0 || batch == 0) return cudaSuccess;
  if (C == nullptr) return cudaErrorInvalidValue;
  if (alpha == 0.0f || K == 0) {
    if (beta == 1.0f) return cudaSuccess;  // C = C
    return launch_scale(M, N, beta, C, ldc, stride_c, batch, stream);
  }
  if (A == nullptr || B == nullptr) return cudaErrorInvalidValue;
  int device = 0, table = -1;
  cudaError_t err = current_table(&device, &table);
  if (err != cudaSuccess) return err;
  const int kernel =
      cached_select(table, make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch));
  if (kernel < 0) return cudaErrorNotSupported;
  err = prepare_kernel(device, kernel);
  if (err != cudaSuccess) return err;
  const KernelInfo& info = k_kernels[kernel];
  // Grid z holds at most 65535 blocks: a larger batch takes several launches, each with its own count.
  const int per_launch = problems_per_launch(info);
  for (int first = 0; first < batch && err == cudaSuccess; first += per_launch) {
    int count = batch - first < per_launch ? batch - first : per_launch;
    const float* a = A + static_cast<long long>(first) * stride_a;
    const float* b = B + static_cast<long long>(first) * stride_b;
    float* c = C + static_cast<long long>(first) * stride_c;
    const dim3 grid(static_cast<unsigned>((N - 1) / info.tile_n + 1), static_cast<unsigned>((M - 1) / info.tile_m + 1),
                    launch_grid_z(info, count));
    // A kernel reads the arguments it has: 11 unbatched, 14 with the strides, 15 with the count.
    void* args[] = {&M, &N, &K, &alpha, &a, &lda, &b, &ldb, &beta, &c, &ldc, &stride_a, &stride_b, &stride_c, &count};
    err = cudaLaunchKernel(kernel_function(kernel), grid, dim3(static_cast<unsigned>(info.threads)), args,
                           static_cast<size_t>(info.dynamic_smem), stream);
  }
  return err;
}

}  // namespace detail

/// Row-major SGEMM, C = alpha * A * B + beta * C with A M x K (lda), B K x N (ldb), C M x N (ldc),
/// on `stream`, using the kernel this device's table chooses (detail::select). Returns
/// cudaErrorInvalidValue for bad arguments (negative sizes, lda < max(1,K), ldb or ldc < max(1,N),
/// a null pointer that would be used), cudaSuccess without launching anything when M or N is 0,
/// else the status of the launch. alpha == 0 or K == 0 only scales C (A and B are not read);
/// beta == 0 writes C without reading it.
inline cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                         float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm(Op::N, Op::N, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

/// Row-major SGEMM with transposes, C = alpha * op(A) * op(B) + beta * C, C M x N. op_a == Op::T
/// means A is stored K x M (lda >= max(1, M)) and used transposed; op_b == Op::T means B is stored
/// N x K (ldb >= max(1, K)). Otherwise as sgemm above (Op::N, Op::N is that call).
inline cudaError_t sgemm(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                         int ldb, float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm(op_a, op_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

/// Row-major strided-batched SGEMM, like cublasSgemmStridedBatched: for i < batch,
/// C + i*stride_c = alpha * op(A + i*stride_a) * op(B + i*stride_b) + beta * (C + i*stride_c), strides
/// in elements. A stride of 0 for A or B uses one matrix for the whole batch (broadcast); the
/// matrices of C may not overlap (stride_c >= (M-1)*ldc + N, else cudaErrorInvalidValue). batch 0 does
/// nothing.
inline cudaError_t sgemm_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                         long long stride_a, const float* B, int ldb, long long stride_b, float beta,
                                         float* C, int ldc, long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batch,
                      stream);
}

/// Column-major SGEMM, as cublasSgemm takes it: C (M x N, ldc) = alpha * op(A) * op(B) + beta * C
/// with column-major A (M x K, or K x M for Op::T; lda) and B (K x N, or N x K; ldb). A column-major
/// matrix is the row-major transpose, so this runs the row-major C^T = op(B)^T * op(A)^T.
inline cudaError_t sgemm_colmajor(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                  const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm(op_b, op_a, N, M, K, alpha, B, ldb, 0, A, lda, 0, beta, C, ldc, 0, 1, stream);
}

/// Column-major strided-batched SGEMM, as cublasSgemmStridedBatched takes it.
inline cudaError_t sgemm_colmajor_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A,
                                                  int lda, long long stride_a, const float* B, int ldb,
                                                  long long stride_b, float beta, float* C, int ldc,
                                                  long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm(op_b, op_a, N, M, K, alpha, B, ldb, stride_b, A, lda, stride_a, beta, C, ldc, stride_c, batch,
                      stream);
}

/// The name of the dispatch table serving the current device (*name = nullptr: none, the generic
/// default kernel runs there).
inline cudaError_t device_table_name(const char** name) {
  int device = 0, table = -1;
  const cudaError_t err = detail::current_table(&device, &table);
  *name = (err == cudaSuccess && table >= 0) ? detail::k_device_tables[table].name : nullptr;
  return err;
}

/// The problems tuned for the current device: up to `capacity` of them into `problems` (may be
/// null when capacity is 0), and how many there are into *count (0 when no table serves it).
inline cudaError_t tuned_problems(TunedProblem* problems, int capacity, int* count) {
  int device = 0, table = -1;
  *count = 0;
  const cudaError_t err = detail::current_table(&device, &table);
  if (err != cudaSuccess || table < 0) return err;
  const detail::DeviceTable& t = detail::k_device_tables[table];
  for (int i = 0; i < t.entry_count && i < capacity; ++i) problems[i] = t.entries[i].problem;
  *count = t.entry_count;
  return cudaSuccess;
}

/// The same for a call of sgemm_strided_batched (batch 1: of sgemm with op flags); *name is null
/// when no kernel computes the layout.
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const float* A, int lda, long long stride_a,
                               const float* B, int ldb, long long stride_b, const float* C, int ldc, long long stride_c,
                               int batch, const char** name) {
  int device = 0, table = -1;
  *name = nullptr;
  const cudaError_t err = detail::current_table(&device, &table);
  if (err != cudaSuccess) return err;
  if (M < 1 || N < 1 || K < 1 || batch < 1) return cudaErrorInvalidValue;
  if (batch == 1) stride_a = stride_b = stride_c = 0;
  const int kernel = detail::select(
      table, detail::make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch));
  if (kernel >= 0) *name = detail::k_kernels[kernel].name;
  return cudaSuccess;
}

/// The kernel sgemm would launch on the current device for a product (alpha != 0, K >= 1) with
/// these arguments; *name is its instantiation, e.g. "cmt_sgemm_multistage<...>".
inline cudaError_t kernel_name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, const float* C,
                               int ldc, const char** name) {
  return kernel_name(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name);
}
