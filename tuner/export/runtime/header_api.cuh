// The run-time half of an exported header: device identification, kernel selection, launching,
// and the public API (sgemm, dgemm, igemm and their helpers). Pasted by `cm-tune export` inside the header's
// namespace NS, after the generated tables (k_kernels, k_device_tables), the functions that give the
// kernels to launch (kernel_function, helper_function: source_code.cuh or image_loader.h), the
// dispatch rules it calls and the call recorder (call_recorder.cuh); tests/cuda/test_header_runtime.cu compiles it as code.

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
/// matrices of a batch: strides in elements of element_bytes bytes each), capped at 256.
inline int alignment_of(const void* a, const void* b, const void* c, long long stride_a = 0, long long stride_b = 0,
                        long long stride_c = 0, int element_bytes = 4) {
  return alignment_of_bits(static_cast<unsigned long long>(reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b) |
                                                           reinterpret_cast<size_t>(c)) |
                           static_cast<unsigned long long>((stride_a | stride_b | stride_c) * element_bytes));
}

/// A call as the dispatch sees it.
struct Call {
  int layout;          // layout_index(op(A) == T, op(B) == T)
  int batch;           // 1: not batched
  int broadcast;       // broadcast_bits
  int M, N, K, lda, ldb, ldc;
  int alignment;       // alignment_of(...)
  int dtype;           // element type (DTypeOf): 0 float, 1 double, 2 int; last, so a Call{...} without it is float
};

/// The call of a product of elements of type T (strides 0 when batch <= 1).
template <class T>
inline Call make_call(Op op_a, Op op_b, int M, int N, int K, const T* A, int lda, long long stride_a, const T* B,
                      int ldb, long long stride_b, const T* C, int ldc, long long stride_c, int batch) {
  const Call call = {layout_index(op_a == Op::T, op_b == Op::T),
                     batch,
                     broadcast_bits(batch, stride_a, stride_b),
                     M,
                     N,
                     K,
                     lda,
                     ldb,
                     ldc,
                     alignment_of(A, B, C, stride_a, stride_b, stride_c, static_cast<int>(sizeof(T))),
                     DTypeOf<T>::value};
  return call;
}

/// What the call recorder writes of a call with these batch strides (0 when the batch is 1).
inline RecordKey record_key(const Call& c, long long stride_a, long long stride_b, long long stride_c) {
  const RecordKey key = {{c.M, c.N, c.K, c.layout, c.batch, c.dtype, c.lda, c.ldb, c.ldc, stride_a, stride_b, stride_c,
                          c.alignment}};
  return key;
}

// ---- TMA kernels (KernelInfo::tensor_maps) ----
// A TMA kernel (tf32x3_wgmma) is sm_90a code: it runs on compute capability 9.0 where the program's
// device code was built for sm_90a (nvcc -arch=sm_90a, or -gencode arch=compute_90a,code=sm_90a),
// and reads A and B through two tensor maps built here for each launch with the driver's
// cuTensorMapEncodeTiled, reached through the runtime (nothing links libcuda).

typedef CUresult (*TmaEncodeFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/// The driver's encoder, looked up once (null where the driver has none).
inline TmaEncodeFn tma_encoder() {
  static const TmaEncodeFn fn = [] {
    void* p = 0;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<TmaEncodeFn>(0);
    }
    return reinterpret_cast<TmaEncodeFn>(p);
  }();
  return fn;
}

/// Whether TMA kernels run on the current device: compute capability 9.0, the driver's encoder, and
/// sm_90a device code (device_code_has_sm90a: always in a header of machine code; in a header of
/// sources, where the program was built for sm_90a, which a one-thread probe tells, once per device;
/// a probe that cannot run, e.g. inside a stream capture, answers no for this call and is tried again
/// at the next).
inline bool tma_ready() {
  static std::atomic<int> state[64];   // per device: 0 not known, 1 ready, 2 not (calls may come from any thread)
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) {
    (void)cudaGetLastError();
    return false;
  }
  const int known = state[device].load(std::memory_order_relaxed);
  if (known != 0) return known == 1;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (major != 9 || minor != 0 || tma_encoder() == 0) {
    state[device].store(2, std::memory_order_relaxed);
    return false;
  }
  int built = 0;
  const cudaError_t err = device_code_has_sm90a(&built);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  state[device].store(built == 1 ? 1 : 2, std::memory_order_relaxed);
  return built == 1;
}

/// A kernel the call may launch on this device: every kernel but a TMA one where TMA is not ready.
inline bool kernel_launchable(const KernelInfo& k) { return k.tensor_maps == 0 || tma_ready(); }

