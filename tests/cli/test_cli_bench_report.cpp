// bench's report without a GPU (cli/bench_report.hpp): the table's columns, notes and geomean row,
// and the regret table, byte for byte, from made-up measurements. (test_cli_json_fields.cpp pins the
// JSON's fields.)
#include <gtest/gtest.h>

#include <string>

#include "cli/bench_report.hpp"

namespace cmt::cli {
namespace {

BenchReport two_calls(bool header) {
  BenchReport report;
  report.device.name = "NVIDIA H100 80GB HBM3";
  report.device.cc_major = 9;
  report.device.driver_version = 13000;
  report.device.runtime_version = 13000;
  report.rounds = 50;
  report.header = header;
  report.kernel_label = [](int index) {
    return index == 0 ? std::string("multistage[BM=64,BN=128,BK=32]") : "k" + std::to_string(index);
  };
  BenchRow tuned;
  tuned.problem = Problem::make(1024, 1024, 1024, false, false, 1, DType::f32);
  tuned.winner = "multistage[BM=64,BN=128,BK=32]";
  tuned.tuned = true;
  tuned.winner_tflops = 36.42;
  tuned.header_tflops = 36.5;
  tuned.cublas_tflops = 33.78;
  tuned.peak = 66.9;
  tuned.winner_valid = tuned.header_valid = true;
  BenchRow modelled;   // an untuned i32 batch: no cuBLAS, the FP32 kernel instead, split K, the seed's bmm
  modelled.problem = Problem::make(64, 64, 4096, false, false, 512, DType::i32);
  modelled.winner = "smallk[BM=64]";
  modelled.header_kernel = "k2";
  modelled.splits = 4;
  modelled.winner_tflops = 5.125;
  modelled.header_tflops = 5;
  modelled.seed_tflops = 2.5;
  modelled.f32_tflops = 10.25;
  modelled.peak = 33.5;
  modelled.winner_valid = true;
  modelled.header_valid = false;
  report.rows = {tuned, modelled};
  return report;
}

const std::string k_heading =
    "NVIDIA H100 80GB HBM3 (sm_90), driver 13000, runtime 13000, median of 50 interleaved rounds, L2 flushed; rates in "
    "TFLOP/s (i32: TOP/s)\n"
    "problem                  kernel   header   cuBLAS k/cuBLAS h/cuBLAS   peak seed bmm   k/seed  dispatched kernel (* "
    "= chosen by the cost model: not tuned)\n";

TEST(BenchReport, TheTableKeepsItsColumnsNotesAndGeomean) {
  EXPECT_EQ(bench_text(two_calls(true)),
            k_heading +
                "1024x1024x1024            36.42    36.50    33.78   1.078x   1.081x    54%        -        -  "
                "multistage[BM=64,BN=128,BK=32]\n"
                "64x64x4096:i32*512 *       5.12     5.00      n/a        -        -    15%     2.50   2.050x  "
                "smallk[BM=64]  (header ran k2)  (the header splits K into 4 slices; the kernel column runs it unsplit)  "
                "(FP32 10.25: i32/f32 0.500x)  (VALIDATION FAILED)\n"
                "geomean (cuBLAS rows)                               1.078x   1.081x\n");
  // Without --header: its columns show -, and a failed header validation is no failure.
  EXPECT_EQ(bench_text(two_calls(false)),
            k_heading +
                "1024x1024x1024            36.42        -    33.78   1.078x        -    54%        -        -  "
                "multistage[BM=64,BN=128,BK=32]\n"
                "64x64x4096:i32*512 *       5.12        -      n/a        -        -    15%     2.50   2.050x  "
                "smallk[BM=64]  (header ran k2)  (the header splits K into 4 slices; the kernel column runs it unsplit)  "
                "(FP32 10.25: i32/f32 0.500x)\n"
                "geomean (cuBLAS rows)                               1.078x        -\n");
}

TEST(BenchReport, TheRegretTableFitsItsKernelColumnsAndEndsWithTheSpread) {
  BenchReport report = two_calls(true);
  report.rows.resize(1);
  report.regret = true;
  RegretRow same;
  same.problem = report.rows[0].problem;
  same.chosen = same.best = 0;
  same.chosen_us = same.best_us = 58.9;
  same.timed = 31;
  RegretRow other;
  other.problem = Problem::make(256, 256, 40000, false, false, 1, DType::f32);
  other.chosen = 3;
  other.splits = 2;
  other.chosen_us = 120.25;
  other.best = 4;
  other.best_us = 100;
  other.regret = 1.2025;
  other.timed = 7;
  other.failed = {5};
  report.regret_rows = {same, other};
  const std::string text = bench_text(report);
  const std::string regret = text.substr(text.find("\ndispatch regret"));
  EXPECT_EQ(regret,
            "\ndispatch regret: the chosen kernel's time over the fastest exported kernel's that the call can run, timed "
            "together\n"
            "problem                chosen                            its us fastest                           its us  "
            "regret  timed\n"
            "1024x1024x1024         multistage[BM=64,BN=128,BK=32]      58.9 (the chosen one)                    58.9   "
            "1.000     31\n"
            "256x256x40000          k3                                 120.2 k4                                 100.0   "
            "1.202      7  (chosen: split into 2 slices)  (VALIDATION FAILED: k5)\n"
            "regret over 2 calls: median 1.101, 90th pct 1.182, max 1.202\n");
}

}  // namespace
}  // namespace cmt::cli
