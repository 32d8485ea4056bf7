// `cm-tune precision` without a GPU: its report (cli/precision_report.hpp) from made-up
// measurements, the energy columns "n/a" with one line saying why, and the command's one-line errors:
// options checked before the driver is asked, and no GPU is exit 3 with nothing created.
// (test_cli_json_fields.cpp pins the JSON's fields; tests/gpu/test_cli_precision_gpu.cpp measures.)
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/app.hpp"
#include "cli/precision_report.hpp"
#include "cli_support.hpp"
#include "output/printers.hpp"
#include "test_support.hpp"

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::precision_cli_tests {
namespace {

using test::expect_error;

bool no_gpu() { return !test::gpu_unavailable_reason().empty(); }

cli::PrecisionRow row(const Problem& p, const char* name, cli::PrecisionRole role, double tflops,
                      std::vector<double> units, std::optional<double> joules) {
  cli::PrecisionRow r;
  r.problem = p;
  r.implementation = name;
  r.role = role;
  r.tflops = tflops;
  r.median_ms = p.flops() / (tflops * 1e9);
  r.error_units = std::move(units);
  r.passes = role != cli::PrecisionRole::tf32;
  if (!r.passes)
    r.check = "less accurate than FP32 SIMT (alpha=0.75, beta=-1.25): largest error 502 units of 2^-24 against FP64, "
              "the FP32 SIMT reference's 6.1";
  if (joules) {
    cli::PrecisionEnergy e;
    e.runs = 400;
    e.joules_per_gemm = *joules;
    e.watts = 650;
    e.seconds = 2.1;
    e.loop_tflops = tflops * 0.99;
    r.energy = e;
  }
  return r;
}

cli::PrecisionReport report(bool with_energy) {
  cli::PrecisionReport r;
  r.device.name = "NVIDIA H100 80GB HBM3";
  r.device.cc_major = 9;
  r.device.driver_version = 13000;
  r.device.runtime_version = 13000;
  r.data = InputDistribution::normal;
  r.seed = 7;
  r.rounds = 50;
  r.energy_seconds = 2;
  if (with_energy)
    r.power_limit_watts = 700;
  else
    r.energy_unavailable = "NVML cannot be loaded: libnvidia-ml.so.1: cannot open shared object file";
  const Problem p = Problem::make(4096, 4096, 4096);
  const auto j = [&](double v) { return with_energy ? std::optional<double>(v) : std::nullopt; };
  r.rows = {row(p, "cuBLAS SGEMM", cli::PrecisionRole::sgemm, 51.7, {6.1, 5.0}, j(2.0)),
            row(p, "cuBLAS TF32", cli::PrecisionRole::tf32, 372.7, {502, 480}, j(0.5)),
            row(p, "tf32x3_mma[BM=128]", cli::PrecisionRole::kernel, 94.3, {0.93, INFINITY}, j(1.16))};
  r.notes = {"4096x4096x4096: no f32 winner stored for NVIDIA H100 80GB HBM3 in /tmp/x.db"};
  return r;
}

TEST(PrecisionReport, RatesErrorsAndEnergyAgainstSgemm) {
  const std::string text = cli::precision_text(report(true));
  const auto lines = test::lines_of(text);
  ASSERT_GE(lines.size(), 7u) << text;
  EXPECT_EQ(lines[0], "NVIDIA H100 80GB HBM3 (sm_90), driver 13000, runtime 13000; normal inputs (mean 0, variance 1), seed 7");
  EXPECT_NE(lines[1].find("median of 50 interleaved rounds"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("alpha=0.75, beta=-1.25 and alpha=1.25, beta=0"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("a loop of at least 2 s (power limit 700 W)"), std::string::npos) << lines[1];
  // TF/s, x SGEMM, the worst case's error, J/GEMM (4 significant digits), W, E/SGEMM.
  EXPECT_EQ(lines[2], "problem              implementation         TF/s  x SGEMM  error (2^-24)     J/GEMM      W  E/SGEMM");
  EXPECT_EQ(lines[3], "4096x4096x4096       cuBLAS SGEMM          51.70   1.000x           6.10          2    650   1.000x");
  EXPECT_EQ(lines[4], "4096x4096x4096       cuBLAS TF32          372.70   7.209x         502.00        0.5    650   0.250x  "
                      "(not FP32-accurate)");
  EXPECT_EQ(lines[5], "4096x4096x4096       tf32x3_mma[BM=128]    94.30   1.824x            inf       1.16    650   0.580x");
  EXPECT_EQ(lines[6], "4096x4096x4096 cuBLAS TF32: less accurate than FP32 SIMT (alpha=0.75, beta=-1.25): largest "
                      "error 502 units of 2^-24 against FP64, the FP32 SIMT reference's 6.1");
  EXPECT_EQ(lines.back(), "4096x4096x4096: no f32 winner stored for NVIDIA H100 80GB HBM3 in /tmp/x.db");
  EXPECT_EQ(text.find("energy: n/a"), std::string::npos) << text;
}

TEST(PrecisionReport, EnergyWithoutNvmlIsNaAndOneLineSaysWhy) {
  const cli::PrecisionReport r = report(false);
  const std::string text = cli::precision_text(r);
  const auto lines = test::lines_of(text);
  EXPECT_EQ(lines[3], "4096x4096x4096       cuBLAS SGEMM          51.70   1.000x           6.10        n/a    n/a        -");
  size_t why = 0;
  for (const auto& line : lines) why += line.rfind("energy: n/a: ", 0) == 0;
  EXPECT_EQ(why, 1u) << text;
  EXPECT_NE(text.find("energy: n/a: NVML cannot be loaded: libnvidia-ml.so.1: cannot open shared object file\n"),
            std::string::npos)
      << text;
  const nlohmann::json doc = nlohmann::json::parse(output::render_json(cli::precision_record(r)));
  EXPECT_EQ(doc.at("energy_unavailable"), r.energy_unavailable);
  EXPECT_TRUE(doc.at("power_limit_watts").is_null());
  EXPECT_EQ(doc.at("data"), "normal");
  EXPECT_EQ(doc.at("seed"), 7);
  for (const auto& row : doc.at("rows")) {
    EXPECT_TRUE(row.at("joules_per_gemm").is_null()) << row;
    EXPECT_TRUE(row.at("watts").is_null()) << row;
  }
  EXPECT_EQ(doc.at("rows").at(0).at("ratio_to_sgemm"), 1.0);
  EXPECT_DOUBLE_EQ(doc.at("rows").at(1).at("error_units").get<double>(), 502.0);
  EXPECT_EQ(doc.at("rows").at(1).at("error_units_by_case"), nlohmann::json({502.0, 480.0}));
  EXPECT_FALSE(doc.at("rows").at(1).at("passes_fp32_check").get<bool>());
  // An error that is not finite (a NaN where FP64 has a number) is null in JSON.
  EXPECT_TRUE(doc.at("rows").at(2).at("error_units").is_null()) << doc.at("rows").at(2);
}

TEST(PrecisionReport, ARowThatDidNotRunSaysWhyAndFailsTheCommandUnlessItIsTf32) {
  cli::PrecisionReport r = report(true);
  r.rows[2].failure = "launch failed (alpha=0.75, beta=-1.25): too many resources requested for launch";
  r.rows[2].energy.reset();
  const std::string text = cli::precision_text(r);
  EXPECT_NE(text.find("(did not run: launch failed (alpha=0.75, beta=-1.25): too many resources requested for launch)"),
            std::string::npos)
      << text;
  EXPECT_FALSE(cli::precision_row_failed(r.rows[0]));
  EXPECT_FALSE(cli::precision_row_failed(r.rows[1]));  // TF32 is not held to the FP32 check
  EXPECT_TRUE(cli::precision_row_failed(r.rows[2]));
  r.rows[2].failure.clear();
  r.rows[2].passes = false;
  EXPECT_TRUE(cli::precision_row_failed(r.rows[2]));
}

// --- the command --------------------------------------------------------------------------------

TEST(PrecisionCommand, BadOptionsAreOneLineBeforeAnyGpu) {
  expect_error("precision --db p.db", cli::k_exit_usage, {"--sizes is required"});
  expect_error("precision --sizes 1024 --data gaussian --db p.db", cli::k_exit_usage,
               {"--data: 'gaussian' is not a distribution: uniform or normal"});
  expect_error("precision --sizes 1024 --energy-seconds 0.5 --db p.db", cli::k_exit_usage,
               {"--energy-seconds: '0.5' is under 1 second"});
  expect_error("precision --sizes 1024 --energy-seconds nan --db p.db", cli::k_exit_usage,
               {"--energy-seconds: 'nan' is not a finite number of seconds"});
  expect_error("precision --sizes 1024 --energy-seconds 1e308 --db p.db", cli::k_exit_usage,
               {"--energy-seconds: '1e308' is over 600 seconds"});
  expect_error("precision --sizes 1024 --rounds 2 --db p.db", cli::k_exit_usage, {"--rounds", "'2'", "at least 5"});
  expect_error("precision --sizes 1024 --seed -1 --db p.db", cli::k_exit_usage, {"--seed", "'-1'"});
  expect_error("precision --sizes 1024,12x --db p.db", cli::k_exit_usage, {"'12x'"});
  expect_error("precision --sizes 1024 --layout nx --db p.db", cli::k_exit_usage, {"nx"});
  expect_error("precision --sizes 1024:f64 --db p.db", cli::k_exit_usage,
               {"1024x1024x1024:f64: precision measures FP32 GEMMs (f32, or the tf32x3 class), not f64"});
  expect_error("precision --sizes 256,512:i32 --db p.db", cli::k_exit_usage, {"512x512x512:i32", "not i32"});
}

TEST(PrecisionCommand, WithoutAGpuSaysSoInOneLineAndCreatesNothing) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present; this checks the no-driver path";
  expect_error("precision --sizes 1024", cli::k_exit_no_device, {"no CUDA driver found"});
  expect_error("precision --sizes 4096:tf32x3,8192 --layout nn,nt --json", cli::k_exit_no_device, {"no CUDA driver found"});
  // --winners opens the database only once a GPU is there: nothing is created.
  expect_error("precision --sizes 1024 --winners --db p.db", cli::k_exit_no_device, {"no CUDA driver found"});
}

}  // namespace
}  // namespace cmt::precision_cli_tests
