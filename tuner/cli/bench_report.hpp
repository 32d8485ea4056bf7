// What `cm-tune bench` reports, as output-layer data: the measuring stays in cmd_bench.cpp, so the
// CPU tests pin the report's text and JSON without a GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/types.hpp"
#include "export/regret.hpp"
#include "output/table.hpp"
#include "output/value.hpp"

namespace cmt::cli {

/// One call bench timed.
struct BenchRow {
  Problem problem;
  std::string winner;            // template[params] that the dispatch picks (the header's choice too)
  std::string dispatch_note;
  int splits = 1;                // the header splits K into this many slices
  bool tuned = false;            // the problem was tuned; else the cost model chose
  std::string header_kernel;     // template[params] the header dispatched, when it differs
  double winner_tflops = 0, header_tflops = 0;
  double cublas_tflops = 0;      // 0: cuBLAS has no GEMM of this type (i32)
  double seed_tflops = 0;        // batched problems: the best variant of the seed's bmm; else 0
  std::string seed_variant;
  double f32_tflops = 0;         // i32 problems: the FP32 dispatch's kernel at the same shape; 0: none
  std::string f32_kernel;
  double peak = 0;               // the device's peak for the type (FP64: tensor cores where it has them)
  bool winner_valid = false, header_valid = false;
};

/// What one bench run measured.
struct BenchReport {
  DeviceInfo device;
  int rounds = 0;
  bool header = false;                             // the exported header was timed too (--header)
  std::string header_form;                         // "machine code" (built by the C++ compiler) or "sources" (nvcc)
  std::vector<BenchRow> rows;
  bool regret = false;                             // --regret
  std::vector<RegretRow> regret_rows;
  std::function<std::string(int)> kernel_label;    // template[params] of an exported kernel, by index
};

/// A row per call: the rates, their ratios, the share of the peak and the dispatched kernel, notes for
/// people (the kernel the header ran, split K, the FP32 comparison, a failed validation), and for
/// people too a last row of the geometric means over the calls cuBLAS has a GEMM for.
output::Table bench_table(const BenchReport& report);
/// A row per call of --regret: the chosen kernel and the fastest, their times, the regret.
output::Table regret_table(const BenchReport& report);
/// `bench --json`: the device, the rows, the geometric means and, with --regret, its rows and spread.
output::Record bench_record(const BenchReport& report);
/// `bench` without --json: a heading, the table and, with --regret, the regret table and its spread.
std::string bench_text(const BenchReport& report);

}  // namespace cmt::cli
