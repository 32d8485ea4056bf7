// What `cm-tune precision` reports, as output-layer data: the measuring is in precision_measure.cpp,
// so the CPU tests pin the table, the text and the JSON without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/types.hpp"
#include "measure/protocol.hpp"
#include "output/table.hpp"
#include "output/value.hpp"

namespace cmt::cli {

/// What a row's implementation is to the report.
enum class PrecisionRole {
  sgemm,   // cuBLAS SGEMM, TF32 off: the baseline every ratio divides by, and the FP32 bar
  tf32,    // cuBLAS SGEMM with TF32 tensor ops (one pass): not held to the FP32 bar
  kernel,  // a kernel (a database winner, or a runner plugged in): held to the bar like a tune
};

/// The energy a loop of one implementation used (NVML's counter over at least --energy-seconds).
struct PrecisionEnergy {
  int64_t runs = 0;            // GEMMs in the loop
  double joules_per_gemm = 0;
  double watts = 0;            // average power between the counter's two readings
  double seconds = 0;          // between the two readings
  double loop_tflops = 0;      // the loop's own rate (CUDA events around it)
};

/// One implementation on one problem.
struct PrecisionRow {
  Problem problem;                 // FP32 storage (f32)
  std::string implementation;      // GemmRunner::name()
  PrecisionRole role = PrecisionRole::kernel;
  std::string failure;             // not empty: it could not run (why), and nothing after that was measured
  double median_ms = 0;            // of the interleaved rounds
  double tflops = 0;
  /// Per validation case (validation_cases(f32), in order): the largest |C - C_fp64| in units of
  /// 2^-24 of |alpha| (|A||B|)_ij + |beta| |C0_ij| (+inf: a NaN or Inf where FP64 has a number).
  std::vector<double> error_units;
  bool passes = false;             // the tuner's FP64 check of the tf32x3 class (Validator::validate)
  std::string check;               // why not, when it fails
  std::optional<PrecisionEnergy> energy;  // nullopt: not measured (energy_note, or the report's reason)
  std::string energy_note;         // this row's energy could not be measured: why
  /// The largest of error_units (0 when none).
  double max_error_units() const;
};

/// What one `precision` run measured.
struct PrecisionReport {
  DeviceInfo device;
  InputDistribution data = InputDistribution::uniform;
  uint64_t seed = 0;
  int rounds = 0;
  double energy_seconds = 0;               // the least length of each energy loop
  std::string energy_unavailable;          // empty when NVML's counter was read; else why not
  std::optional<double> power_limit_watts;
  std::vector<PrecisionRow> rows;
  std::vector<std::string> notes;          // one line each (a size without a database winner...)
};

/// A row per implementation and problem: the rate and its ratio to SGEMM's, the largest error, the
/// energy per GEMM, the average power and the energy's ratio to SGEMM's; "n/a" for energy not
/// measured.
output::Table precision_table(const PrecisionReport& report);
/// `precision --json`: the device, the settings, the rows (with every case's error, the check's
/// verdict and the energy loop), why energy is missing, and the notes.
output::Record precision_record(const PrecisionReport& report);
/// `precision` without --json: two heading lines (device, inputs, how each column is measured), the
/// table, then a line per check that failed, why energy is n/a, and the notes.
std::string precision_text(const PrecisionReport& report);
/// Whether a row tells of a failure the command's exit status reports: an SGEMM or kernel row that
/// did not run or failed the check (cuBLAS TF32 is not held to it).
bool precision_row_failed(const PrecisionRow& row);

}  // namespace cmt::cli
