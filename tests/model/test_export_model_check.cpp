// The held-out check (export/model_check.hpp): leave one shape out on a fixture whose times follow
// known formulas (held_out_fixture.hpp), against what the formulas say each left-out shape must give.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "export/model_check.hpp"
#include "held_out_fixture.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

using namespace cmt;
using test::FormulaKernel;
using test::HeldOutFixture;

/// What leaving one shape out must give, worked out from the fixture's formulas alone.
struct Expected {
  std::string chosen;
  double predicted_us = 0;
  std::optional<double> regret;
  std::map<std::string, double> errors;   // held-out relative error per kernel measured there
};

/// A kernel's prediction at p from its model fitted without p, by what the fit must recover: a kernel
/// whose remaining points follow its formula at two or more work values recovers the formula (wide,
/// mid); one whose remaining points share one work value fits the work term alone through them, so
/// it scales their time by the work (skinny, and splitk from its one other deep shape).
std::optional<double> held_out_prediction(const HeldOutFixture& f, const FormulaKernel& k, const Problem& p) {
  std::vector<Problem> rest;
  for (const Problem& q : k.measured)
    if (!(q == p)) rest.push_back(q);
  if (rest.empty()) return std::nullopt;
  bool one_work = true;
  for (const Problem& q : rest) one_work = one_work && HeldOutFixture::work(k, q) == HeldOutFixture::work(k, rest[0]);
  if (one_work) return f.measured_us(k, rest[0]) * HeldOutFixture::work(k, p) / HeldOutFixture::work(k, rest[0]);
  for (const Problem& q : rest)
    if (f.measured_us(k, q) != HeldOutFixture::formula_us(k, q)) return std::nullopt;   // not worked out here
  return HeldOutFixture::formula_us(k, p);
}

