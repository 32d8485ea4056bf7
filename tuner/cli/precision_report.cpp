#include "cli/precision_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "output/printers.hpp"

namespace cmt::cli {

namespace {

const char* role_name(PrecisionRole role) {
  switch (role) {
    case PrecisionRole::sgemm: return "sgemm";
    case PrecisionRole::tf32: return "tf32";
    case PrecisionRole::kernel: return "kernel";
  }
  return "?";
}

/// The SGEMM row of the row's problem, if the report has one that ran.
const PrecisionRow* sgemm_of(const PrecisionReport& report, const PrecisionRow& row) {
  for (const PrecisionRow& r : report.rows)
    if (r.role == PrecisionRole::sgemm && r.problem == row.problem && r.failure.empty()) return &r;
  return nullptr;
}

/// An error in units of 2^-24: null when not finite (JSON), shown as "inf".
output::Value units_value(double units) { return std::isfinite(units) ? output::Value(units) : output::Value(); }

/// "alpha=0.75, beta=-1.25 and alpha=1.25, beta=0".
std::string cases_text() {
  std::string out;
  const ValidationCases cases = validation_cases(DType::f32);
  for (size_t i = 0; i < cases.size(); ++i)
    out += fmt::format("{}alpha={}, beta={}", i == 0 ? "" : i + 1 == cases.size() ? " and " : "; ", cases[i].alpha,
                       cases[i].beta);
  return out;
}

/// "4.73e-06", "1.234", "12.35": four significant digits.
std::string joules_text(double j) { return fmt::format("{:.4g}", j); }

}  // namespace

double PrecisionRow::max_error_units() const {
  double worst = 0;
  for (const double u : error_units) worst = std::isnan(u) ? INFINITY : std::max(worst, u);
  return worst;
}

bool precision_row_failed(const PrecisionRow& row) {
  if (row.role == PrecisionRole::tf32) return false;
  return !row.failure.empty() || !row.passes;
}

output::Table precision_table(const PrecisionReport& report) {
  using output::Column;
  using output::Show;
  output::Table table(
      {Column("problem").width(20), Column("implementation").fit(), Column("role").show(Show::data),
       Column("tflops", "TF/s").right().width(8).precision(2).null_text("-"),
       Column("ratio_to_sgemm", "x SGEMM").right().width(8).precision(3).suffix("x"),
       Column("error_units", "error (2^-24)").right().width(14).precision(2).null_text("inf"),
       Column("joules_per_gemm", "J/GEMM").right().width(10).null_text("n/a"),
       Column("watts", "W").right().width(6).precision(0).null_text("n/a"),
       Column("energy_ratio_to_sgemm", "E/SGEMM").right().width(8).precision(3).suffix("x"),
       Column("notes", "").gap("").show(Show::human), Column("median_ms").show(Show::data),
       Column("error_units_by_case").show(Show::data), Column("passes_fp32_check").show(Show::data),
       Column("check").show(Show::data), Column("failure").show(Show::data), Column("energy_runs").show(Show::data),
       Column("energy_seconds").show(Show::data), Column("loop_tflops").show(Show::data),
       Column("energy_note").show(Show::data)});
  for (const PrecisionRow& r : report.rows) {
    const PrecisionRow* sgemm = sgemm_of(report, r);
    const bool ran = r.failure.empty();
    std::string notes;
    if (!ran) notes = fmt::format("  (did not run: {})", r.failure);
    else if (!r.passes) notes = r.role == PrecisionRole::tf32 ? "  (not FP32-accurate)" : "  (FAILS THE FP32 CHECK)";
    if (ran && !r.energy && !r.energy_note.empty()) notes += "  (energy: see below)";
    std::vector<output::Value> by_case;
    for (const double u : r.error_units) by_case.push_back(units_value(u));
    auto row = table.add_row();
    row.set("problem", r.problem.to_string())
        .set("implementation", r.implementation)
        .set("role", role_name(r.role))
        .set("tflops", ran ? output::Value(r.tflops) : output::Value())
        .set("ratio_to_sgemm", ran && sgemm && sgemm->tflops > 0 ? output::Value(r.tflops / sgemm->tflops)
                                                                 : output::Value())
        .set("error_units", ran ? units_value(r.max_error_units()) : output::Value())
        .set("notes", notes)
        .set("median_ms", ran ? output::Value(r.median_ms) : output::Value())
        .set("error_units_by_case", by_case)
        .set("passes_fp32_check", ran ? output::Value(r.passes) : output::Value())
        .set("check", r.passes || !ran ? output::Value() : output::Value(r.check))
        .set("failure", ran ? output::Value() : output::Value(r.failure))
        .set("energy_note", r.energy_note.empty() ? output::Value() : output::Value(r.energy_note));
    if (!ran) row.text("error_units", "-");
    if (r.energy) {
      const PrecisionEnergy& e = *r.energy;
      row.set("joules_per_gemm", e.joules_per_gemm, joules_text(e.joules_per_gemm))
          .set("watts", e.watts)
          .set("energy_runs", e.runs)
          .set("energy_seconds", e.seconds)
          .set("loop_tflops", e.loop_tflops);
      if (sgemm && sgemm->energy && sgemm->energy->joules_per_gemm > 0)
        row.set("energy_ratio_to_sgemm", e.joules_per_gemm / sgemm->energy->joules_per_gemm);
    }
  }
  return table;
}

output::Record precision_record(const PrecisionReport& report) {
  output::List cases;
  for (const ValidationCase& vc : validation_cases(DType::f32)) cases.push_back(output::Record{{"alpha", vc.alpha}, {"beta", vc.beta}});
  return {{"device", report.device.name},
          {"uuid", report.device.uuid},
          {"arch", report.device.arch()},
          {"driver", report.device.driver_version},
          {"runtime", report.device.runtime_version},
          {"data", distribution_name(report.data)},
          {"seed", static_cast<int64_t>(report.seed)},
          {"rounds", report.rounds},
          {"energy_seconds", report.energy_seconds},
          {"energy_unavailable", report.energy_unavailable.empty() ? output::Value() : output::Value(report.energy_unavailable)},
          {"power_limit_watts", report.power_limit_watts},
          {"cases", cases},
          {"rows", output::table_records(precision_table(report))},
          {"notes", report.notes}};
}

std::string precision_text(const PrecisionReport& report) {
  const DeviceInfo& d = report.device;
  std::string out = fmt::format("{} ({}), driver {}, runtime {}; {} inputs{}, seed {}\n", d.name, d.arch(),
                                d.driver_version, d.runtime_version, distribution_name(report.data),
                                report.data == InputDistribution::uniform ? " in [-1, 1)" : " (mean 0, variance 1)",
                                report.seed);
  out += fmt::format(
      "TF/s: median of {} interleaved rounds, L2 flushed; error: largest |C - C_fp64| in units of 2^-24 of "
      "|alpha||A||B| + |beta||C0| (C_fp64: cuBLAS DGEMM of the same inputs; {}); energy: NVML's energy counter over "
      "a loop of at least {:g} s{}\n",
      report.rounds, cases_text(), report.energy_seconds,
      report.power_limit_watts ? fmt::format(" (power limit {:.0f} W)", *report.power_limit_watts) : "");
  out += output::render_text(precision_table(report));
  for (const PrecisionRow& r : report.rows) {
    if (r.failure.empty() && !r.passes && !r.check.empty())
      out += fmt::format("{} {}: {}\n", r.problem.to_string(), r.implementation, r.check);
    if (!r.energy_note.empty()) out += fmt::format("{} {}: energy n/a: {}\n", r.problem.to_string(), r.implementation, r.energy_note);
  }
  if (!report.energy_unavailable.empty()) out += fmt::format("energy: n/a: {}\n", report.energy_unavailable);
  for (const std::string& note : report.notes) out += note + "\n";
  return out;
}

}  // namespace cmt::cli
