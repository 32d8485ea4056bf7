// Shards: `tune --shard I/N` takes a deterministic share of a run's work, so that N independent
// processes (a Slurm job array, each with its own database) do the work of one run between them and
// `db merge` joins their databases.
//
// The unit of work is the candidate: shard I of N takes the candidates at positions I, I + N,
// I + 2N, ... of the enumerated space and measures each on every requested problem. Candidates and
// not problems, because a run's problems differ in cost by orders of magnitude (a 256^3 problem and
// an 8192^3 one) and may be one alone, while a space has hundreds of candidates, and those of one
// family sit together in it, so taking every N-th spreads every family, and the cost, evenly over
// the shards. Each shard times cuBLAS on the problems it measures and re-times its own leaders
// against it; `db merge` ranks the union with the one ranking (record/ranking.hpp). Calibration
// (search/calibration.hpp) runs in each shard on its own share and its own leaders.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cmt {

struct Shard {
  size_t index = 0;   // 0 .. count - 1
  size_t count = 1;   // 1: the whole run
  std::string to_string() const;   // "2/8"
};

/// Parses "I/N" (0 <= I < N); throws UsageError with a one-line reason otherwise.
Shard parse_shard(std::string_view text);

/// Whether the work item at `position` belongs to `shard`.
bool in_shard(size_t position, const Shard& shard);

/// The positions of `size` work items that belong to `shard`, in order: disjoint across the shards
/// of one count, and together every position once. Empty when the shard's index is at or past `size`.
std::vector<size_t> shard_positions(size_t size, const Shard& shard);

}  // namespace cmt
