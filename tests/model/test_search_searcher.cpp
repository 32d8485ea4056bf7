// The search stage's strategies: the exhaustive order and the seeded sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "search/searcher.hpp"

namespace cmt {
namespace {

std::vector<size_t> drain(Searcher& s, size_t batch) {
  std::vector<size_t> out;
  for (auto next = s.propose(batch); !next.empty(); next = s.propose(batch)) {
    EXPECT_LE(next.size(), batch);
    out.insert(out.end(), next.begin(), next.end());
  }
  return out;
}

TEST(Searcher, ExhaustiveProposesTheSpaceInOrderInBatches) {
  ExhaustiveSearcher s(10);
  EXPECT_EQ(s.planned(), 10u);
  std::vector<size_t> all(10);
  std::iota(all.begin(), all.end(), size_t{0});
  EXPECT_EQ(drain(s, 3), all);
  EXPECT_TRUE(s.propose(5).empty());
}

TEST(Searcher, SampleIsASeededPermutationCutToTheBudget) {
  SampledSearcher a(100, 7, std::nullopt), b(100, 7, std::nullopt), c(100, 8, std::nullopt);
  const auto order = drain(a, 16);
  EXPECT_EQ(order, drain(b, 5));  // the batch size does not change the order
  EXPECT_NE(order, drain(c, 16));
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), 100u);
  // The order of a seeded std::shuffle of the space: runs sampled before keep their candidates.
  std::vector<size_t> expected(100);
  std::iota(expected.begin(), expected.end(), size_t{0});
  std::mt19937_64 rng(7);
  std::shuffle(expected.begin(), expected.end(), rng);
  EXPECT_EQ(order, expected);

  SampledSearcher budget(100, 7, int64_t{12});
  EXPECT_EQ(budget.planned(), 12u);
  const auto cut = drain(budget, 5);
  EXPECT_EQ(cut, std::vector<size_t>(order.begin(), order.begin() + 12));
}

TEST(Searcher, TheRunsStrategyFollowsItsLimits) {
  EXPECT_EQ(make_searcher(50, std::nullopt, false, 1)->planned(), 50u);
  EXPECT_NE(make_searcher(50, std::nullopt, false, 1)->describe().find("exhaustive"), std::string::npos);
  EXPECT_EQ(make_searcher(50, int64_t{5}, false, 1)->planned(), 5u);
  EXPECT_NE(make_searcher(50, std::nullopt, true, 1)->describe().find("seeded sample"), std::string::npos);
  EXPECT_EQ(make_searcher(50, int64_t{500}, false, 1)->planned(), 50u);
}

}  // namespace
}  // namespace cmt
