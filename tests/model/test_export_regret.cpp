// bench --regret's report (export/regret.hpp) on the held-out fixture, whose kernels' times follow
// known formulas: what is timed at a call, and the regret the formulas give. The timing itself is the
// bench's, on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "export/regret.hpp"
#include "held_out_fixture.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

using namespace cmt;
using test::FormulaKernel;
using test::HeldOutFixture;

struct Built {
  test::TempDir dir;
  HeldOutFixture fixture;
  ExportModel model;
  Built() : model(built(dir, fixture)) {}
  static ExportModel built(const test::TempDir& dir, HeldOutFixture& fixture) { return fixture.export_model(dir / "t.db"); }
  const FormulaKernel* formula(int kernel) const {
    const std::string& name = model.kernels.at(static_cast<size_t>(kernel)).template_name;
    for (const FormulaKernel& k : fixture.kernels)
      if (k.name == name) return &k;
    return nullptr;   // the generic default
  }
};

/// Shapes the fixture tuned, and shapes it did not.
std::vector<Problem> calls(const HeldOutFixture& f) {
  std::vector<Problem> out = f.shapes;
  for (const Problem& p : std::vector<Problem>{{1000, 1000, 1000}, {3000, 2000, 1000}, {12, 4096, 4096}, {300, 300, 40000}})
    out.push_back(p);
  return out;
}

TEST(Regret, TimesEveryKernelTheCallCanRunAndTheChosenOne) {
  const Built b;
  for (const Problem& p : calls(b.fixture)) {
    SCOPED_TRACE(p.to_string());
    const DispatchChoice choice = choose_kernel(b.model, 0, tight_call(p));
    const std::vector<int> timed = regret_candidates(choice);
    ASSERT_FALSE(timed.empty());
    EXPECT_TRUE(std::is_sorted(timed.begin(), timed.end()));
    EXPECT_EQ(std::adjacent_find(timed.begin(), timed.end()), timed.end());
    EXPECT_NE(std::find(timed.begin(), timed.end(), choice.kernel), timed.end());
    // Each kernel of the fixture has a model and computes every nn call: all four are timed.
    for (const FormulaKernel& k : b.fixture.kernels) {
      const bool in = std::any_of(timed.begin(), timed.end(), [&](int i) {
        return b.model.kernels[static_cast<size_t>(i)].template_name == k.name;
      });
      EXPECT_TRUE(in) << k.name;
    }
    for (const int i : timed) {
      const bool modelled_and_usable = std::any_of(choice.predictions.begin(), choice.predictions.end(),
                                                   [&](const Prediction& pr) { return pr.kernel == i && pr.usable; });
      EXPECT_TRUE(modelled_and_usable || i == choice.kernel) << i;
    }
  }
  // No kernel of the table computes nt, and the fixture has no generic default for it: nothing to time.
  Problem nt{1024, 1024, 1024};
  nt.trans_b = true;
  EXPECT_TRUE(regret_candidates(choose_kernel(b.model, 0, tight_call(nt))).empty());
}

TEST(Regret, TheFixturesRegretIsWhatItsFormulasSay) {
  const Built b;
  std::vector<RegretRow> rows;
  for (const Problem& p : calls(b.fixture)) {
    SCOPED_TRACE(p.to_string());
    const DispatchChoice choice = choose_kernel(b.model, 0, tight_call(p));
    std::map<int, double> times;
    double fastest = 0;
    for (const int i : regret_candidates(choice)) {
      const FormulaKernel* k = b.formula(i);
      ASSERT_NE(k, nullptr) << "the fixture's kernels are chosen, never the generic default";
      times[i] = b.fixture.measured_us(*k, p);
      fastest = fastest == 0 ? times[i] : std::min(fastest, times[i]);
    }
    const RegretRow row = regret_row(p, choice.kernel, 1, times.at(choice.kernel), times, {});
    EXPECT_EQ(row.timed, times.size());
    EXPECT_DOUBLE_EQ(row.best_us, fastest);
    EXPECT_DOUBLE_EQ(row.regret, times.at(choice.kernel) / fastest);
    EXPECT_GE(row.regret, 1.0);
    // A tuned shape runs its measured winner: among the kernels measured there, the fastest, so no
    // regret. (The fixture's formulas make skinny faster at the squares, where it was never measured:
    // bench times it there, and the regret shows what tuning missed.)
    const bool tuned = std::find(b.fixture.shapes.begin(), b.fixture.shapes.end(), p) != b.fixture.shapes.end();
    if (tuned) {
      EXPECT_TRUE(choice.exact);
      std::map<int, double> measured;
      for (const auto& [i, us] : times)
        if (b.fixture.measures(*b.formula(i), p)) measured[i] = us;
      const RegretRow there = regret_row(p, choice.kernel, 1, times.at(choice.kernel), measured, {});
      EXPECT_DOUBLE_EQ(there.regret, 1.0);
      EXPECT_EQ(there.best, there.chosen);
    }
    rows.push_back(row);
  }
  const Spread s = regret_spread(rows);
  EXPECT_EQ(s.count, rows.size());
  double worst = 0;
  for (const RegretRow& r : rows) worst = std::max(worst, r.regret);
  EXPECT_DOUBLE_EQ(s.max, worst);
  EXPECT_GT(worst, 1.0) << "some untuned call of the fixture runs a kernel its formulas say is not the fastest";
}

TEST(Regret, RowArithmetic) {
  const Problem p{512, 512, 512};
  // The chosen kernel (3) is slower than 1; 2 is fastest but failed validation, so it is not the best.
  const RegretRow row = regret_row(p, 3, 1, 30.0, {{1, 20.0}, {2, 10.0}, {3, 30.0}}, {2});
  EXPECT_EQ(row.best, 1);
  EXPECT_DOUBLE_EQ(row.best_us, 20.0);
  EXPECT_DOUBLE_EQ(row.regret, 1.5);
  EXPECT_EQ(row.timed, 3u);
  EXPECT_EQ(row.failed, std::vector<int>{2});
  // Split K: the chosen time is the split run's, which may beat every kernel run whole.
  const RegretRow split = regret_row(p, 3, 8, 5.0, {{1, 20.0}, {3, 30.0}}, {});
  EXPECT_EQ(split.best, 3);
  EXPECT_DOUBLE_EQ(split.regret, 1.0);
  EXPECT_EQ(split.splits, 8);
  // The chosen kernel must have been timed.
  EXPECT_THROW(regret_row(p, 4, 1, 1.0, {{1, 20.0}}, {}), std::logic_error);
  const Spread s = regret_spread({row, split});
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.median, 1.25);
  EXPECT_DOUBLE_EQ(s.max, 1.5);
}

}  // namespace
