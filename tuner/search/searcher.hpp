// The search stage's seam: which candidates of the space to try, in which order. The pipeline asks
// for a few at a time, keeping the compiler ahead of the GPU, and reports each candidate's trials
// back, so a strategy that learns from them (model-guided search) plugs in here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/records.hpp"

namespace cmt {

class Searcher {
 public:
  virtual ~Searcher() = default;
  /// Up to `count` more candidates to try, as positions in the space; empty when the search is over.
  virtual std::vector<size_t> propose(size_t count) = 0;
  /// The trials of candidate `index` on every problem, once recorded.
  virtual void observe(size_t index, const std::vector<TrialRecord>& trials) {
    (void)index;
    (void)trials;
  }
  /// How many candidates it proposes in all (for progress and the summary).
  virtual size_t planned() const = 0;
  /// One line for the log, e.g. "exhaustive, 1579 candidates".
  virtual std::string describe() const = 0;
};

/// Every candidate, in the space's order.
class ExhaustiveSearcher final : public Searcher {
 public:
  explicit ExhaustiveSearcher(size_t space_size) : m_size(space_size) {}
  std::vector<size_t> propose(size_t count) override;
  size_t planned() const override { return m_size; }
  std::string describe() const override;

 private:
  size_t m_size;
  size_t m_next = 0;
};

/// A seeded random order of the space, cut to `budget` candidates when given: the same seed and
/// space always give the same candidates in the same order.
class SampledSearcher final : public Searcher {
 public:
  SampledSearcher(size_t space_size, uint64_t seed, std::optional<int64_t> budget);
  std::vector<size_t> propose(size_t count) override;
  size_t planned() const override { return m_order.size(); }
  std::string describe() const override;

 private:
  std::vector<size_t> m_order;
  size_t m_next = 0;
  uint64_t m_seed;
};

/// The strategy for a run: a sample when a budget or a time limit is set (so a cut-off run still
/// covers the whole space evenly), else the exhaustive search.
std::unique_ptr<Searcher> make_searcher(size_t space_size, std::optional<int64_t> budget, bool time_limited,
                                        uint64_t seed);

}  // namespace cmt
