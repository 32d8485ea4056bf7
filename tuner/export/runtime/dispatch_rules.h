// The dispatch rules: which tuned entry and which kernel serve a call. One definition, two users:
// cm-tune compiles it into `query` and `export` (tuner/export/dispatch.cpp), and `cm-tune export`
// pastes it into every generated header inside NS::detail, where sgemm, dgemm and igemm use it. So it
// stays plain C++11 with no includes and no namespace of its own: the includer wraps it in one. Host
// code only.

/// The largest power of two dividing every one of the addresses whose bits are OR-ed in `bits`,
/// capped at 256 (what cudaMalloc guarantees).
inline int alignment_of_bits(unsigned long long bits) {
  const unsigned long long lowest = bits & (~bits + 1);
  return (bits == 0 || lowest >= 256) ? 256 : static_cast<int>(lowest);
}

/// Whether a call meets a kernel's requirements: A, B and C aligned to align_bytes (`alignment` as
/// alignment_of_bits gives it), and lda, ldb and ldc multiples of ld_multiple.
inline bool requirements_met(long long align_bytes, long long ld_multiple, long long lda, long long ldb, long long ldc,
                             long long alignment) {
  const long long multiple = ld_multiple > 1 ? ld_multiple : 1;
  return alignment >= align_bytes && lda % multiple == 0 && ldb % multiple == 0 && ldc % multiple == 0;
}

/// A layout as the header numbers it: 2 * op(A) transposed + op(B) transposed (nn 0, nt 1, tn 2, tt 3).
inline int layout_index(bool trans_a, bool trans_b) { return (trans_a ? 2 : 0) + (trans_b ? 1 : 0); }

/// Which operands a batched call broadcasts: 1 when A's stride is 0, 2 when B's is, 3 for both;
/// 0 for an unbatched call.
inline int broadcast_bits(long long batch, long long stride_a, long long stride_b) {
  return batch > 1 ? (stride_a == 0 ? 1 : 0) + (stride_b == 0 ? 2 : 0) : 0;
}

/// Whether a kernel computes a call at all: it was built for the call's element type (0 f32, 1 f64,
/// 2 i32) or precision class (3 tf32x3) and layout, and takes a batch when the call has one.
inline bool kernel_serves(int kernel_layout, int kernel_batched, int kernel_dtype, int layout, long long batch,
                          int dtype) {
  return kernel_dtype == dtype && kernel_layout == layout && (batch <= 1 || kernel_batched != 0);
}

/// Whether one of a table's models is of a kernel that computes the call (kernel_serves).
template <class Model, class Kernel>
inline bool models_serve(const Model* models, int model_count, const Kernel* kernels, int dtype, int layout,
                         long long batch) {
  for (int i = 0; i < model_count; ++i) {
    const Kernel& k = kernels[models[i].kernel];
    if (kernel_serves(k.layout, k.batched, k.dtype, layout, batch, dtype)) return true;
  }
  return false;
}

/// Whether a device table computes calls of an element type, layout and batch with a tuned kernel:
/// one that its entries (primary, portable) or its models name and that kernel_serves them. A table
/// names only kernels measured on its device (a generic default build that won or was measured counts
/// as tuned there); when none serves, every such call runs the generic default of its type and layout.
/// `Entry` has .primary and .portable, `Model` .kernel, `Kernel` .layout, .batched and .dtype.
template <class Entry, class Model, class Kernel>
inline bool table_serves(const Entry* entries, int entry_count, const Model* models, int model_count,
                         const Kernel* kernels, int dtype, int layout, long long batch) {
  const auto serves = [&](int k) {
    return k >= 0 && kernel_serves(kernels[k].layout, kernels[k].batched, kernels[k].dtype, layout, batch, dtype);
  };
  for (int i = 0; i < entry_count; ++i)
    if (serves(entries[i].primary) || serves(entries[i].portable)) return true;
  return models_serve(models, model_count, kernels, dtype, layout, batch);
}

/// Why a call runs the kernel it runs. The last four run the generic default of the call's type and
/// layout (none: the call is refused) and say why no tuned kernel runs.
enum class DispatchReason {
  tuned = 0,                // a tuned problem of the table: its measured winner
  tuned_portable = 1,       // a tuned problem, but the call misses its winner's requirements: the
                            // problem's best kernel without requirements
  predicted = 2,            // no tuned problem: the kernel the cost model predicts fastest
  no_table = 3,             // no table serves the device
  not_served = 4,           // no tuned kernel of the table computes the call's type and layout (and batch)
  requirements_missed = 5,  // tuned kernels compute it, but the call misses the requirements of all of them
  not_modelled = 6          // tuned kernels compute it, but none of them has a cost model
};