/// One operand stored as rows x cols (row-major, ld elements apart), `matrices` of them `stride`
/// elements apart (one for a stride of 0), in boxes of 32 columns by box_rows rows: FP32 in the
/// 128-byte swizzle, zero-filled outside the matrix (as the tuner's launcher, cuda/tensor_map.cpp).
inline bool encode_operand(CUtensorMap* map, const void* base, long long rows, long long cols, long long ld,
                           long long stride, int matrices, int box_rows) {
  const TmaEncodeFn fn = tma_encoder();
  if (fn == 0 || (reinterpret_cast<size_t>(base) & 15) != 0 || (ld * 4) % 16 != 0 || (stride * 4) % 16 != 0)
    return false;
  const long long count = stride != 0 ? matrices : 1;
  const long long matrix_bytes = stride != 0 ? stride * 4 : (rows > 1 ? rows : 1) * ld * 4;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols > 1 ? cols : 1), static_cast<cuuint64_t>(rows > 1 ? rows : 1),
                              static_cast<cuuint64_t>(count > 1 ? count : 1)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * 4, static_cast<cuuint64_t>((matrix_bytes + 15) / 16 * 16)};
  const cuuint32_t box[3] = {32, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(base), dims, strides, box, element_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// The two maps of one launch of TMA kernel `info` (layout from the kernel: A is M x K, or K x M
/// transposed; B is K x N, or N x K), kept for the last four launches of the calling thread, so that
/// a program calling with the same matrices encodes once. False where TMA cannot take the operands.
inline bool encode_tensor_maps(const KernelInfo& info, int M, int N, int K, const void* A, int lda, long long stride_a,
                               const void* B, int ldb, long long stride_b, int count, CUtensorMap* maps) {
  struct Cached {
    long long key[13];
    CUtensorMap maps[2];
    bool used;
  };
  static thread_local Cached cache[4] = {};
  static thread_local int next = 0;
  const long long key[13] = {reinterpret_cast<long long>(A), reinterpret_cast<long long>(B), M, N, K, lda, ldb,
                             stride_a, stride_b, count, info.layout, info.tile_m, info.tile_n};
  for (int i = 0; i < 4; ++i) {
    bool same = cache[i].used;
    for (int f = 0; same && f < 13; ++f) same = cache[i].key[f] == key[f];
    if (same) {
      maps[0] = cache[i].maps[0];
      maps[1] = cache[i].maps[1];
      return true;
    }
  }
  const bool ta = info.layout == 2 || info.layout == 3, tb = info.layout == 1 || info.layout == 3;
  if (K == 0) {   // only C is scaled: the maps are not read
    std::memset(maps, 0, 2 * sizeof(CUtensorMap));
    return true;
  }
  const bool ok = (ta ? encode_operand(&maps[0], A, K, M, lda, stride_a, count, 32)
                      : encode_operand(&maps[0], A, M, K, lda, stride_a, count, info.tile_m)) &&
                  (tb ? encode_operand(&maps[1], B, N, K, ldb, stride_b, count, info.tile_n)
                      : encode_operand(&maps[1], B, K, N, ldb, stride_b, count, 32));
  if (!ok) return false;
  Cached& c = cache[next];
  next = (next + 1) % 4;
  for (int f = 0; f < 13; ++f) c.key[f] = key[f];
  c.maps[0] = maps[0];
  c.maps[1] = maps[1];
  c.used = true;
  return true;
}

/// Whether a call may run a kernel: the kernel computes its element type and layout (and batch), the
/// call meets the kernel's requirements, and it can be launched here (kernel_launchable).
struct CallRequirements {
  const Call& call;
  bool operator()(int kernel) const {
    const KernelInfo& k = k_kernels[kernel];
    return kernel_serves(k.layout, k.batched, k.dtype, call.layout, call.batch, call.dtype) &&
           requirements_met(k.align_bytes, k.ld_multiple, call.lda, call.ldb, call.ldc, call.alignment) &&
           kernel_launchable(k);
  }
};

/// Whether the slice calls of a split of a call into `splits` may run a kernel (dispatch rules,
/// best_split): a batch of `splits` products of M x N x K/splits into an M x N workspace.
struct SliceRequirements {
  const Call& call;
  bool operator()(int kernel, int splits) const {
    const KernelInfo& k = k_kernels[kernel];
    return slices_usable(k.layout, k.batched, k.dtype, k.align_bytes, k.ld_multiple, call.layout, call.dtype,
                         call.alignment, call.M, call.N, call.K, call.lda, call.ldb, splits) &&
           kernel_launchable(k);
  }
};

/// The kernel (index into k_kernels) a call of one element type or precision class runs on a device
/// served by `table` (-1: none), by the dispatch rules: for a tuned problem (same shape, layout, batch,
/// broadcast and type), its measured winner when the call meets the winner's requirements, else its
/// best kernel without requirements; for any other call, the kernel of its type and layout the table's
/// cost model predicts fastest among those whose requirements the call meets, or, where K is long and
/// that kernel leaves SMs idle, the kernel of a split of K (*splits slices; 1: no split) predicted
/// faster still; else the generic default of its type and layout (-1: none, the call is refused; a
/// precision class has none). `splits` null: K is not split. `reason` not null: why (DispatchReason).
/// `us` not null: the chosen kernel's predicted microseconds (a split's with its sum; a tuned problem's
/// by its kernel's model), -1 when its kernel has no model on the device or none runs.
inline int select_in_class(int table, const Call& call, int* splits, DispatchReason* reason, double* us) {
  if (splits != 0) *splits = 1;
  if (us != 0) *us = -1;
  const int generic = generic_kernel(k_generic_kernels, k_dtype_count, k_kernels, call.dtype, call.layout, call.batch);
  if (table < 0 || table >= k_device_table_count) {
    if (reason != 0) *reason = DispatchReason::no_table;
    return generic;
  }
  const DeviceTable& t = k_device_tables[table];
  const CallRequirements usable = {call};
  const int e = exact_entry(t.entries, t.entry_count, call.M, call.N, call.K, call.layout, call.batch, call.broadcast,
                            call.dtype);
  if (e >= 0) {
    const Entry& entry = t.entries[e];
    const bool met = usable(entry.primary);
    if (reason != 0) *reason = entry_reason(met, entry.portable);
    const int kernel = entry_kernel(entry.primary, met, entry.portable, generic);
    if (us != 0)
      *us = kernel_model_us(t.models, t.model_count, k_kernels, t.sm_count, kernel, call.M, call.N, call.K, call.batch);
    return kernel;
  }
  double predicted = 0;
  const int m = best_predicted(t.models, t.model_count, k_kernels, t.sm_count, call.M, call.N, call.K, call.batch,
                               usable, &predicted);
  if (m < 0) {
    if (reason != 0)
      *reason = fallback_reason(
          table_serves(t.entries, t.entry_count, t.models, t.model_count, k_kernels, call.dtype, call.layout, call.batch),
          models_serve(t.models, t.model_count, k_kernels, call.dtype, call.layout, call.batch));
    if (us != 0)
      *us = kernel_model_us(t.models, t.model_count, k_kernels, t.sm_count, generic, call.M, call.N, call.K,
                            call.batch);
    return generic;
  }
  if (reason != 0) *reason = DispatchReason::predicted;
  if (us != 0) *us = predicted;
  if (splits != 0) {
    const SliceRequirements slices = {call};
    double split_us = 0;
    const int s = best_split(t.models, t.model_count, k_kernels, t.sm_count, t.bytes_per_us, dtype_bytes_of(call.dtype),
                             call.M, call.N, call.K, call.batch, m, predicted, slices, splits, &split_us);
    if (s >= 0) {
      if (us != 0) *us = split_us;
      return t.models[s].kernel;
    }
  }
  return t.models[m].kernel;
}

/// The kernel a call runs (select_in_class, with its slice count and reason as there). A call of an
/// opt-in precision class (call.dtype tf32x3: sgemm_tf32x3) is dispatched twice, as a call of the
/// class and as the same call of its storage type (f32), and runs the class's choice only where it is
/// predicted faster (dispatch rules, opt_in_runs_class); *splits and *reason are then those of the
/// choice that runs. Host only, no GPU: tests compare it with cm-tune's choice.
inline int select(int table, const Call& call, int* splits, DispatchReason* reason = 0) {
  const int storage = opt_in_storage(call.dtype);
  if (storage < 0) return select_in_class(table, call, splits, reason, static_cast<double*>(0));
  Call base = call;
  base.dtype = storage;
  int class_splits = 1, base_splits = 1;
  DispatchReason class_reason = DispatchReason::tuned, base_reason = DispatchReason::tuned;
  double class_us = -1, base_us = -1;
  const int chosen = select_in_class(table, call, splits != 0 ? &class_splits : static_cast<int*>(0),
                                     reason != 0 ? &class_reason : static_cast<DispatchReason*>(0), &class_us);
  const int fallback = select_in_class(table, base, splits != 0 ? &base_splits : static_cast<int*>(0),
                                       reason != 0 ? &base_reason : static_cast<DispatchReason*>(0), &base_us);
  const bool runs_class = opt_in_runs_class(chosen, class_us, fallback, base_us);
  if (splits != 0) *splits = runs_class ? class_splits : base_splits;
  if (reason != 0) *reason = runs_class ? class_reason : base_reason;
  return runs_class ? chosen : fallback;
}

/// select, K split where the rules say so: the kernel that runs the call (of its slices when split).
inline int select(int table, const Call& call) {
  int splits = 1;
  return select(table, call, &splits);
}

/// The NN select of earlier headers: select for a row-major NN call of floats.
inline int select(int table, int M, int N, int K, int lda, int ldb, int ldc, int alignment) {
  const Call call = {0, 1, 0, M, N, K, lda, ldb, ldc, alignment, DTypeOf<float>::value};
  return select(table, call);
}

/// select (K split where the rules say so), remembered per thread for the last few distinct calls (no
/// locks: each thread has its own).
inline int cached_select(int table, const Call& call, int* splits) {
  constexpr int k_key = 12;
  struct Slot {
    int key[k_key];
    int kernel;
    int splits;
  };
  constexpr int k_slots = 8;
  static thread_local Slot slots[k_slots];   // zero: M = 0 never reaches here
  static thread_local unsigned next_slot = 0;
  const int key[k_key] = {table,  call.layout, call.batch, call.broadcast, call.M,         call.N,
                          call.K, call.lda,    call.ldb,   call.ldc,       call.alignment, call.dtype};
  for (int i = 0; i < k_slots; ++i) {
    bool same = true;
    for (int j = 0; j < k_key && same; ++j) same = slots[i].key[j] == key[j];
    if (same) {
      *splits = slots[i].splits;
      return slots[i].kernel;
    }
  }
  Slot& slot = slots[next_slot++ % k_slots];
  for (int j = 0; j < k_key; ++j) slot.key[j] = key[j];
  slot.kernel = select(table, call, &slot.splits);
  *splits = slot.splits;
  return slot.kernel;
}

/// cached_select, without the slice count.
inline int cached_select(int table, const Call& call) {
  int splits = 1;
  return cached_select(table, call, &splits);
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
/// clusters of more than the portable 8 blocks (loading its machine code first, in a header of it).
inline cudaError_t prepare_kernel(int device, int kernel) {
  const KernelInfo& info = k_kernels[kernel];
  if (info.dynamic_smem <= 48 * 1024 && info.grid_z <= 8) return cudaSuccess;
  DeviceState* state = device_state(device);
  if (state != nullptr && load_flag(&state->smem_raised[kernel]) != 0) return cudaSuccess;
  const void* fn = 0;
  cudaError_t err = kernel_function(device, kernel, &fn);
  if (err == cudaSuccess && info.dynamic_smem > 48 * 1024)
    err = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, info.dynamic_smem);
  if (err == cudaSuccess && info.grid_z > 8)
    err = cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (err == cudaSuccess && state != nullptr) store_flag(&state->smem_raised[kernel], 1);
  return err;
}


/// C = beta*C (scale_kernel, export/runtime/header_kernels.cuh) on the current device.
template <class T>
inline cudaError_t launch_scale(int M, int N, T beta, T* C, int ldc, long long stride_c, int batch,
                                cudaStream_t stream) {
  int device = 0;
  const void* fn = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = helper_function(device, k_helper_scale + DTypeOf<T>::value, &fn);
  for (int first = 0; first < batch && err == cudaSuccess; first += 65535) {
    const int count = batch - first < 65535 ? batch - first : 65535;
    T* c = C + static_cast<long long>(first) * stride_c;
    const dim3 grid(static_cast<unsigned>((N - 1) / 256 + 1), static_cast<unsigned>(M < 65535 ? M : 65535),
                    static_cast<unsigned>(count));
    void* args[] = {&M, &N, &beta, &c, &ldc, &stride_c};
    err = cudaLaunchKernel(fn, grid, dim3(256), args, 0, stream);
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

/// Launches kernel `kernel` on a checked call, `batch` problems `stride_*` apart.
template <class T>
inline cudaError_t launch_kernel(int device, int kernel, int M, int N, int K, T alpha, const T* A, int lda,
                                 long long stride_a,
                                 const T* B, int ldb, long long stride_b, T beta, T* C, int ldc, long long stride_c,
                                 int batch, cudaStream_t stream) {
  const KernelInfo& info = k_kernels[kernel];
  const void* fn = 0;
  cudaError_t err = kernel_function(device, kernel, &fn);
  // Grid z holds at most 65535 blocks: a larger batch takes several launches, each with its own count.
  const int per_launch = problems_per_launch(info);
  for (int first = 0; first < batch && err == cudaSuccess; first += per_launch) {
    int count = batch - first < per_launch ? batch - first : per_launch;
    const T* a = A + static_cast<long long>(first) * stride_a;
    const T* b = B + static_cast<long long>(first) * stride_b;
    T* c = C + static_cast<long long>(first) * stride_c;
    const dim3 grid(static_cast<unsigned>((N - 1) / info.tile_n + 1), static_cast<unsigned>((M - 1) / info.tile_m + 1),
                    launch_grid_z(info, count));
    // A kernel reads the arguments it has: 11 unbatched, 14 with the strides, 15 with the count, 17
    // with a TMA kernel's tensor maps.
    CUtensorMap maps[2];
    if (info.tensor_maps != 0 &&
        !encode_tensor_maps(info, M, N, K, a, lda, stride_a, b, ldb, stride_b, count, maps))
      return cudaErrorInvalidValue;
    void* args[] = {&M, &N, &K, &alpha, &a, &lda, &b, &ldb, &beta, &c, &ldc, &stride_a, &stride_b, &stride_c, &count,
                    &maps[0], &maps[1]};
    err = cudaLaunchKernel(fn, grid, dim3(static_cast<unsigned>(info.threads)), args,
                           static_cast<size_t>(info.dynamic_smem), stream);
  }
  return err;
}


/// Runs an unbatched call as `splits` slices of K/splits: one strided batch into a workspace taken
/// from the stream-ordered allocator on the call's stream (so concurrent streams and threads each
/// have their own, and it is freed in stream order after the sum), then split_sum_kernel.
/// cudaErrorMemoryAllocation when no workspace could be had (nothing was launched).
template <class T>
inline cudaError_t launch_split(int device, int kernel, int splits, int layout, int M, int N, int K, T alpha, const T* A,
                                int lda,
                                const T* B, int ldb, T beta, T* C, int ldc, cudaStream_t stream) {
  const long long slice_k = K / splits;
  const long long slice = static_cast<long long>(M) * N;
  void* workspace = 0;
  cudaError_t err = cudaMallocAsync(&workspace, static_cast<size_t>(slice * splits) * sizeof(T), stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();   // clear it: the caller runs the call unsplit
    return cudaErrorMemoryAllocation;
  }
  T* partial = static_cast<T*>(workspace);
  err = launch_kernel(device, kernel, M, N, static_cast<int>(slice_k), T(1), A, lda,
                      split_stride_a(layout, slice_k, lda), B, ldb,
                      split_stride_b(layout, slice_k, ldb), T(0), partial, N, slice, splits, stream);
  if (err == cudaSuccess) {
    const long long blocks = (slice + 255) / 256;
    const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
    void* args[] = {&M, &N, &splits, &alpha, &partial, &beta, &C, &ldc};
    const void* fn = 0;
    err = helper_function(device, k_helper_split_sum + DTypeOf<T>::value, &fn);
    if (err == cudaSuccess) err = cudaLaunchKernel(fn, dim3(grid), dim3(256), args, 0, stream);
  }
  const cudaError_t freed = cudaFreeAsync(workspace, stream);
  return err != cudaSuccess ? err : freed;
}

/// Records a call (call_recorder.cuh); the first call of the process reads the environment. Out of
/// line, so that the dispatch path, where recording is off, keeps its code as it was.
template <class T>
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, cold))
#endif
void record_call(Op op_a, Op op_b, int M, int N, int K, const T* A, int lda, long long stride_a, const T* B, int ldb,
                 long long stride_b, const T* C, int ldc, long long stride_c, int batch, int dtype) {
  CallRecorder* recorder = cached_recorder();
  if (recorder == nullptr) recorder = resolve_recorder();
  if (recorder == nullptr || recorder == recording_off()) return;
  Call call = make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch);
  call.dtype = dtype;   // an opted-in call is recorded as its class's problem (:tf32x3)
  recorder->record(record_key(call, stride_a, stride_b, stride_c));
}

