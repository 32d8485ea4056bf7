// The report's data (tuner/report/report_data.hpp) from a fixture database: every plot holds as many
// points as the database implies (counted here in SQL), the defaults (the landscape's problem, the
// dispatch map's K), what a request narrows, the refusals, the winners table, and the page's plots
// (report_html.hpp) carrying those counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <regex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "measure/tolerance.hpp"
#include "output/printers.hpp"
#include "report/report_data.hpp"
#include "report/report_html.hpp"

#include "export_fixtures.hpp"

namespace cmt::report_data_tests {
namespace {

using namespace cmt::export_fixtures;
using report::gather_report;
using report::ReportData;
using report::ReportRequest;

/// The real-source fixture with every type and class, a cuBLAS baseline, and trials of 4096^3 that
/// ended other ways than ok.
class ReportDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_fixture.typed = true;
    m_fixture.tf32x3 = true;
    m_fixture.build(m_db);
    Store& store = m_db.store();
    BaselineRecord b;
    Statement run = store.db().prepare("SELECT min(id) FROM runs");
    ASSERT_TRUE(run.step());
    b.run_id = run.column_int(0);
    b.device_id = m_fixture.h100;
    b.problem = {4096, 4096, 4096};
    b.median_ms = 4.5;
    b.gflops = b.problem.flops() / 4.5 / 1e6;
    store.put_baseline(b);
    const int64_t winner = store.winners(m_fixture.h100, Problem{4096, 4096, 4096}).front().trial_id;
    for (const Outcome o : {Outcome::wrong, Outcome::crashed, Outcome::timeout, Outcome::skipped, Outcome::wrong}) {
      TrialRecord t = *store.find_trial(winner);
      t.trial_key += fmt::format("/{}/{}", to_string(o), m_added++);
      t.outcome = o;
      t.median_ms.reset();
      t.retime_median_ms.reset();
      store.insert_trial(t);
    }
    store.db().prepare("UPDATE trials SET max_error_ratio = 0.01, simt_error_ratio = 0.02 WHERE dtype = 'tf32x3'").step();
  }

  int64_t count(const std::string& sql) {
    Statement s = m_db.store().db().prepare(sql);
    EXPECT_TRUE(s.step()) << sql;
    return s.column_int(0);
  }

  ReportData gather(ReportRequest request) {
    if (request.device_id == 0) request.device_id = m_fixture.h100;
    return gather_report(m_db.store(), request, builtin_blocktile2d());
  }

  test::TempDir m_dir;
  DbBuilder m_db{m_dir / "t.db"};
  RealFixture m_fixture;
  int m_added = 0;
};

constexpr const char* k_key = "m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype";