/// The reason for a call of a tuned problem: whether it meets the winner's requirements, and the
/// problem's portable kernel (-1: none, the generic default runs).
inline DispatchReason entry_reason(bool primary_requirements_met, int portable) {
  if (primary_requirements_met) return DispatchReason::tuned;
  return portable >= 0 ? DispatchReason::tuned_portable : DispatchReason::requirements_missed;
}

/// The reason for a call that neither a tuned problem nor a model serves, from table_serves and
/// models_serve for the call.
inline DispatchReason fallback_reason(bool table_serves_call, bool models_serve_call) {
  if (!table_serves_call) return DispatchReason::not_served;
  return models_serve_call ? DispatchReason::requirements_missed : DispatchReason::not_modelled;
}

/// The reason's name, as written in code: "tuned", "not_served", ...
inline const char* dispatch_reason_name(DispatchReason reason) {
  switch (reason) {
    case DispatchReason::tuned: return "tuned";
    case DispatchReason::tuned_portable: return "tuned_portable";
    case DispatchReason::predicted: return "predicted";
    case DispatchReason::no_table: return "no_table";
    case DispatchReason::not_served: return "not_served";
    case DispatchReason::requirements_missed: return "requirements_missed";
    case DispatchReason::not_modelled: return "not_modelled";
  }
  return "unknown";
}

/// The element type an opt-in precision class stores its elements as, whose dispatch its calls fall back
/// to (tf32x3, 3: f32, 0); -1 for an element type, whose calls have no other dispatch. An opted-in
/// call (sgemm_tf32x3) runs the class's kernel only where opt_in_runs_class says so.
inline int opt_in_storage(int dtype) { return dtype == 3 ? 0 : -1; }

/// Whether an opted-in call runs its class's choice (class_kernel, predicted class_us) rather than its
/// storage type's (storage_kernel, predicted storage_us); a time below 0 is unknown (a kernel without a
/// model on the device: a generic default never measured there). The class runs when it has a kernel
/// with a prediction and that prediction is lower than the storage type's, or the storage type's kernel
/// has none (or there is no such kernel); ties go to the storage type. So an opted-in call is never
/// predicted slower than the call of its storage type, and where no kernel of the class serves it (the
/// table, the layout, the batch or the call's requirements: no generic default computes a class) it is
/// exactly that call.
inline bool opt_in_runs_class(int class_kernel, double class_us, int storage_kernel, double storage_us) {
  if (class_kernel < 0 || class_us < 0) return false;
  if (storage_kernel < 0 || storage_us < 0) return true;
  return class_us < storage_us;
}

/// The generic default kernel of a call's element type and layout from a table of them
/// (generic[dtype][layout], -1 where none), when it serves the call (kernel_serves; `Kernel` has
/// .layout, .batched and .dtype); else -1, and the call is refused.
template <class Kernel>
inline int generic_kernel(const int (*generic)[4], int dtype_count, const Kernel* kernels, int dtype, int layout,
                          long long batch) {
  if (dtype < 0 || dtype >= dtype_count || layout < 0 || layout > 3) return -1;
  const int g = generic[dtype][layout];
  const bool serves = g >= 0 && kernel_serves(kernels[g].layout, kernels[g].batched, kernels[g].dtype, layout, batch,
                                              dtype);
  return serves ? g : -1;
}

/// Which kernel serves a call of a tuned problem from its entry: the entry's primary kernel when the
/// call meets the primary's requirements, else the entry's portable kernel (no requirements), else
/// the generic default. Kernels are indices; portable < 0 when the entry has none.
inline int entry_kernel(int primary, bool primary_requirements_met, int portable, int generic) {
  if (primary_requirements_met) return primary;
  return portable >= 0 ? portable : generic;
}

// ---- the cost model (docs/EXPORT.md, "How the dispatch predicts") ----
// A call no tuned problem matches exactly runs the exported kernel with the least predicted time.
// Each kernel's prediction is a sum of four features of the call's shape, weighted by coefficients
// fitted to that kernel's measured trials on the device: t = c0 + c1*work + c2*steps + c3*outputs.

constexpr int k_model_terms = 4;

/// ceil(a / b) for a >= 0, b >= 1.
inline long long ceil_div_ll(long long a, long long b) { return (a + b - 1) / b; }