/// Checks a row-major call, and runs it: C = alpha * op(A) * op(B) + beta * C, `batch` times, in
/// elements of type T (float, double, or int with wrapping arithmetic). `dtype`: the call's element
/// type (DTypeOf<T>), or an opt-in class stored as T (k_dtype_tf32x3 for float: sgemm_tf32x3), which
/// select dispatches among both. cudaErrorInvalidValue for bad arguments, cudaErrorNotSupported when
/// no kernel of the header computes the type and layout (a generic template without them, and nothing
/// tuned that serves the call). A call that gets as far as choosing a kernel is recorded first when
/// $CMTUNE_RECORD is set (call_recorder.cuh): every entry point comes here, the column-major ones as
/// the row-major product they compute.
template <class T>
inline cudaError_t gemm(Op op_a, Op op_b, int M, int N, int K, T alpha, const T* A, int lda, long long stride_a,
                        const T* B, int ldb, long long stride_b, T beta, T* C, int ldc, long long stride_c, int batch,
                        cudaStream_t stream, int dtype = DTypeOf<T>::value) {
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
  if (alpha == T(0) || K == 0) {
    if (beta == T(1)) return cudaSuccess;  // C = C
    return launch_scale(M, N, beta, C, ldc, stride_c, batch, stream);
  }
  if (A == nullptr || B == nullptr) return cudaErrorInvalidValue;
  // Recorded before any CUDA call, so a call is recorded even where it then fails; off, this is one
  // load and one branch (the first call reads the environment in record_call).
  if (cached_recorder() != recording_off())
    record_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, dtype);
  int device = 0, table = -1;
  cudaError_t err = current_table(&device, &table);
  if (err != cudaSuccess) return err;
  Call call = make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch);
  call.dtype = dtype;
  int splits = 1;
  const int kernel = cached_select(table, call, &splits);
  if (kernel < 0) return cudaErrorNotSupported;
  err = prepare_kernel(device, kernel);
  if (err != cudaSuccess) return err;
  if (splits > 1) {
    err = launch_split(device, kernel, splits, call.layout, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    if (err != cudaErrorMemoryAllocation) return err;
    // No workspace: the best unsplit kernel runs instead.
    const int unsplit = select(table, call, static_cast<int*>(0));
    if (unsplit < 0) return cudaErrorNotSupported;
    err = prepare_kernel(device, unsplit);
    if (err != cudaSuccess) return err;
    return launch_kernel(device, unsplit, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                         batch,
                         stream);
  }
  return launch_kernel(device, kernel, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batch,
                       stream);
}