TEST_F(ReportDataTest, EveryPlotHoldsThePointsTheDatabaseImplies) {
  const ReportData data = gather({});
  const int64_t h100 = m_fixture.h100;
  const std::string tuned = fmt::format("({0}) IN (SELECT {0} FROM winners WHERE scope = 'overall' AND device_id = {1})",
                                        k_key, h100);
  const std::string passing = "outcome = 'ok' AND median_ms IS NOT NULL";
  EXPECT_EQ(data.dtypes, (std::vector<DType>{DType::f32, DType::f64, DType::i32, DType::tf32x3}));
  ASSERT_EQ(data.speed.size(), 4u);
  for (const report::SpeedPlot& plot : data.speed) {
    SCOPED_TRACE(dtype_name(plot.dtype));
    size_t points = 0, cublas = 0;
    for (const report::SpeedSeries& s : plot.series) (s.cublas ? cublas : points) += s.points.size();
    const std::string type = fmt::format("dtype = '{}' AND device_id = {}", dtype_name(plot.dtype), h100);
    EXPECT_EQ(static_cast<int64_t>(points),
              count(fmt::format("SELECT count(*) FROM (SELECT DISTINCT {}, template_name FROM trials WHERE {} AND {} AND {})",
                                k_key, passing, type, tuned)));
    EXPECT_EQ(static_cast<int64_t>(cublas), count(fmt::format("SELECT count(*) FROM baselines WHERE {} AND {}", type, tuned)));
    EXPECT_EQ(static_cast<int64_t>(plot.problems),
              count(fmt::format("SELECT count(*) FROM winners WHERE scope = 'overall' AND {}", type)));
  }
  EXPECT_EQ(data.speed[0].series.back().name, "cuBLAS");
  EXPECT_EQ(data.speed[0].series.back().points.size(), 1u);

  const int64_t winners = count(fmt::format("SELECT count(*) FROM winners WHERE scope = 'overall' AND device_id = {}", h100));
  EXPECT_EQ(static_cast<int64_t>(data.roofline.winners.size()), winners);
  EXPECT_EQ(static_cast<int64_t>(data.winners.size()), winners);

  // The landscape: 4096^3, the largest problem (every tuned problem here was searched alike).
  const report::Landscape& l = data.landscape;
  ASSERT_EQ(l.problem, (Problem{4096, 4096, 4096}));
  EXPECT_FALSE(l.requested);
  const std::string at = fmt::format("device_id = {} AND m = 4096 AND n = 4096 AND k = 4096 AND layout = 'nn' AND batch = 1 "
                                     "AND dtype = 'f32'",
                                     h100);
  EXPECT_EQ(static_cast<int64_t>(l.trials.size()), count(fmt::format("SELECT count(*) FROM trials WHERE {} AND {}", passing, at)));
  size_t cells = 0;
  for (const report::HeatMap& m : l.heat_maps) cells += m.cells.size();
  EXPECT_EQ(static_cast<int64_t>(cells),
            count(fmt::format("SELECT count(DISTINCT template_name || tile_m || 'x' || tile_n) FROM trials WHERE {} AND {}",
                              passing, at)));
  size_t bars = 0;
  for (const report::OutcomeBar& b : l.outcomes)
    bars += static_cast<size_t>(std::count_if(b.counts.begin(), b.counts.end(), [](int c) { return c > 0; }));
  EXPECT_EQ(static_cast<int64_t>(bars),
            count(fmt::format("SELECT count(DISTINCT template_name || '/' || outcome) FROM trials WHERE {}", at)));
  EXPECT_TRUE(l.winner_trial.has_value());
  EXPECT_EQ(std::count_if(l.trials.begin(), l.trials.end(), [](const report::LandscapeTrial& t) { return t.winner; }), 1);
  ASSERT_TRUE(l.cublas_rate.has_value());
  EXPECT_NEAR(*l.cublas_rate, (Problem{4096, 4096, 4096}.flops() / 4.5e9), 1e-9);

  // One dispatch map per type, 24 x 24 cells from 64 to 16384, at the most common K of the winners.
  ASSERT_EQ(data.dispatch.size(), 4u);
  for (const report::DispatchMap& m : data.dispatch) {
    EXPECT_EQ(m.k, 1024);
    EXPECT_EQ(m.cells.size(), 24u * 24u);
    EXPECT_EQ(m.sizes.front(), 64);
    EXPECT_EQ(m.sizes.back(), 16384);
    EXPECT_TRUE(std::all_of(m.cells.begin(), m.cells.end(), [](const report::DispatchCell& c) { return !c.why.empty(); }));
  }
  EXPECT_FALSE(data.dispatch_k_requested);
  EXPECT_FALSE(data.checks.empty());
  // The roofs of every shown type's storage: FP32 (CUDA cores), TF32/3 (tensor cores), FP64 (DMMA), INT32.
  EXPECT_EQ(data.roofline.roofs.size(), 4u);
  EXPECT_GT(data.roofline.bandwidth_gbs, 3000);
}

TEST_F(ReportDataTest, ThePageCarriesEachPlotsCount) {
  const ReportData data = gather({});
  const std::string page = report::render_report(data);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  // Every plot's data-points is the number of its counted elements.
  const std::regex plot("<svg [^>]*data-plot=\"([^\"]+)\" data-points=\"(\\d+)\"");
  size_t plots = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), plot); it != std::sregex_iterator(); ++it) {
    const size_t begin = static_cast<size_t>(it->position(0));
    const std::string svg = page.substr(begin, page.find("</svg>", begin) - begin);
    size_t counted = 0;
    for (size_t at = svg.find("data-point=\"\""); at != std::string::npos; at = svg.find("data-point=\"\"", at + 1)) ++counted;
    EXPECT_EQ(counted, std::stoul((*it)[2].str())) << (*it)[1].str();
    ++plots;
  }
  // Per type a speed plot, a dispatch map and its rate; the roofline, the landscape, its outcomes; a
  // heat map per family.
  EXPECT_EQ(plots, 4 * 3 + 3 + data.landscape.heat_maps.size());
  EXPECT_NE(page.find(fmt::format("data-plot=\"dispatch-f32\" data-points=\"{}\"", 24 * 24)), std::string::npos);
  EXPECT_NE(page.find(fmt::format("data-table=\"winners\" data-rows=\"{}\"", data.winners.size())), std::string::npos);
  // Nothing to fetch: no URL but the SVG namespace's name, no script, a policy that forbids loading.
  EXPECT_FALSE(std::regex_search(std::regex_replace(page, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), ""),
                                 std::regex("https?:|<script|<link|<img|@import|url\\((?!#)")));
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("prefers-color-scheme: dark"), std::string::npos);
  // The same data give the same bytes.
  EXPECT_EQ(report::render_report(gather({})), page);
}