/// The model's features for a kernel of tile_m x tile_n blocks, grid_z blocks per tile (K split
/// among them), problems_per_block problems per block (0 or 1: one) and blocks_per_sm resident blocks
/// per SM, on sm_count SMs, at M x N x K, `batch` times (the batch multiplies the grid, divided by
/// the problems per block, and a block does the work of its problems in turn):
///  [0] 1: launch and fixed costs;
///  [1] work: millions of multiply-adds the busiest SM does (its blocks x tile x K per block);
///  [2] steps: thousands of k iterations on the critical path (waves x K per block), the latency a
///      kernel pays when its SMs hold too few blocks to hide it;
///  [3] outputs: thousands of C elements the busiest SM writes (tile set-up and the store of C).
inline void model_features(long long M, long long N, long long K, long long batch, int tile_m, int tile_n, int grid_z,
                           int problems_per_block, int blocks_per_sm, int sm_count, double features[k_model_terms]) {
  const long long z = grid_z > 1 ? grid_z : 1;
  const long long sms = sm_count > 1 ? sm_count : 1;
  const long long problems = batch > 1 ? batch : 1;
  // The problems one block computes: problems_per_block, or the whole batch when it is smaller.
  const long long per_block =
      problems_per_block > 1 ? (problems_per_block < problems ? problems_per_block : problems) : 1;
  const long long blocks = ceil_div_ll(M, tile_m) * ceil_div_ll(N, tile_n) * z * ceil_div_ll(problems, per_block);
  const long long k_per_block = ceil_div_ll(K, z) * per_block;
  const long long busiest = ceil_div_ll(blocks, sms);
  const long long waves = ceil_div_ll(blocks, sms * (blocks_per_sm > 1 ? blocks_per_sm : 1));
  const double tile = static_cast<double>(tile_m) * static_cast<double>(tile_n);
  features[0] = 1.0;
  features[1] = static_cast<double>(busiest) * tile * static_cast<double>(k_per_block) * 1e-6;
  features[2] = static_cast<double>(waves) * static_cast<double>(k_per_block) * 1e-3;
  features[3] = static_cast<double>(busiest) / static_cast<double>(z) * tile * static_cast<double>(per_block) * 1e-3;
}

/// Predicted microseconds: the coefficients' dot product with the features, in term order.
inline double predicted_us(const double coef[k_model_terms], const double features[k_model_terms]) {
  double t = 0;
  for (int i = 0; i < k_model_terms; ++i) t += coef[i] * features[i];
  return t;
}

/// Whether M x N x K lies in a model's domain widened by `factor`: within that factor of the range of
/// shapes its kernel was measured on, in each dimension. Outside it the fit is an extrapolation.
template <class Model>
inline bool in_model_domain(const Model& m, long long M, long long N, long long K, long long factor) {
  return factor * M >= m.min_m && M <= factor * m.max_m && factor * N >= m.min_n && N <= factor * m.max_n &&
         factor * K >= m.min_k && K <= factor * m.max_k;
}

/// The domain widenings best_predicted tries in turn; the last admits every model.
constexpr int k_domain_passes = 4;
inline long long domain_factor(int pass) { return pass == 0 ? 2 : pass == 1 ? 8 : pass == 2 ? 64 : 0; }

/// A model's predicted microseconds at M x N x K x batch, for its kernel (kernels[m.kernel]).
template <class Model, class Kernel>
inline double model_us(const Model& m, const Kernel* kernels, int sm_count, long long M, long long N, long long K,
                       long long batch) {
  const Kernel& k = kernels[m.kernel];
  double f[k_model_terms];
  model_features(M, N, K, batch, k.tile_m, k.tile_n, k.grid_z, k.problems_per_block, m.blocks_per_sm, sm_count, f);
  return predicted_us(m.coef, f);
}

/// The predicted microseconds of `kernel` (an index into kernels) at M x N x K x batch by its model in
/// the table, whatever the domain; -1 when the table has no model of it (a generic default that was
/// never measured on the device). The first model of the kernel counts (a table has one per kernel).
template <class Model, class Kernel>
inline double kernel_model_us(const Model* models, int count, const Kernel* kernels, int sm_count, int kernel,
                              long long M, long long N, long long K, long long batch) {
  if (kernel < 0) return -1;
  for (int i = 0; i < count; ++i)
    if (models[i].kernel == kernel) return model_us(models[i], kernels, sm_count, M, N, K, batch);
  return -1;
}