/// What kernel_name reports for a call of elements of type T (see kernel_name below), and why when
/// `reason` is not null.
template <class T>
inline cudaError_t kernel_name_of(Op op_a, Op op_b, int M, int N, int K, const T* A, int lda, long long stride_a,
                                  const T* B, int ldb, long long stride_b, const T* C, int ldc, long long stride_c,
                                  int batch, const char** name, DispatchReason* reason = nullptr,
                                  int dtype = DTypeOf<T>::value) {
  int device = 0, table = -1;
  *name = nullptr;
  const cudaError_t err = current_table(&device, &table);
  if (err != cudaSuccess) return err;
  if (M < 1 || N < 1 || K < 1 || batch < 1) return cudaErrorInvalidValue;
  if (batch == 1) stride_a = stride_b = stride_c = 0;
  Call call = make_call(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch);
  call.dtype = dtype;
  int splits = 1;
  const int kernel = select(table, call, &splits, reason);
  if (kernel >= 0) *name = k_kernels[kernel].name;
  return cudaSuccess;
}

}  // namespace detail

// ---- what sgemm computes: IEEE FP32, or with CMTUNE_SGEMM_TF32X3 the opt-in of sgemm_tf32x3 ----
// Defining CMTUNE_SGEMM_TF32X3 (any value) before including the header makes sgemm, and kernel_name for
// float operands, behave as sgemm_tf32x3 and kernel_name_tf32x3. The functions the macro changes live
// in an inline namespace named after the choice, so translation units that differ in it define
// different functions (no clash of two inline definitions under one name, also with -rdc), and
// callers write NS::sgemm either way.
#if defined(CMTUNE_SGEMM_TF32X3)
inline namespace sgemm_opted_in_tf32x3 {
/// The class sgemm's calls are dispatched as (detail::Call::dtype).
constexpr int k_sgemm_dtype = detail::k_dtype_tf32x3;
#else
inline namespace sgemm_ieee_fp32 {
/// The class sgemm's calls are dispatched as (detail::Call::dtype).
constexpr int k_sgemm_dtype = detail::DTypeOf<float>::value;
#endif

/// Row-major SGEMM, C = alpha * A * B + beta * C with A M x K (lda), B K x N (ldb), C M x N (ldc),
/// on `stream`, using the kernel this device's table chooses (detail::select). Returns
/// cudaErrorInvalidValue for bad arguments (negative sizes, lda < max(1,K), ldb or ldc < max(1,N),
/// a null pointer that would be used), cudaSuccess without launching anything when M or N is 0,
/// else the status of the launch. alpha == 0 or K == 0 only scales C (A and B are not read);
/// beta == 0 writes C without reading it.
inline cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                         float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<float>(Op::N, Op::N, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream,
                             k_sgemm_dtype);
}

/// Row-major SGEMM with transposes, C = alpha * op(A) * op(B) + beta * C, C M x N. op_a == Op::T
/// means A is stored K x M (lda >= max(1, M)) and used transposed; op_b == Op::T means B is stored
/// N x K (ldb >= max(1, K)). Otherwise as sgemm above (Op::N, Op::N is that call).
inline cudaError_t sgemm(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                         int ldb, float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_a, op_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream,
                             k_sgemm_dtype);
}

