// Small value types used across the tuner: problems, parameter values, outcomes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmt {

/// Element type of A, B, C, alpha and beta (and the accumulator), with its precision class: FP32,
/// FP64, INT32, whose products and sums wrap modulo 2^32 (two's complement), and tf32x3: FP32 data
/// multiplied on the tensor cores as three TF32 products (core/dtype.hpp, the table of what each is).
enum class DType : uint8_t { f32 = 0, f64 = 1, i32 = 2, tf32x3 = 3 };

/// "f32", "f64", "i32" or "tf32x3" (core/dtype.hpp: the table of what each type is).
std::string_view dtype_name(DType dtype);
/// The DType of a name of dtype_name (either case); nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view name);
/// Bytes of one element: 4, 8, 4 or 4.
int dtype_bytes(DType dtype);

/// One GEMM problem over row-major storage: C (MxN) = alpha * op(A) (MxK) * op(B) (KxN) + beta * C,
/// `batch` times. op(X) is X, or X transposed when trans_x (A is then stored K x M, B N x K). A
/// batched problem's matrices lie `stride_x` elements apart; a stride of 0 broadcasts one A or B to
/// the whole batch. With batch == 1 the strides are 0 (unused). Strides count elements of `dtype`.
struct Problem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool trans_a = false;
  bool trans_b = false;
  int64_t batch = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
  DType dtype = DType::f32;

  /// A batched problem with the packed strides (m*k, k*n, m*n); the strides are 0 when batch == 1.
  static Problem make(int64_t m, int64_t n, int64_t k, bool trans_a = false, bool trans_b = false,
                      int64_t batch = 1, DType dtype = DType::f32);

  /// "nn", "nt", "tn" or "tt": op(A), op(B).
  std::string_view layout() const;
  /// Strides of the packed batch: one matrix after another.
  int64_t packed_stride_a() const { return m * k; }
  int64_t packed_stride_b() const { return k * n; }
  int64_t packed_stride_c() const { return m * n; }
  bool batched() const { return batch > 1; }

  /// "MxNxK", the canonical spelling used in the database and on the command line, followed by
  /// ":LAYOUT" unless nn, ":DTYPE" unless f32, "*BATCH" when batched, and ":sa=S", ":sb=S", ":sc=S"
  /// for each stride that is not the packed one: "1024x1024x1024", "512x512x64:tn:f64*16:sb=0".
  std::string to_string() const;
  /// "MxNxK" alone.
  std::string shape_string() const;
  /// Operations of the whole batch (floating-point, or integer for i32): 2*M*N*K*batch.
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  }
  bool operator==(const Problem& o) const;
  bool operator!=(const Problem& o) const { return !(*this == o); }
  bool operator<(const Problem& o) const;
};

/// The four layouts, in order: nn, nt, tn, tt.
constexpr std::string_view k_layout_names[] = {"nn", "nt", "tn", "tt"};
/// (trans_a, trans_b) of "nn", "nt", "tn" or "tt" (either case); nullopt for anything else.
std::optional<std::pair<bool, bool>> parse_layout(std::string_view name);
/// The name of a layout.
std::string_view layout_name(bool trans_a, bool trans_b);

/// Parses the canonical spelling of Problem::to_string (and "M" alone for MxMxM). Dimensions and
/// the batch must be in [1, max_dimension] resp. [1, max_batch], strides >= 0; a stride of C below
/// the packed one, or a batch of 1 with strides, is an error. Throws UsageError naming `token` and
/// `where` ("in --sizes").
Problem parse_problem(std::string_view token, int64_t max_dimension, int64_t max_batch, std::string_view where = {});

/// Why the problem's strides cannot hold its batch (C matrices overlap, an A or B stride that is
/// neither 0 nor at least the matrix's size), or an empty string when they can.
std::string stride_problem(const Problem& p);

/// Parameter values of one candidate, in the template's declared parameter order.
using ParamValues = std::vector<std::pair<std::string, int64_t>>;

/// "BM=128,BN=64,..." in declared order.
std::string params_to_string(const ParamValues& values);
/// "blocktile2d[BM=128,BN=64,...]": a kernel as trials, winners and candidates name it (the template
/// and its params_to_string).
std::string kernel_label(std::string_view template_name, std::string_view params);
/// Inverse of params_to_string; throws UsageError naming the bad item.
ParamValues params_from_string(std::string_view text);
/// Looks a value up by name.
std::optional<int64_t> find_param(const ParamValues& values, std::string_view name);

/// What happened to one candidate on one problem.
enum class Outcome { ok, compile_error, launch_error, wrong, abandoned, skipped, crashed, timeout };
/// Every outcome, in the enum's order (a report's columns, a tally per outcome).
inline constexpr Outcome k_outcomes[] = {Outcome::ok, Outcome::compile_error, Outcome::launch_error,
                                         Outcome::wrong, Outcome::abandoned, Outcome::skipped,
                                         Outcome::crashed, Outcome::timeout};

std::string_view to_string(Outcome outcome);
/// Throws UsageError for an unknown name.
Outcome outcome_from_string(std::string_view name);

/// Launch shape and input requirements of one candidate, evaluated from its descriptor.
struct LaunchShape {
  int64_t threads = 0;         // threads per block (1-D blocks)
  int64_t tile_m = 0;          // rows of C per block
  int64_t tile_n = 0;          // columns of C per block
  int64_t dynamic_smem = 0;    // bytes of dynamic shared memory
  int64_t grid_z = 1;          // blocks along z per tile (K split across a thread-block cluster)
  /// Consecutive problems of a batch each block computes its tile of (a family that declares
  /// [launch] problems_per_block; 1 for every other one): grid z is grid_z * ceil(batch / this).
  int64_t problems_per_block = 1;
  /// 1: the kernel reads A and B through TMA and takes two tensor maps after the fifteen standard
  /// arguments ([launch] tensor_maps), which the launcher builds for each call (cuda/tensor_map.hpp):
  /// a K-major operand in boxes of 32 k by its tile's rows (tile_m or tile_n), the other in 32 x 32
  /// boxes, both in the 128-byte swizzle. 0: none.
  int64_t tensor_maps = 0;
};

/// One launch of a batch: the problems [first, first + count) of it, on a grid of z extent grid_z
/// (the launch shape's grid_z times ceil(count / problems_per_block)).
struct BatchLaunch {
  int64_t first = 0;
  int64_t count = 0;
  int64_t grid_z = 0;
};

/// The most blocks a grid may have along z.
constexpr int64_t k_max_grid_z = 65535;
/// The most problems per block a descriptor may ask for: a launch of k_max_grid_z blocks along z
/// then still counts its problems in an int (the kernels' `batch`).
constexpr int64_t k_max_problems_per_block = 4096;

/// The launches that run `batch` problems with a launch shape: each grid's z extent stays within
/// k_max_grid_z, every launch but the last takes the most problems that allows, and each launch
/// passes its own count (the kernel's `batch`). None for batch < 1.
std::vector<BatchLaunch> batch_launches(const LaunchShape& shape, int64_t batch);

/// What a candidate needs from its inputs; dispatch checks these before launching it.
struct Requirements {
  int64_t align_bytes = 4;     // base alignment of A, B and C
  int64_t ld_multiple = 1;     // lda, ldb and ldc must be multiples of this
  bool none() const { return align_bytes <= 4 && ld_multiple <= 1; }
  std::string to_string() const;
};

}  // namespace cmt