TEST_F(ReportDataTest, ARequestNarrowsTheTypesAndNamesTheProblemAndK) {
  ReportRequest r;
  r.dtypes = {DType::f64};
  r.problem = Problem::make(1024, 1024, 1024, true, false, 1, DType::f64);
  r.dispatch_k = 512;
  r.grid_cells = 5;
  r.grid_min = 100;
  r.grid_max = 1600;
  const ReportData data = gather(r);
  EXPECT_EQ(data.dtypes, std::vector<DType>{DType::f64});
  ASSERT_EQ(data.speed.size(), 1u);
  EXPECT_EQ(data.speed[0].dtype, DType::f64);
  EXPECT_EQ(data.landscape.problem, *r.problem);
  EXPECT_TRUE(data.landscape.requested);
  ASSERT_EQ(data.dispatch.size(), 1u);
  EXPECT_EQ(data.dispatch[0].k, 512);
  EXPECT_EQ(data.dispatch[0].sizes, (std::vector<int64_t>{100, 200, 400, 800, 1600}));
  EXPECT_TRUE(data.dispatch_k_requested);
  for (const report::WinnerRow& w : data.winners) EXPECT_EQ(w.winner.problem.dtype, DType::f64);
  EXPECT_TRUE(std::all_of(data.checks.begin(), data.checks.end(), [](const HeldOutCheck& c) { return c.dtype == DType::f64; }));
}

TEST_F(ReportDataTest, RefusesInOneLine) {
  ReportRequest a100;
  a100.device_id = m_fixture.a100;
  a100.dtypes = {DType::tf32x3};
  EXPECT_EQ(test::usage_error([&] { gather(a100); }),
            fmt::format("{} has no tuned problems of type tf32x3 in {}; its tuned problems are of type f32, f64", k_a100,
                        (m_dir / "t.db").string()));
  ReportRequest problem;
  problem.problem = Problem{333, 333, 333};
  const std::string untuned = test::usage_error([&] { gather(problem); });
  EXPECT_EQ(untuned.rfind("--problem 333x333x333: not tuned on " + std::string(k_h100), 0), 0u) << untuned;
  EXPECT_NE(untuned.find("tuned problems: "), std::string::npos);
  ReportRequest missing;
  missing.device_id = 999;
  EXPECT_NE(test::usage_error([&] { gather(missing); }).find("device id 999 is not in"), std::string::npos);
  ReportRequest idle;
  idle.device_id = m_db.add_device("GPU-idle", "Idle GPU", 9, 0, 132);
  EXPECT_NE(test::usage_error([&] { gather(idle); }).find("Idle GPU (GPU-idle) has no tuned problems (no winners)"),
            std::string::npos);
  ReportRequest grid;
  grid.grid_cells = 1;
  EXPECT_NE(test::usage_error([&] { gather(grid); }).find("the dispatch map's grid needs at least 2 sizes"), std::string::npos);
}

TEST(ReportGrid, LogGridIsEvenOnALogScaleAndWhole) {
  EXPECT_EQ(report::log_grid(64, 16384, 9), (std::vector<int64_t>{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}));
  const std::vector<int64_t> g = report::log_grid(64, 16384, 24);
  ASSERT_EQ(g.size(), 24u);
  EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
  EXPECT_EQ(std::adjacent_find(g.begin(), g.end()), g.end());
  EXPECT_EQ(report::log_grid(1, 3, 10), (std::vector<int64_t>{1, 2, 3}));   // distinct whole numbers only
  EXPECT_THROW(report::log_grid(10, 10, 4), UsageError);
  EXPECT_NEAR(report::problem_size(Problem{64, 64, 64}), 64, 1e-9);
  EXPECT_NEAR(report::problem_size(Problem::make(8, 8, 8, false, false, 8)), 16, 1e-9);
}

TEST_F(ReportDataTest, TheWinnersTableShowsRatesErrorsAndOutcomes) {
  const ReportData data = gather({});
  const output::Table table = report::winners_table(data);
  const auto text = [&](size_t row, const char* column) {
    return output::cell_text(table.columns()[table.column_index(column)], table.cell(row, table.column_index(column)));
  };
  bool f32 = false, i32 = false, x3 = false;
  for (size_t r = 0; r < table.row_count(); ++r) {
    const std::string problem = text(r, "problem");
    if (problem == "4096x4096x4096") {
      f32 = true;
      EXPECT_EQ(text(r, "cublas"), fmt::format("{:.2f} TF/s", Problem{4096, 4096, 4096}.flops() / 4.5e9));
      EXPECT_EQ(text(r, "outcomes"), "2/2/2/0/1");   // ok, wrong, failed (crashed, timeout), abandoned, skipped
      EXPECT_EQ(text(r, "error_units"), "-");
    } else if (problem == "1024x1024x1024:i32") {
      i32 = true;
      EXPECT_EQ(text(r, "error"), "exact");
      EXPECT_EQ(text(r, "cublas"), "n/a");
      EXPECT_EQ(text(r, "ratio"), "n/a");
      EXPECT_NE(text(r, "rate").find("TOP/s"), std::string::npos);
    } else if (problem == "1024x1024x1024:tf32x3") {
      x3 = true;   // held to FP64: its error and the FP32 SIMT reference's, in units of 2^-24
      EXPECT_EQ(text(r, "error_units"), fmt::format("{:.2f}", fp32_error_units(0.01, 1024)));
      EXPECT_EQ(text(r, "simt_units"), fmt::format("{:.2f}", fp32_error_units(0.02, 1024)));
    }
  }
  EXPECT_TRUE(f32 && i32 && x3);
}

}  // namespace
}  // namespace cmt::report_data_tests