/// Row-major strided-batched SGEMM, like cublasSgemmStridedBatched: for i < batch,
/// C + i*stride_c = alpha * op(A + i*stride_a) * op(B + i*stride_b) + beta * (C + i*stride_c), strides
/// in elements. A stride of 0 for A or B uses one matrix for the whole batch (broadcast); the
/// matrices of C may not overlap (stride_c >= (M-1)*ldc + N, else cudaErrorInvalidValue). batch 0 does
/// nothing.
inline cudaError_t sgemm_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                         long long stride_a, const float* B, int ldb, long long stride_b, float beta,
                                         float* C, int ldc, long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                             batch, stream, k_sgemm_dtype);
}

/// Column-major SGEMM, as cublasSgemm takes it: C (M x N, ldc) = alpha * op(A) * op(B) + beta * C
/// with column-major A (M x K, or K x M for Op::T; lda) and B (K x N, or N x K; ldb). A column-major
/// matrix is the row-major transpose, so this runs the row-major C^T = op(B)^T * op(A)^T.
inline cudaError_t sgemm_colmajor(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                  const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_b, op_a, N, M, K, alpha, B, ldb, 0, A, lda, 0, beta, C, ldc, 0, 1, stream,
                             k_sgemm_dtype);
}

/// Column-major strided-batched SGEMM, as cublasSgemmStridedBatched takes it.
inline cudaError_t sgemm_colmajor_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A,
                                                  int lda, long long stride_a, const float* B, int ldb,
                                                  long long stride_b, float beta, float* C, int ldc,
                                                  long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_b, op_a, N, M, K, alpha, B, ldb, stride_b, A, lda, stride_a, beta, C, ldc, stride_c,
                             batch, stream, k_sgemm_dtype);
}

}  // inline namespace of CMTUNE_SGEMM_TF32X3's choice

