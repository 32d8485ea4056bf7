// cm-tune tune on f64 and i32 problems, with the scripted measuring process
// (tests/worker/scripted_worker.cpp) standing in for the GPU and the typed generic default compiled
// by NVRTC: the summary's cuBLAS columns (DGEMM for f64; "n/a" for i32, which cuBLAS cannot
// compute), the INT32 comparison with the device's peak and the f32 winner, the worker asked for
// no INT32 baseline, and export carrying every type's winners (or those --dtype names).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

class TuneTypes : public test::ScriptedTune {
 protected:
  TuneTypes() : ScriptedTune("types", "64") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_LOG", (m_dir / "worker.log").string());
  }
  std::string tune(const std::string& extra) const {
    return "--quiet --db t.db tune --sizes 64,96x80x72 --config " + preset() +
           " --no-calibrate --seed 3 --jobs 2 " + extra;
  }
};

TEST_F(TuneTypes, F64HasADgemmBaselineAndI32ComparesWithThePeakAndTheF32Winner) {
  const auto r = test::run_split(m_dir, tune("--dtype all --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["problems"].size(), 6u) << j.dump(2);
  int f64 = 0, i32 = 0;
  for (const auto& p : j["problems"]) {
    const std::string name = p["problem"];
    ASSERT_FALSE(p["winner"].is_null()) << p.dump();
    EXPECT_EQ(p["winner"]["template"], "blocktile2d");
    if (name.find(":f64") != std::string::npos) {
      ++f64;
      EXPECT_FALSE(p["cublas_tflops"].is_null()) << p.dump();
      EXPECT_NEAR(p["winner"]["ratio_to_cublas"].get<double>(), 1.0 / 2.02, 1e-9) << p.dump();
      EXPECT_NE(p["winner"]["params"].get<std::string>().find("DTYPE=1"), std::string::npos) << p.dump();
      EXPECT_FALSE(p.contains("int32_peak_fraction")) << p.dump();
    } else if (name.find(":i32") != std::string::npos) {
      ++i32;
      EXPECT_TRUE(p["cublas_tflops"].is_null()) << p.dump();
      EXPECT_TRUE(p["winner"]["ratio_to_cublas"].is_null()) << p.dump();
      EXPECT_NE(p["winner"]["params"].get<std::string>().find("DTYPE=2"), std::string::npos) << p.dump();
      // The scripted H100: 64 IMADs per SM per clock, 132 SMs, 1.98 GHz.
      EXPECT_NEAR(p["int32_peak_tops"].get<double>(), 64.0 * 132 * 2 * 1.98e9 / 1e12, 1e-6) << p.dump();
      EXPECT_NEAR(p["int32_peak_fraction"].get<double>(), p["winner"]["tflops"].get<double>() / p["int32_peak_tops"].get<double>(),
                  1e-12);
      // The f32 winner at the same shape was tuned in the same run, at the same scripted time.
      EXPECT_NEAR(p["ratio_to_f32_winner"].get<double>(), 1.0, 1e-9) << p.dump();
      EXPECT_FALSE(p["f32_winner_tflops"].is_null()) << p.dump();
    } else {
      EXPECT_FALSE(p["cublas_tflops"].is_null()) << p.dump();
      EXPECT_NE(p["winner"]["params"].get<std::string>().find("DTYPE=0"), std::string::npos) << p.dump();
    }
  }
  EXPECT_EQ(f64, 2);
  EXPECT_EQ(i32, 2);

  // The measuring process timed SGEMM and DGEMM, never an INT32 baseline.
  const std::string log = test::read_file(m_dir / "worker.log");
  EXPECT_NE(log.find("cublas - 64x64x64:f64"), std::string::npos) << log;
  EXPECT_NE(log.find("cublas - 64x64x64\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("cublas - 64x64x64:i32"), std::string::npos) << log;
  EXPECT_NE(log.find("measure blocktile2d[BM=64,BN=64,BK=8,TM=8,TN=4,TRANS_A=0,TRANS_B=0,DTYPE=2] 96x80x72:i32"),
            std::string::npos)
      << log;

  // The store: baselines of f32 and f64 only; NULL ratios for i32 trials.
  Store store(m_dir / "t.db");
  const int64_t device = store.devices().front().id;
  const Problem i32_problem = Problem::make(64, 64, 64, false, false, 1, DType::i32);
  EXPECT_FALSE(store.find_baseline(device, i32_problem).has_value());
  EXPECT_TRUE(store.find_baseline(device, Problem::make(64, 64, 64, false, false, 1, DType::f64)).has_value());
  for (const auto& t : store.trials(device, i32_problem)) EXPECT_FALSE(t.ratio_to_cublas.has_value()) << t.params;
}

TEST_F(TuneTypes, TheSummaryPrintsNoRatioForI32) {
  const auto r = test::run_split(m_dir, tune("--dtype f64,i32"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool f64_row = false, i32_row = false, i32_note = false;
  for (size_t at = 0; at < r.out.size();) {
    const size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? r.out.size() : end + 1;
    if (line.rfind("64x64x64:f64 ", 0) == 0) {
      f64_row = true;
      EXPECT_NE(line.find("0.495x"), std::string::npos) << line;
    }
    if (line.rfind("64x64x64:i32 ", 0) == 0) {
      i32_row = true;
      EXPECT_NE(line.find("n/a"), std::string::npos) << line;
      EXPECT_EQ(line.find("x  "), std::string::npos) << "no ratio: " << line;
    }
    if (line.rfind("64x64x64:i32: no cuBLAS INT32 GEMM; ", 0) == 0) {
      i32_note = true;
      EXPECT_NE(line.find("of the INT32 multiply-add peak (33.5 TOP/s)"), std::string::npos) << line;
      EXPECT_NE(line.find("no f32 winner at 64x64x64 to compare with"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(f64_row && i32_row && i32_note) << r.out;
}

std::vector<std::string> summary_lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// The summary's columns, byte for byte: fixed widths (a longer cell pushes the rest of its line, as
// printf's do), the ratio's "x", "n/a" where cuBLAS has no GEMM, "(none passed)" without a winner,
// and the calibration rows under their heading in the same columns.
const std::string k_summary_head =
    "problem                  best template      parameters                                       TF/s   cuBLAS   "
    "ratio  ok/wrong/failed/abandoned/skipped";

TEST_F(TuneTypes, TheSummaryKeepsItsColumns) {
  const auto r = test::run_split(m_dir, tune("--dtype f32,i32"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = summary_lines(r.out);
  ASSERT_EQ(lines.size(), 9u) << r.out;   // blank, device, head, 4 rows, 2 INT32 notes
  EXPECT_EQ(lines[0], "");
  EXPECT_EQ(lines[1].rfind("Scripted H100 (sm_90), 2 candidates, 4 trials measured, 0 reused, ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], k_summary_head);
  EXPECT_EQ(lines[3], "64x64x64                 blocktile2d        BM=64,BN=64,BK=8,TM=8,TN=4,TRANS_A=0,TRANS_B=0,DTYPE=0"
                      "     0.00     0.00  0.495x  1/0/0/0/0");
  EXPECT_EQ(lines[4], "64x64x64:i32             blocktile2d        BM=64,BN=64,BK=8,TM=8,TN=4,TRANS_A=0,TRANS_B=0,DTYPE=2"
                      "     0.00      n/a     n/a  1/0/0/0/0");
  EXPECT_EQ(lines[7].rfind("64x64x64:i32: no cuBLAS INT32 GEMM; 0.0% of the INT32 multiply-add peak (33.5 TOP/s), ", 0), 0u)
      << lines[7];

  // Calibration: its heading, then rows in the same columns.
  const auto calibrated = test::run_split(m_dir, "--quiet --db c.db tune --sizes 64 --config " +
                                                     preset() + " --seed 3 --jobs 2");
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  const std::vector<std::string> cal = summary_lines(calibrated.out);
  ASSERT_GE(cal.size(), 6u) << calibrated.out;
  EXPECT_EQ(cal[2], k_summary_head);
  EXPECT_TRUE(std::regex_match(cal[4], std::regex(R"(calibration \(\d+ kernels on \d+ shapes, for the exported dispatch's cost model\):)")))
      << cal[4];
  for (size_t i = 5; i < cal.size(); ++i) {
    if (cal[i].find(' ') > 24) continue;   // a longer problem pushes the rest of its line
    EXPECT_EQ(cal[i].substr(25, 19), "blocktile2d        ") << cal[i];
    EXPECT_EQ(cal[i].substr(44, 6), "BM=64,") << cal[i];
    EXPECT_TRUE(std::regex_search(cal[i], std::regex(R"( +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}  [0-9]\.[0-9]{3}x  1/0/0/0/0$)")))
        << cal[i];
  }
}

TEST_F(TuneTypes, TheSummarySaysNonePassedWithoutAWinner) {
  test::write_file(m_dir / "faults.toml", R"(name = "faults"
description = "only a candidate that crashes"
[templates.faulty]
FAULT = [1]
)");
  const auto r = test::run_split(m_dir, "--quiet --templates " + std::string(CMTUNE_TEST_FIXTURES) +
                                            "/faults --db f.db tune --sizes 64 --config " +
                                            (m_dir / "faults.toml").string() + " --no-calibrate --seed 3 --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = summary_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;   // blank, device, head, the row
  EXPECT_EQ(lines[2], k_summary_head);
  EXPECT_EQ(lines[3], "64x64x64                 (none passed)                                                          -     0.00"
                      "       -  0/0/1/0/0");
}

// Export puts every type's winners into the header's tables (dgemm and igemm dispatch to them), and
// --dtype keeps only some types' winners; naming only types nothing was tuned in is a usage error.
TEST_F(TuneTypes, ExportCarriesEveryTypesWinnersAndDtypeFiltersThem) {
  ASSERT_EQ(test::run_split(m_dir, tune("--dtype f64,i32")).exit_code, 0);
  const auto only = test::run_split(m_dir, "--db t.db export --out h.cuh");
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_EQ(only.err, "");
  EXPECT_NE(only.out.find("4 tuned problems"), std::string::npos) << only.out;
  std::string header = test::read_file(m_dir / "h.cuh");
  // The typed builds of blocktile2d that won, and their entries (dtype last in each problem).
  EXPECT_NE(header.find("cmt_sgemm_blocktile2d<64, 64, 8, 8, 4, 0, 0, 1>"), std::string::npos) << "the f64 build";
  EXPECT_NE(header.find("cmt_sgemm_blocktile2d<64, 64, 8, 8, 4, 0, 0, 2>"), std::string::npos) << "the i32 build";
  EXPECT_NE(header.find("{{64, 64, 64, 0, 1, 0, 1}, "), std::string::npos);
  EXPECT_NE(header.find("{{96, 80, 72, 0, 1, 0, 2}, "), std::string::npos);
  EXPECT_EQ(header.find("{{64, 64, 64, 0, 1, 0, 0}, "), std::string::npos) << "nothing was tuned in f32";

  const auto f32 = test::run_split(m_dir, "--db t.db export --dtype f32 --out f32.cuh");
  EXPECT_EQ(f32.exit_code, 2);
  EXPECT_EQ(f32.err, "cm-tune: error: database t.db has no tuned problems of type f32 (--dtype) to export; its tuned "
                     "problems are of type f64, i32\n");
  const auto i32 = test::run_split(m_dir, "--db t.db export --dtype i32 --out i32.cuh");
  ASSERT_EQ(i32.exit_code, 0) << i32.err;
  EXPECT_NE(i32.out.find("2 tuned problems"), std::string::npos) << i32.out;

  ASSERT_EQ(test::run_split(m_dir, tune("")).exit_code, 0);  // f32 too now
  const auto all = test::run_split(m_dir, "--db t.db export --out h.cuh");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.err, "");
  EXPECT_NE(all.out.find("6 tuned problems"), std::string::npos) << all.out;
  header = test::read_file(m_dir / "h.cuh");
  EXPECT_NE(header.find("{{64, 64, 64, 0, 1, 0, 0}, "), std::string::npos);
  EXPECT_NE(header.find("{{64, 64, 64, 0, 1, 0, 1}, "), std::string::npos);
  EXPECT_NE(header.find("{{64, 64, 64, 0, 1, 0, 2}, "), std::string::npos);
}

}  // namespace
}  // namespace cmt

namespace cmt {
namespace {

// The tf32x3 class: one tf32x3_mma point compiled by NVRTC, measured by the scripted process, whose
// trials carry the FP32 SIMT reference's error (0.02 of the tolerance) beside their own (0.01). tune
// prints the winner's error and SGEMM's in units of 2^-24 of the scale, as text and as JSON fields
// that other types' rows omit; SGEMM is the class's baseline. export puts its winners in the header
// (its sgemm_tf32x3's table) by default and with --dtype tf32x3, and leaves them out with --dtype f32,
// whose header is then the one of the f32 winners alone; query says what sgemm_tf32x3 runs.
class TuneTf32x3 : public test::ScriptedTune {
 protected:
  TuneTf32x3() : ScriptedTune("tf32x3", "64") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_LOG", (m_dir / "worker.log").string());
    test::write_file(m_dir / "preset.toml", R"(name = "tf32x3"
description = "one tf32x3_mma point and the generic default"
[templates.blocktile2d]
BM = [64]
BN = [64]
BK = [8]
TM = [8]
TN = [4]
[templates.tf32x3_mma]
BM = [64]
BN = [64]
BK = [32]
WM = [32]
WN = [32]
STAGES = [3]
VEC = [1]
PAD = [8]
STAGED = [1]
SWIZZLE = [1]
)");
  }
};

// A problem no candidate computes (blocktile2d computes no tf32x3) is one line, exit 2: alone, and
// beside one the space serves.
TEST_F(TuneTf32x3, AProblemWithoutACandidateIsOneLine) {
  for (const std::string sizes : {"64:tf32x3", "64,64:tf32x3"}) {
    const auto r = test::run_split(m_dir, "--db t.db tune --sizes " + sizes + " --template blocktile2d --config " +
                                              preset() + " --no-calibrate");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err,
              "cm-tune: error: preset 'tf32x3' with --template blocktile2d has no candidate for 64x64x64:tf32x3 on "
              "Scripted H100 (sm_90); `cm-tune list` shows its space and what prunes it\n");
  }
}

TEST_F(TuneTf32x3, TuneReportsTheWinnersErrorNextToSimtsAndExportServesTheClass) {
  const std::string base = "--quiet --db t.db tune --sizes 64:tf32x3,64 --config " + preset() + " --no-calibrate --seed 3 --jobs 2";
  const auto r = test::run_split(m_dir, base + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["problems"].size(), 2u) << j.dump(2);
  for (const auto& p : j["problems"]) {
    const std::string name = p["problem"];
    ASSERT_FALSE(p["winner"].is_null()) << p.dump();
    EXPECT_FALSE(p["cublas_tflops"].is_null()) << p.dump();
    if (name == "64x64x64:tf32x3") {
      EXPECT_EQ(p["winner"]["template"], "tf32x3_mma") << p.dump();
      EXPECT_NE(p["winner"]["params"].get<std::string>().find("DTYPE=3"), std::string::npos) << p.dump();
      // Ratios of the tolerance, 2 (K + 4) units of 2^-24: 0.01 and 0.02 at K = 64.
      EXPECT_NEAR(p["error_units"].get<double>(), 0.01 * 2 * 68, 1e-9) << p.dump();
      EXPECT_NEAR(p["simt_error_units"].get<double>(), 0.02 * 2 * 68, 1e-9) << p.dump();
    } else {
      EXPECT_EQ(name, "64x64x64");
      EXPECT_EQ(p["winner"]["template"], "blocktile2d") << "the class is never served to f32";
      EXPECT_FALSE(p.contains("error_units")) << p.dump();
    }
  }
  // The class's baseline is SGEMM, timed on its own problem.
  EXPECT_NE(test::read_file(m_dir / "worker.log").find("cublas - 64x64x64:tf32x3"), std::string::npos);

  const auto text = test::run_split(m_dir, base);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("64x64x64:tf32x3: largest error against FP64 1.36 units of 2^-24 of |alpha||A||B| + "
                          "|beta||C|, FP32 SIMT (cuBLAS SGEMM) 2.72 on the same data"),
            std::string::npos)
      << text.out;

  const auto exported = test::run_split(m_dir, "--db t.db export --out h.cuh");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const std::string header = test::read_file(m_dir / "h.cuh");
  EXPECT_NE(header.find("cmt_sgemm_tf32x3_mma<"), std::string::npos) << "the class's winner is exported";
  EXPECT_NE(header.find("{{64, 64, 64, 0, 1, 0, 3}, "), std::string::npos) << "its entry, dtype 3";
  EXPECT_NE(header.find("inline cudaError_t sgemm_tf32x3("), std::string::npos);
  const auto only_class = test::run_split(m_dir, "--db t.db export --dtype tf32x3 --out h2.cuh");
  ASSERT_EQ(only_class.exit_code, 0) << only_class.err;
  const std::string class_header = test::read_file(m_dir / "h2.cuh");
  EXPECT_NE(class_header.find("{{64, 64, 64, 0, 1, 0, 3}, "), std::string::npos);
  EXPECT_EQ(class_header.find("{{64, 64, 64, 0, 1, 0, 0}, "), std::string::npos) << "--dtype tf32x3 leaves f32 out";
  const auto fp32_only = test::run_split(m_dir, "--db t.db export --dtype f32 --out h3.cuh");
  ASSERT_EQ(fp32_only.exit_code, 0) << fp32_only.err;
  const std::string fp32_header = test::read_file(m_dir / "h3.cuh");
  EXPECT_EQ(fp32_header.find("cmt_sgemm_tf32x3_mma<"), std::string::npos) << "--dtype f32 leaves the class out";
  EXPECT_NE(fp32_header.find("{{64, 64, 64, 0, 1, 0, 0}, "), std::string::npos);
  EXPECT_EQ(fp32_header.find("dtype (0 f32, 1 f64, 2 i32, 3 tf32x3)"), std::string::npos)
      << "the kernel table names no class it does not hold";
  EXPECT_NE(header.find("dtype (0 f32, 1 f64, 2 i32, 3 tf32x3)"), std::string::npos);

  // query answers for sgemm_tf32x3: the class's winner (or the f32 path, if that is predicted faster),
  // and says which.
  const auto query = test::run_split(m_dir, "--db t.db query --size 64 --dtype tf32x3 --json");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  const nlohmann::json q = nlohmann::json::parse(query.out);
  EXPECT_EQ(q["problem"], "64x64x64:tf32x3");
  EXPECT_EQ(q["tuned"], true) << q.dump(2);
  const std::string ran = q["dispatch"]["dtype"];
  EXPECT_TRUE(ran == "tf32x3" || ran == "f32") << q.dump(2);
  EXPECT_EQ(q["dispatch"]["template"], ran == "tf32x3" ? "tf32x3_mma" : "blocktile2d") << q.dump(2);
  EXPECT_NE(q["dispatch_reason"].get<std::string>().find(ran == "tf32x3" ? "tf32x3 (opted in)" : "the f32 path"),
            std::string::npos)
      << q.dump(2);
}

}  // namespace
}  // namespace cmt
