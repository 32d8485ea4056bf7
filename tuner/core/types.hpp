// Small value types used across the tuner: problems, parameter values, outcomes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmt {

/// One GEMM problem: C (MxN) = alpha * A (MxK) * B (KxN) + beta * C, all row-major.
struct Problem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;

  /// "MxNxK", the canonical spelling used in the database and on the command line.
  std::string to_string() const;
  /// Floating-point operations of one product: 2*M*N*K.
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  bool operator==(const Problem& o) const { return m == o.m && n == o.n && k == o.k; }
  bool operator<(const Problem& o) const;
};

/// Parameter values of one candidate, in the template's declared parameter order.
using ParamValues = std::vector<std::pair<std::string, int64_t>>;

/// "BM=128,BN=64,..." in declared order.
std::string params_to_string(const ParamValues& values);
/// Inverse of params_to_string; throws UsageError naming the bad item.
ParamValues params_from_string(std::string_view text);
/// Looks a value up by name.
std::optional<int64_t> find_param(const ParamValues& values, std::string_view name);

/// What happened to one candidate on one problem.
enum class Outcome { ok, compile_error, launch_error, wrong, abandoned, skipped, crashed, timeout };

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
};

/// What a candidate needs from its inputs; dispatch checks these before launching it.
struct Requirements {
  int64_t align_bytes = 4;     // base alignment of A, B and C
  int64_t ld_multiple = 1;     // lda, ldb and ldc must be multiples of this
  bool none() const { return align_bytes <= 4 && ld_multiple <= 1; }
  std::string to_string() const;
};

}  // namespace cmt