/// FP32 GEMM that may run on the tensor cores (3xTF32, the opt-in precision class tf32x3): the five
/// entry points of sgemm above with the same arguments, checks and corner cases. Each call is
/// dispatched twice, among the header's tf32x3 kernels and among its FP32 ones as sgemm would, and runs
/// the kernel predicted faster (detail::select); where no tf32x3 kernel serves it (no table for the
/// device, none of its layout or batch, or the call misses their alignment and leading-dimension
/// requirements), it is exactly the sgemm call. A tf32x3 kernel splits each operand into a TF32 big
/// part and a TF32 small part and sums big*big + big*small + small*big: validated against FP64, never
/// less accurate than cuBLAS SGEMM (FP32 SIMT) on the same data but for 12 units of 2^-24 of each
/// element's scale; Inf and NaN reach C as in SGEMM; subnormal operands lose their bits below 2^-136
/// (docs/EXPORT.md, "The tf32x3 class").
inline cudaError_t sgemm_tf32x3(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<float>(Op::N, Op::N, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream,
                             detail::k_dtype_tf32x3);
}

inline cudaError_t sgemm_tf32x3(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                const float* B, int ldb, float beta, float* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_a, op_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream,
                             detail::k_dtype_tf32x3);
}

inline cudaError_t sgemm_tf32x3_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A,
                                                int lda, long long stride_a, const float* B, int ldb,
                                                long long stride_b, float beta, float* C, int ldc, long long stride_c,
                                                int batch, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                             batch, stream, detail::k_dtype_tf32x3);
}

inline cudaError_t sgemm_tf32x3_colmajor(Op op_a, Op op_b, int M, int N, int K, float alpha, const float* A, int lda,
                                         const float* B, int ldb, float beta, float* C, int ldc,
                                         cudaStream_t stream = 0) {
  return detail::gemm<float>(op_b, op_a, N, M, K, alpha, B, ldb, 0, A, lda, 0, beta, C, ldc, 0, 1, stream,
                             detail::k_dtype_tf32x3);
}

