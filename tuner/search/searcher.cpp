#include "search/searcher.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <random>

namespace cmt {

namespace {

std::vector<size_t> take(const std::vector<size_t>& order, size_t& next, size_t count) {
  const size_t end = std::min(order.size(), next + count);
  std::vector<size_t> out(order.begin() + static_cast<std::ptrdiff_t>(next), order.begin() + static_cast<std::ptrdiff_t>(end));
  next = end;
  return out;
}

}  // namespace

std::vector<size_t> ExhaustiveSearcher::propose(size_t count) {
  std::vector<size_t> out;
  for (; m_next < m_size && out.size() < count; ++m_next) out.push_back(m_next);
  return out;
}

std::string ExhaustiveSearcher::describe() const { return fmt::format("exhaustive, {} candidates", m_size); }

SampledSearcher::SampledSearcher(size_t space_size, uint64_t seed, std::optional<int64_t> budget) : m_seed(seed) {
  m_order.resize(space_size);
  std::iota(m_order.begin(), m_order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(m_order.begin(), m_order.end(), rng);
  if (budget && *budget < static_cast<int64_t>(m_order.size()))
    m_order.resize(static_cast<size_t>(std::max<int64_t>(0, *budget)));
}

std::vector<size_t> SampledSearcher::propose(size_t count) { return take(m_order, m_next, count); }

std::string SampledSearcher::describe() const {
  return fmt::format("seeded sample (seed {}), {} candidates", m_seed, m_order.size());
}

std::unique_ptr<Searcher> make_searcher(size_t space_size, std::optional<int64_t> budget, bool time_limited,
                                        uint64_t seed) {
  if (budget || time_limited) return std::make_unique<SampledSearcher>(space_size, seed, budget);
  return std::make_unique<ExhaustiveSearcher>(space_size);
}

}  // namespace cmt