/// The position (in models) of the model with the least predicted time at M x N x K x batch among
/// those whose kernel the call may run (`usable(kernel index)`: its layout, batching and requirements) and whose domain holds the shape: first
/// within a factor of 2 of the shapes each was measured on, else 8, else 64, else among every
/// usable model. Ties go to the earlier model. -1: none usable. Models are anything with .kernel,
/// .blocks_per_sm, .coef[] and the domain's .min_m ... .max_k; kernels anything with .tile_m,
/// .tile_n, .grid_z and .problems_per_block. *predicted gets the winner's time, *pass the widening
/// that admitted it.
template <class Model, class Kernel, class Usable>
inline int best_predicted(const Model* models, int count, const Kernel* kernels, int sm_count, long long M, long long N,
                          long long K, long long batch, Usable usable, double* predicted, int* pass_used = 0) {
  int best = -1;
  double best_us = 0;
  int pass = 0;
  for (; pass < k_domain_passes && best < 0; ++pass) {
    const long long factor = domain_factor(pass);
    for (int i = 0; i < count; ++i) {
      const Model& m = models[i];
      if (factor > 0 && !in_model_domain(m, M, N, K, factor)) continue;
      if (!usable(m.kernel)) continue;
      const double us = model_us(m, kernels, sm_count, M, N, K, batch);
      if (best < 0 || us < best_us) {
        best = i;
        best_us = us;
      }
    }
  }
  if (predicted != 0) *predicted = best_us;
  if (pass_used != 0) *pass_used = pass - 1;
  return best;
}

/// The position of the entry tuned for exactly this call, or -1: M x N x K, the layout, the batch,
/// which operands are broadcast, and the element type (entries[i].problem has .m, .n, .k, .layout,
/// .batch, .broadcast and .dtype as layout_index and broadcast_bits give them). Other strides do not
/// matter.
template <class Entry>
inline int exact_entry(const Entry* entries, int count, long long M, long long N, long long K, int layout,
                       long long batch, int broadcast, int dtype) {
  for (int i = 0; i < count; ++i) {
    const auto& p = entries[i].problem;
    if (p.m == M && p.n == N && p.k == K && p.layout == layout && p.batch == (batch > 1 ? batch : 1) &&
        p.broadcast == broadcast && p.dtype == dtype)
      return i;
  }
  return -1;
}

// ---- split K (docs/EXPORT.md, "Long K: split K") ----
// An unbatched call whose best kernel leaves SMs idle (less than one wave of blocks) and whose K is
// long may run as `splits` products over slices of K/splits: one strided batch of `splits` problems
// of M x N x K/splits into a workspace (alpha 1, beta 0), then a kernel that sums the slices in a
// fixed order into C (alpha * sum + beta * C). The batch is predicted by its kernel's model like any
// batch, and the sum at the device's memory bandwidth.

/// The slice counts tried, in order.
constexpr int k_split_count_choices = 5;
inline int split_count_choice(int i) { return 2 << i; }   // 2, 4, 8, 16, 32
/// A slice's K is at least this: shorter slices gain less than the sum costs.
constexpr long long k_min_split_slice_k = 256;
/// A split runs only when it is predicted this much faster than the best unsplit kernel: both
/// predictions are fitted, and the split's also extrapolates to a batch of K slices (docs/EXPORT.md
/// says how this margin was chosen).
constexpr double k_split_gain = 0.85;
/// Microseconds a launch of the sum costs beyond its memory traffic.
constexpr double k_split_sum_launch_us = 3.0;

/// Whether a call may split K into `splits` slices: unbatched, K a multiple of `splits`, and slices of
/// at least k_min_split_slice_k.
inline bool split_allowed(long long K, long long batch, int splits) {
  return batch <= 1 && splits > 1 && K % splits == 0 && K / splits >= k_min_split_slice_k;
}

/// The strides, in elements, between the slices of A and B (a strided batch over K) for a layout and
/// a slice of slice_k: along the columns of a row-major operand whose rows run over K (A in nn and
/// nt, B in nt and tt), else along its rows.
inline long long split_stride_a(int layout, long long slice_k, long long lda) {
  return (layout & 2) != 0 ? slice_k * lda : slice_k;
}
inline long long split_stride_b(int layout, long long slice_k, long long ldb) {
  return (layout & 1) != 0 ? slice_k : slice_k * ldb;
}

/// Bytes of an element type (0 f32, 1 f64, 2 i32; 3 tf32x3 stores f32).
inline int dtype_bytes_of(int dtype) { return dtype == 1 ? 8 : 4; }