inline cudaError_t sgemm_tf32x3_colmajor_strided_batched(Op op_a, Op op_b, int M, int N, int K, float alpha,
                                                         const float* A, int lda, long long stride_a, const float* B,
                                                         int ldb, long long stride_b, float beta, float* C, int ldc,
                                                         long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<float>(op_b, op_a, N, M, K, alpha, B, ldb, stride_b, A, lda, stride_a, beta, C, ldc, stride_c,
                             batch, stream, detail::k_dtype_tf32x3);
}

/// DGEMM: the five entry points of sgemm above (plain NN, op flags, strided batches, column-major and
/// column-major strided batches) with double alpha, beta, A, B and C, and the same arguments, checks,
/// corner cases and dispatch (kernels built for doubles; cuBLAS's cublasDgemm conventions). Strides
/// count doubles.
inline cudaError_t dgemm(int M, int N, int K, double alpha, const double* A, int lda, const double* B, int ldb,
                         double beta, double* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<double>(Op::N, Op::N, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t dgemm(Op op_a, Op op_b, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
                         int ldb, double beta, double* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<double>(op_a, op_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t dgemm_strided_batched(Op op_a, Op op_b, int M, int N, int K, double alpha, const double* A, int lda,
                                         long long stride_a, const double* B, int ldb, long long stride_b, double beta,
                                         double* C, int ldc, long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<double>(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                              batch, stream);
}

inline cudaError_t dgemm_colmajor(Op op_a, Op op_b, int M, int N, int K, double alpha, const double* A, int lda,
                                  const double* B, int ldb, double beta, double* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<double>(op_b, op_a, N, M, K, alpha, B, ldb, 0, A, lda, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t dgemm_colmajor_strided_batched(Op op_a, Op op_b, int M, int N, int K, double alpha, const double* A,
                                                  int lda, long long stride_a, const double* B, int ldb,
                                                  long long stride_b, double beta, double* C, int ldc,
                                                  long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<double>(op_b, op_a, N, M, K, alpha, B, ldb, stride_b, A, lda, stride_a, beta, C, ldc, stride_c,
                              batch, stream);
}

/// INT32 GEMM: the five entry points of sgemm above with int (32-bit) alpha, beta, A, B and C, and the
/// same arguments, checks, corner cases and dispatch (kernels built for ints). Wrapping arithmetic:
/// every product and sum is taken modulo 2^32 and read as two's complement, so a result that
/// overflows wraps (as uint32_t arithmetic would) instead of saturating or being undefined, and every
/// kernel gives the same exact result. alpha == 0 or K == 0 only scales C (beta * C, wrapping); beta
/// == 0 writes C without reading it. Strides count ints.
inline cudaError_t igemm(int M, int N, int K, int alpha, const int* A, int lda, const int* B, int ldb, int beta,
                         int* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<int>(Op::N, Op::N, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t igemm(Op op_a, Op op_b, int M, int N, int K, int alpha, const int* A, int lda, const int* B,
                         int ldb, int beta, int* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<int>(op_a, op_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t igemm_strided_batched(Op op_a, Op op_b, int M, int N, int K, int alpha, const int* A, int lda,
                                         long long stride_a, const int* B, int ldb, long long stride_b, int beta,
                                         int* C, int ldc, long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<int>(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                           batch, stream);
}

inline cudaError_t igemm_colmajor(Op op_a, Op op_b, int M, int N, int K, int alpha, const int* A, int lda,
                                  const int* B, int ldb, int beta, int* C, int ldc, cudaStream_t stream = 0) {
  return detail::gemm<int>(op_b, op_a, N, M, K, alpha, B, ldb, 0, A, lda, 0, beta, C, ldc, 0, 1, stream);
}

inline cudaError_t igemm_colmajor_strided_batched(Op op_a, Op op_b, int M, int N, int K, int alpha, const int* A,
                                                  int lda, long long stride_a, const int* B, int ldb,
                                                  long long stride_b, int beta, int* C, int ldc,
                                                  long long stride_c, int batch, cudaStream_t stream = 0) {
  return detail::gemm<int>(op_b, op_a, N, M, K, alpha, B, ldb, stride_b, A, lda, stride_a, beta, C, ldc, stride_c,
                           batch, stream);
}

/// The name of the dispatch table serving the current device (*name = nullptr: none, the generic
/// default kernel runs there).
inline cudaError_t device_table_name(const char** name) {
  int device = 0, table = -1;
  const cudaError_t err = detail::current_table(&device, &table);
  *name = (err == cudaSuccess && table >= 0) ? detail::k_device_tables[table].name : nullptr;
  return err;
}

/// The problems tuned for the current device, of every element type (TunedProblem::dtype): up to
/// `capacity` of them into `problems` (may be null when capacity is 0), and how many there are into
/// *count (0 when no table serves it).
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

/// The kernel dgemm_strided_batched would launch (as kernel_name for float operands, below).
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const double* A, int lda, long long stride_a,
                               const double* B, int ldb, long long stride_b, const double* C, int ldc,
                               long long stride_c, int batch, const char** name) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name);
}

/// The same for igemm_strided_batched (int operands).
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const int* A, int lda, long long stride_a,
                               const int* B, int ldb, long long stride_b, const int* C, int ldc, long long stride_c,
                               int batch, const char** name) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name);
}

/// The kernel dgemm would launch (double operands).
inline cudaError_t kernel_name(int M, int N, int K, const double* A, int lda, const double* B, int ldb, const double* C,
                               int ldc, const char** name) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name);
}

/// The kernel igemm would launch (int operands).
inline cudaError_t kernel_name(int M, int N, int K, const int* A, int lda, const int* B, int ldb, const int* C, int ldc,
                               const char** name) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name);
}

