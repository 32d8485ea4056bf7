// The held-out check through the real binary: export's summary line, its --regret table and --json
// fields, and query's held-out error beside its prediction, on held_out_fixture.hpp's database.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "held_out_fixture.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using test::run_split;

/// The fixture's worst regret: mid at 256x256x16384, where splitk (17.4 us) is fastest.
const double k_max_regret = (2 + 1.5 * 4096 * 16384 * 1e-6) / (4 + 1.6 * 4096 * 2048 * 1e-6);


struct HeldOutDatabase {
  test::TempDir dir;
  HeldOutDatabase() {
    test::DbBuilder db(dir / "t.db");
    test::HeldOutFixture fixture;
    fixture.build(db);
  }
  test::SplitResult run(const std::string& args) const { return run_split(dir, "--db t.db " + args); }
};

TEST(ExportHeldOut, PrintsOneSummaryLineAfterWrote) {
  const HeldOutDatabase db;
  const auto r = db.run("export --out h.cuh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::lines_of(r.out);
  // wrote, the check, and the line of the calls no tuned kernel serves (the fixture's are f32 nn only)
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("wrote h.cuh: ", 0), 0u) << r.out;
  EXPECT_NE(lines[2].find(": no tuned kernel serves "), std::string::npos) << r.out;
  const std::regex summary(
      R"(held-out check \(leave one shape out, 13 shapes\): model error median [0-9.]+%, 90th pct [0-9.]+%, )"
      R"(max [0-9.]+%; dispatch regret median 1\.00, 90th pct [0-9.]+, max 5\.89 )"
      R"(\(1 shape: the chosen kernel was not measured there\))");
  EXPECT_TRUE(std::regex_match(lines[1], summary)) << lines[1];
  // Unchanged, the header is not rewritten; the check is printed all the same.
  const auto again = db.run("export --out h.cuh");
  const auto again_lines = test::lines_of(again.out);
  ASSERT_EQ(again_lines.size(), 3u) << again.out;
  EXPECT_EQ(again_lines[0].rfind("h.cuh unchanged: ", 0), 0u) << again.out;
  EXPECT_EQ(again_lines[1], lines[1]);
}

TEST(ExportHeldOut, RegretPrintsARowPerProblem) {
  const HeldOutDatabase db;
  const auto r = db.run("export --out h.cuh --regret");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u + 1 + 13 + 1) << r.out;   // wrote, summary, the table's head and 13 rows, unserved
  const auto row = [&](const std::string& problem) {
    for (const auto& line : lines)
      if (line.rfind("  " + problem + " ", 0) == 0) return line;
    return std::string("<no row for " + problem + ">");
  };
  EXPECT_TRUE(std::regex_search(row("16x4096x4096"), std::regex(R"(skinny\[V=1\] +not meas\. +mid\[V=1\] +27\.2 +- )")))
      << row("16x4096x4096");
  // The cliff: splitk, predicted from its other deep shape, runs 1.43x mid's time; its model missed by 87.9%.
  EXPECT_TRUE(std::regex_search(row("256x256x65536"),
                                std::regex(R"(splitk\[V=1\] +576\.9 +mid\[V=1\] +404\.[0-9] +1\.43 +87\.9%)")))
      << row("256x256x65536");
  EXPECT_TRUE(std::regex_search(row("1024x1024x1024"), std::regex(R"(mid\[V=1\] +14\.6 +mid\[V=1\] +14\.6 +1\.00 +0\.0%)")))
      << row("1024x1024x1024");
}

TEST(ExportHeldOut, JsonCarriesTheSameNumbers) {
  const HeldOutDatabase db;
  const auto r = db.run("export --out h.cuh --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(doc.at("written"), true);
  ASSERT_EQ(doc.at("held_out").size(), 1u);
  const auto& check = doc.at("held_out")[0];
  EXPECT_EQ(check.at("device"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(check.at("dtype"), "f32");
  EXPECT_EQ(check.at("shapes"), 13);
  EXPECT_EQ(check.at("unmeasured_choices"), 1);
  EXPECT_EQ(check.at("regret").at("count"), 12);
  EXPECT_NEAR(check.at("regret").at("max").get<double>(), k_max_regret, 1e-9);
  EXPECT_DOUBLE_EQ(check.at("regret").at("median").get<double>(), 1.0);
  for (const char* field : {"median", "p90", "max", "count"}) EXPECT_TRUE(check.at("model_error").contains(field));
  ASSERT_EQ(check.at("problems").size(), 13u);
  bool unmeasured_seen = false;
  for (const auto& p : check.at("problems")) {
    for (const char* field : {"problem", "chosen", "chosen_predicted_us", "chosen_us", "chosen_measured", "chosen_error",
                              "best", "best_us", "regret"})
      EXPECT_TRUE(p.contains(field)) << field;
    if (p.at("problem") == "16x4096x4096") {
      unmeasured_seen = true;
      EXPECT_EQ(p.at("chosen"), "skinny[V=1]");
      EXPECT_EQ(p.at("chosen_measured"), false);
      EXPECT_TRUE(p.at("chosen_us").is_null());
      EXPECT_TRUE(p.at("regret").is_null());
    }
  }
  EXPECT_TRUE(unmeasured_seen);
}

TEST(QueryHeldOut, PrintsTheChosenModelsHeldOutErrorBesideItsPrediction) {
  const HeldOutDatabase db;
  const auto text = db.run("query --m 1000 --n 1000 --k 1000");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(mid\[V=1\]  predicted [0-9.]+ us \([0-9.]+ TF/s; its model's )"
                                                     R"(held-out error: median 0\.0% over 13 shapes\))")))
      << text.out;
  const auto json = db.run("query --m 256 --n 256 --k 40000 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(json.out)) << json.out;
  const auto& dispatch = doc.at("dispatch");
  // splitk runs there; its two held-out points are 87.9% (the cliff) and 729% off.
  EXPECT_EQ(dispatch.at("template"), "splitk") << json.out;
  EXPECT_EQ(dispatch.at("held_out_points"), 2);
  EXPECT_GT(dispatch.at("held_out_error_median").get<double>(), 4.0);
}

}  // namespace
}  // namespace cmt