/// The alignment the slice calls of a split have: the call's (A, B and C), and the byte strides
/// between slices of A and B and of the workspace's M x N slices.
inline long long split_alignment(long long call_alignment, int layout, long long slice_k, long long lda, long long ldb,
                                 long long M, long long N, int element_bytes) {
  const long long strides = split_stride_a(layout, slice_k, lda) | split_stride_b(layout, slice_k, ldb) | (M * N);
  return alignment_of_bits(static_cast<unsigned long long>(call_alignment) |
                           static_cast<unsigned long long>(strides * element_bytes));
}

/// Whether the slice calls of a split of a call into `splits` may run a kernel (best_split's
/// `usable_slices`): the kernel computes the call's type and layout in batches, and the slices (A and
/// B one slice of K apart, the M x N workspace with leading dimension N) meet its requirements.
inline bool slices_usable(int kernel_layout, int kernel_batched, int kernel_dtype, long long align_bytes,
                          long long ld_multiple, int layout, int dtype, long long call_alignment, long long M,
                          long long N, long long K, long long lda, long long ldb, int splits) {
  const long long alignment = split_alignment(call_alignment, layout, K / splits, lda, ldb, M, N, dtype_bytes_of(dtype));
  return kernel_serves(kernel_layout, kernel_batched, kernel_dtype, layout, splits, dtype) &&
         requirements_met(align_bytes, ld_multiple, lda, ldb, N, alignment);
}

/// The predicted microseconds of the sum of `splits` slices of M x N elements into C: it reads every
/// slice, and C unless beta is 0 (which the dispatch does not know: C is counted), and writes C, at
/// bytes_per_us, plus a launch.
inline double split_sum_us(long long M, long long N, int splits, int element_bytes, double bytes_per_us) {
  const double bytes = static_cast<double>(M) * static_cast<double>(N) * element_bytes * (splits + 2);
  return k_split_sum_launch_us + bytes / bytes_per_us;
}

/// Whether the best unsplit kernel leaves SMs idle: fewer blocks than one wave of it.
template <class Model, class Kernel>
inline bool leaves_sms_idle(const Model& m, const Kernel* kernels, int sm_count, long long M, long long N) {
  const Kernel& k = kernels[m.kernel];
  const long long blocks = ceil_div_ll(M, k.tile_m) * ceil_div_ll(N, k.tile_n) * (k.grid_z > 1 ? k.grid_z : 1);
  return blocks < static_cast<long long>(sm_count) * (m.blocks_per_sm > 1 ? m.blocks_per_sm : 1);
}

/// The split for an unbatched call whose best unsplit model is `unsplit` (its position in models,
/// predicted unsplit_us): the model (position) and slice count with the least predicted time of a
/// batch of slices plus their sum, among the models whose kernel a slice call may run
/// (`usable_slices(kernel, splits)`: a batched kernel of the call's type and layout whose requirements
/// the slices meet) and whose domain (a factor of 2) holds M x N x K/splits; when that time is below
/// k_split_gain of unsplit_us and the unsplit kernel leaves SMs idle. -1 (and *splits 1) otherwise,
/// or when bytes_per_us is 0 (a table without a bandwidth). *predicted gets the split's time.
template <class Model, class Kernel, class UsableSlices>
inline int best_split(const Model* models, int count, const Kernel* kernels, int sm_count, double bytes_per_us,
                      int element_bytes, long long M, long long N, long long K, long long batch, int unsplit,
                      double unsplit_us, UsableSlices usable_slices, int* splits, double* predicted) {
  *splits = 1;
  if (bytes_per_us <= 0 || unsplit < 0 || batch > 1) return -1;
  if (!leaves_sms_idle(models[unsplit], kernels, sm_count, M, N)) return -1;
  int best = -1;
  double best_us = k_split_gain * unsplit_us;
  for (int c = 0; c < k_split_count_choices; ++c) {
    const int s = split_count_choice(c);
    if (!split_allowed(K, batch, s)) continue;
    const double sum_us = split_sum_us(M, N, s, element_bytes, bytes_per_us);
    for (int i = 0; i < count; ++i) {
      const Model& m = models[i];
      if (!in_model_domain(m, M, N, K / s, domain_factor(0)) || !usable_slices(m.kernel, s)) continue;
      const double us = model_us(m, kernels, sm_count, M, N, K / s, s) + sum_us;
      if (us < best_us) {
        best = i;
        best_us = us;
        *splits = s;
      }
    }
  }
  if (predicted != 0 && best >= 0) *predicted = best_us;
  return best;
}