/// Within `factor` of the kernel's measured shapes other than p, in each dimension.
bool in_domain(const FormulaKernel& k, const Problem& p, int64_t factor) {
  int64_t lo[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, hi[3] = {0, 0, 0};
  for (const Problem& q : k.measured) {
    if (q == p) continue;
    const int64_t d[3] = {q.m, q.n, q.k};
    for (int i = 0; i < 3; ++i) lo[i] = std::min(lo[i], d[i]), hi[i] = std::max(hi[i], d[i]);
  }
  const int64_t d[3] = {p.m, p.n, p.k};
  for (int i = 0; i < 3; ++i)
    if (factor * d[i] < lo[i] || d[i] > factor * hi[i]) return false;
  return true;
}

Expected expected_at(const HeldOutFixture& f, const Problem& p) {
  Expected e;
  for (const int64_t factor : {2, 8, 64}) {
    for (const FormulaKernel& k : f.kernels) {
      const auto us = held_out_prediction(f, k, p);
      if (!us || !in_domain(k, p, factor)) continue;
      if (e.chosen.empty() || *us < e.predicted_us) e.chosen = k.name, e.predicted_us = *us;
    }
    if (!e.chosen.empty()) break;
  }
  double best = 0;
  for (const FormulaKernel& k : f.kernels) {
    if (!f.measures(k, p)) continue;
    const double us = f.measured_us(k, p);
    if (best == 0 || us < best) best = us;
    if (const auto predicted = held_out_prediction(f, k, p)) e.errors[k.name] = std::fabs(*predicted - us) / us;
  }
  for (const FormulaKernel& k : f.kernels)
    if (k.name == e.chosen && f.measures(k, p)) e.regret = f.measured_us(k, p) / best;
  return e;
}

struct Checked {
  test::TempDir dir;
  HeldOutFixture fixture;
  ExportModel model;
  std::vector<HeldOutCheck> checks;

  // Built in the initializers, not assigned: g++ 12 at -O2 warns (-Wstringop-overflow, wrongly)
  // about the move assignment of an ExportModel.
  Checked() : model(built(dir, fixture)), checks(check_held_out(model)) {}
  static ExportModel built(const test::TempDir& dir, HeldOutFixture& fixture) { return fixture.export_model(dir / "t.db"); }
  std::string name(int kernel) const {
    return kernel < 0 ? "(none)" : model.kernels.at(static_cast<size_t>(kernel)).template_name;
  }
};

TEST(ModelCheck, LeavingEachShapeOutChoosesWhatTheFormulasSayWithTheirRegret) {
  const Checked c;
  ASSERT_EQ(c.checks.size(), 1u);
  const HeldOutCheck& check = c.checks[0];
  EXPECT_EQ(check.dtype, DType::f32);
  ASSERT_EQ(check.problems.size(), c.fixture.shapes.size());
  for (const HeldOutProblem& hp : check.problems) {
    SCOPED_TRACE(hp.problem.to_string());
    const Expected e = expected_at(c.fixture, hp.problem);
    EXPECT_EQ(c.name(hp.chosen), e.chosen);
    ASSERT_TRUE(hp.chosen_predicted_us.has_value());
    EXPECT_NEAR(*hp.chosen_predicted_us, e.predicted_us, 1e-6 * e.predicted_us);
    EXPECT_EQ(hp.regret.has_value(), e.regret.has_value());
    if (hp.regret && e.regret) EXPECT_NEAR(*hp.regret, *e.regret, 1e-9);
    EXPECT_EQ(hp.chosen_us.has_value(), e.regret.has_value());
    std::map<std::string, double> errors;
    for (const HeldOutPoint& point : hp.points) errors[c.name(point.kernel)] = point.relative_error;
    ASSERT_EQ(errors.size(), e.errors.size());
    for (const auto& [kernel, error] : e.errors) EXPECT_NEAR(errors[kernel], error, 1e-6) << kernel;
  }
}

TEST(ModelCheck, TheStoryOfTheFixture) {
  // The same facts as above, spelled out, so that a change in the fixture that makes them trivial shows.
  const Checked c;
  const HeldOutCheck& check = c.checks.at(0);
  std::map<std::string, const HeldOutProblem*> by_shape;
  for (const HeldOutProblem& hp : check.problems) by_shape[hp.problem.to_string()] = &hp;
  // The cliff shape left out: splitk, fitted on its other deep shape alone, predicts 4 x 17.4 us
  // and is chosen; measured 10x its formula, it is 1.43x slower than mid.
  const HeldOutProblem& cliff = *by_shape.at("256x256x65536");
  EXPECT_EQ(c.name(cliff.chosen), "splitk");
  const double splitk_cliff = 10 * (4 + 1.6 * 4096 * 8192 * 1e-6), mid_cliff = 2 + 1.5 * 4096 * 65536 * 1e-6;
  EXPECT_NEAR(*cliff.regret, splitk_cliff / mid_cliff, 1e-9);
  EXPECT_NEAR(*cliff.chosen_error, 1 - (4 + 1.6 * 4096 * 2048 * 1e-6) * 4 / splitk_cliff, 1e-9);
  // The other deep shape left out: splitk's model is its cliff scaled down, too slow to be chosen,
  // so mid runs, 5.9x slower than splitk measured there.
  const HeldOutProblem& deep = *by_shape.at("256x256x16384");
  EXPECT_EQ(c.name(deep.chosen), "mid");
  EXPECT_NEAR(*deep.regret, (2 + 1.5 * 4096 * 16384 * 1e-6) / (4 + 1.6 * 4096 * 2048 * 1e-6), 1e-9);
  // skinny is chosen where it was not measured: counted, no regret guessed.
  const HeldOutProblem& unmeasured = *by_shape.at("16x4096x4096");
  EXPECT_EQ(c.name(unmeasured.chosen), "skinny");
  EXPECT_FALSE(unmeasured.chosen_us.has_value());
  EXPECT_FALSE(unmeasured.regret.has_value());
  EXPECT_EQ(check.unmeasured_choices, 1u);
  EXPECT_EQ(check.regret.count, check.problems.size() - 1);
  EXPECT_NEAR(check.regret.max, (2 + 1.5 * 4096 * 16384 * 1e-6) / (4 + 1.6 * 4096 * 2048 * 1e-6), 1e-9);
  EXPECT_DOUBLE_EQ(check.regret.median, 1.0);
  // Every square chooses between wide and mid exactly as their formulas do: no regret there.
  for (const int64_t s : {256, 512, 768, 1024, 1536, 2048, 3072, 4096}) {
    const HeldOutProblem& hp = *by_shape.at(Problem{s, s, s}.to_string());
    EXPECT_NEAR(*hp.regret, 1.0, 1e-12) << s;
  }
}

TEST(ModelCheck, SummariesAndPerKernelErrorsAgreeWithTheRows) {
  const Checked c;
  const HeldOutCheck& check = c.checks.at(0);
  std::vector<double> errors, regrets;
  std::map<int, std::vector<double>> per_kernel;
  for (const HeldOutProblem& hp : check.problems) {
    for (const HeldOutPoint& point : hp.points) {
      errors.push_back(point.relative_error);
      per_kernel[point.kernel].push_back(point.relative_error);
    }
    if (hp.regret) regrets.push_back(*hp.regret);
  }
  EXPECT_EQ(check.model_error.count, errors.size());
  EXPECT_DOUBLE_EQ(check.model_error.max, *std::max_element(errors.begin(), errors.end()));
  EXPECT_EQ(check.regret.count, regrets.size());
  // query's per-kernel numbers (kernel_held_out) are the check's.
  ASSERT_EQ(check.kernel_error.size(), per_kernel.size());
  for (const auto& [kernel, errs] : per_kernel) {
    const auto points = kernel_held_out(c.model, 0, kernel);
    ASSERT_EQ(points.size(), errs.size()) << c.name(kernel);
    std::vector<double> from_query;
    for (const auto& p : points) from_query.push_back(p.relative_error);
    EXPECT_DOUBLE_EQ(spread_of(from_query).median, check.kernel_error.at(kernel).median) << c.name(kernel);
  }
  // wide and mid follow the model's terms: their held-out errors vanish; splitk's do not.
  for (const auto& [kernel, spread] : check.kernel_error) {
    if (c.name(kernel) == "splitk")
      EXPECT_GT(spread.median, 0.5);
    else
      EXPECT_LT(spread.max, 1e-9) << c.name(kernel);
  }
}

TEST(ModelCheck, SpreadInterpolatesBetweenOrderStatistics) {
  EXPECT_EQ(spread_of({}).count, 0u);
  const Spread one = spread_of({3.0});
  EXPECT_EQ(one.median, 3.0);
  EXPECT_EQ(one.p90, 3.0);
  const Spread s = spread_of({4, 1, 3, 2, 10, 5, 6, 7, 8, 9, 0});   // 0..10
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.p90, 9.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(spread_of({1, 2}).median, 1.5);
}

TEST(ModelCheck, NeedsThePointsTheModelsWereFittedOn) {
  Checked c;
  c.model.devices[0].model_points.clear();
  EXPECT_THROW(check_held_out(c.model), std::logic_error);
}

}  // namespace