/// Why the dispatch runs the kernel it runs for a call (kernel_name's `reason`): a tuned problem's
/// winner (tuned), its best kernel without requirements (tuned_portable), the cost model's choice
/// (predicted), or the generic default of the call's type and layout because no table serves the
/// device (no_table), no tuned kernel of the table computes the call's type and layout, or its batch
/// (not_served: tune them, or record the calls and tune those), the call misses the requirements of
/// every tuned kernel that computes it (requirements_missed), or none of those has a cost model
/// (not_modelled).
using DispatchReason = detail::DispatchReason;

/// A reason's name as written in code: "tuned", "not_served", ...
inline const char* dispatch_reason_name(DispatchReason reason) { return detail::dispatch_reason_name(reason); }

/// kernel_name for dgemm_strided_batched, and why (as for float operands, below).
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const double* A, int lda, long long stride_a,
                               const double* B, int ldb, long long stride_b, const double* C, int ldc,
                               long long stride_c, int batch, const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name,
                                reason);
}

/// The same for igemm_strided_batched (int operands).
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const int* A, int lda, long long stride_a,
                               const int* B, int ldb, long long stride_b, const int* C, int ldc, long long stride_c,
                               int batch, const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name,
                                reason);
}

/// The same for dgemm (double operands).
inline cudaError_t kernel_name(int M, int N, int K, const double* A, int lda, const double* B, int ldb, const double* C,
                               int ldc, const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name, reason);
}

/// The same for igemm (int operands).
inline cudaError_t kernel_name(int M, int N, int K, const int* A, int lda, const int* B, int ldb, const int* C, int ldc,
                               const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name, reason);
}

// kernel_name for float operands reports what sgemm runs, so it follows CMTUNE_SGEMM_TF32X3 as sgemm
// does (see "what sgemm computes" above).
#if defined(CMTUNE_SGEMM_TF32X3)
inline namespace sgemm_opted_in_tf32x3 {
#else
inline namespace sgemm_ieee_fp32 {
#endif

/// The kernel sgemm_strided_batched would launch on the current device for a call with these
/// arguments (alpha != 0, K >= 1; batch 1: of sgemm with op flags); *name is its instantiation, e.g.
/// "cmt_sgemm_multistage<...>", or null when no kernel computes the layout.
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const float* A, int lda, long long stride_a,
                               const float* B, int ldb, long long stride_b, const float* C, int ldc, long long stride_c,
                               int batch, const char** name) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name,
                                static_cast<DispatchReason*>(nullptr), k_sgemm_dtype);
}

/// The kernel sgemm would launch on the current device for a product (alpha != 0, K >= 1) with
/// these arguments; *name is its instantiation, e.g. "cmt_sgemm_multistage<...>".
inline cudaError_t kernel_name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, const float* C,
                               int ldc, const char** name) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name,
                                static_cast<DispatchReason*>(nullptr), k_sgemm_dtype);
}

/// kernel_name for sgemm_strided_batched, and why the dispatch chooses that kernel (*reason, set when
/// cudaSuccess is returned). *name is the generic default's name when that runs, null when the call
/// is refused (no kernel computes its type and layout); *reason says why no tuned kernel runs then.
inline cudaError_t kernel_name(Op op_a, Op op_b, int M, int N, int K, const float* A, int lda, long long stride_a,
                               const float* B, int ldb, long long stride_b, const float* C, int ldc, long long stride_c,
                               int batch, const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name,
                                reason, k_sgemm_dtype);
}

/// kernel_name for sgemm, and why (as above).
inline cudaError_t kernel_name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, const float* C,
                               int ldc, const char** name, DispatchReason* reason) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name, reason,
                                k_sgemm_dtype);
}

}  // inline namespace of CMTUNE_SGEMM_TF32X3's choice

/// The kernel sgemm_tf32x3_strided_batched would launch on the current device for a call with these
/// arguments (as kernel_name): a tf32x3 kernel, or the FP32 kernel sgemm would run where that is
/// predicted faster or no tf32x3 kernel serves the call; *reason (when not null) is that choice's.
inline cudaError_t kernel_name_tf32x3(Op op_a, Op op_b, int M, int N, int K, const float* A, int lda,
                                      long long stride_a, const float* B, int ldb, long long stride_b, const float* C,
                                      int ldc, long long stride_c, int batch, const char** name,
                                      DispatchReason* reason = nullptr) {
  return detail::kernel_name_of(op_a, op_b, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, name,
                                reason, detail::k_dtype_tf32x3);
}

/// The kernel sgemm_tf32x3 would launch for a row-major NN product with these arguments, and why.
inline cudaError_t kernel_name_tf32x3(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                      const float* C, int ldc, const char** name, DispatchReason* reason = nullptr) {
  return detail::kernel_name_of(Op::N, Op::N, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, name, reason,
                                detail::k_dtype_tf32x3);
}
