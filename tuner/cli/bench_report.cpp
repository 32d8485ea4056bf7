#include "cli/bench_report.hpp"

#include <cmath>
#include <fmt/format.h>

#include "core/dtype.hpp"
#include "core/stats.hpp"
#include "output/printers.hpp"

namespace cmt::cli {

namespace {

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

/// num / den, null unless both are above 0 (a rate of 0 is one not measured).
output::Value ratio_or_null(double num, double den) {
  return num > 0 && den > 0 ? output::Value(num / den) : output::Value();
}
/// A rate, null unless above 0.
output::Value rate_or_null(double v) { return v > 0 ? output::Value(v) : output::Value(); }

/// The ratios of the winner's and the header's rates to cuBLAS's, over the calls cuBLAS has a GEMM for.
struct CublasRatios {
  std::vector<double> winner, header;
};

CublasRatios cublas_ratios(const BenchReport& report) {
  CublasRatios out;
  for (const auto& r : report.rows) {
    if (r.cublas_tflops <= 0) continue;
    out.winner.push_back(r.winner_tflops / r.cublas_tflops);
    if (report.header) out.header.push_back(r.header_tflops / r.cublas_tflops);
  }
  return out;
}

}  // namespace

output::Table bench_table(const BenchReport& report) {
  using output::Column;
  using output::Show;
  const auto number = [](const char* name, const char* title, int precision) {
    return Column(name, title).right().width(8).precision(precision);
  };
  output::Table table({Column("problem").width(22), Column("dtype").show(Show::data),
                       number("winner_tflops", "kernel", 2), number("header_tflops", "header", 2),
                       number("cublas_tflops", "cuBLAS", 2).null_text("n/a"),
                       number("winner_ratio", "k/cuBLAS", 3).suffix("x"), number("header_ratio", "h/cuBLAS", 3).suffix("x"),
                       Column("winner_peak_fraction", "peak").right().width(6).scale(100).precision(0).suffix("%"),
                       number("seed_bmm_tflops", "seed bmm", 2), number("winner_vs_seed_bmm", "k/seed", 3).suffix("x"),
                       Column("winner", "dispatched kernel (* = chosen by the cost model: not tuned)").gap("  "),
                       Column("notes", "").gap("").show(Show::human), Column("tuned").show(Show::data),
                       Column("dispatch").show(Show::data), Column("splits").show(Show::data),
                       Column("winner_valid").show(Show::data), Column("peak").show(Show::data),
                       Column("seed_bmm_variant").show(Show::data), Column("f32_kernel").show(Show::data),
                       Column("f32_tflops").show(Show::data), Column("winner_vs_f32").show(Show::data),
                       Column("header_kernel").show(Show::data), Column("header_valid").show(Show::data),
                       Column("header_vs_winner").show(Show::data)});
  const bool header = report.header;
  for (const BenchRow& r : report.rows) {
    std::string notes;
    if (!r.header_kernel.empty() && r.header_kernel != r.winner) notes += fmt::format("  (header ran {})", r.header_kernel);
    if (r.splits > 1) notes += fmt::format("  (the header splits K into {} slices; the kernel column runs it unsplit)", r.splits);
    if (r.f32_tflops > 0) notes += fmt::format("  (FP32 {:.2f}: i32/f32 {:.3f}x)", r.f32_tflops, r.winner_tflops / r.f32_tflops);
    if (!(r.winner_valid && (!header || r.header_valid))) notes += "  (VALIDATION FAILED)";
    auto row = table.add_row();
    row.set("problem", r.problem.to_string())
        .set("dtype", dtype_name(r.problem.dtype))
        .set("winner_tflops", r.winner_tflops)
        .set("header_tflops", header ? output::Value(r.header_tflops) : output::Value())
        .set("cublas_tflops", rate_or_null(r.cublas_tflops))
        .set("winner_ratio", ratio_or_null(r.winner_tflops, r.cublas_tflops))
        .set("header_ratio", header ? ratio_or_null(r.header_tflops, r.cublas_tflops) : output::Value())
        .set("winner_peak_fraction", ratio_or_null(r.winner_tflops, r.peak))
        .set("seed_bmm_tflops", rate_or_null(r.seed_tflops))
        .set("winner_vs_seed_bmm", ratio_or_null(r.winner_tflops, r.seed_tflops))
        .set("winner", r.winner)
        .set("notes", notes)
        .set("tuned", r.tuned)
        .set("dispatch", r.dispatch_note)
        .set("splits", r.splits)
        .set("winner_valid", r.winner_valid)
        .set("peak", r.peak)
        .set("seed_bmm_variant", r.seed_variant)
        .set("f32_kernel", r.f32_kernel)
        .set("f32_tflops", rate_or_null(r.f32_tflops))
        .set("winner_vs_f32", ratio_or_null(r.winner_tflops, r.f32_tflops))
        .set("header_kernel", r.header_kernel)
        .set("header_valid", header ? output::Value(r.header_valid) : output::Value())
        .set("header_vs_winner", header ? output::Value(r.header_tflops / r.winner_tflops) : output::Value());
    if (!r.tuned) row.text("problem", r.problem.to_string() + " *");
    // The percentage as bench has always computed it, also where the JSON's fraction is null (a rate
    // or a peak of 0).
    row.text("winner_peak_fraction", fmt::format("{:.0f}%", 100.0 * r.winner_tflops / r.peak));
  }
  const CublasRatios ratios = cublas_ratios(report);
  if (!ratios.winner.empty())
    table.add_row(Show::human)
        .set("problem", "geomean (cuBLAS rows)")
        .set("winner_tflops", "")
        .set("header_tflops", "")
        .set("cublas_tflops", "")
        .set("winner_ratio", geomean(ratios.winner))
        .set("header_ratio", header ? output::Value(geomean(ratios.header)) : output::Value())
        .omit("winner_peak_fraction")
        .omit("seed_bmm_tflops")
        .omit("winner_vs_seed_bmm")
        .omit("winner")
        .omit("notes");
  return table;
}

output::Table regret_table(const BenchReport& report) {
  using output::Column;
  using output::Show;
  output::Table table({Column("problem").width(22), Column("chosen").width(16).fit(1),
                       Column("chosen_us", "its us").right().width(9).precision(1),
                       Column("best", "fastest").width(16).fit(1),
                       Column("best_us", "its us").right().width(9).precision(1),
                       Column("regret").right().width(7).precision(3), Column("timed").right().width(6),
                       Column("notes", "").gap("").show(Show::human), Column("splits").show(Show::data),
                       Column("failed_validation").show(Show::data)});
  for (const RegretRow& r : report.regret_rows) {
    std::string notes;
    if (r.splits > 1) notes += fmt::format("  (chosen: split into {} slices)", r.splits);
    std::vector<std::string> failed;
    for (const int k : r.failed) {
      failed.push_back(report.kernel_label(k));
      notes += fmt::format("  (VALIDATION FAILED: {})", failed.back());
    }
    auto row = table.add_row();
    row.set("problem", r.problem.to_string())
        .set("chosen", report.kernel_label(r.chosen))
        .set("chosen_us", r.chosen_us)
        .set("best", report.kernel_label(r.best))
        .set("best_us", r.best_us)
        .set("regret", r.regret)
        .set("timed", r.timed)
        .set("notes", notes)
        .set("splits", r.splits)
        .set("failed_validation", failed);
    if (r.best == r.chosen) row.text("best", "(the chosen one)");
  }
  return table;
}

output::Record bench_record(const BenchReport& report) {
  const CublasRatios ratios = cublas_ratios(report);
  output::Value regret;
  if (report.regret) {
    const Spread spread = regret_spread(report.regret_rows);
    regret = output::Record{{"rows", output::table_records(regret_table(report))},
                            {"count", spread.count},
                            {"median", spread.median},
                            {"p90", spread.p90},
                            {"max", spread.max}};
  }
  return {{"device", report.device.name},
          {"driver", report.device.driver_version},
          {"runtime", report.device.runtime_version},
          {"rounds", report.rounds},
          {"header_form", report.header ? output::Value(report.header_form) : output::Value()},
          {"rows", output::table_records(bench_table(report))},
          {"geomean_winner_ratio", ratios.winner.empty() ? output::Value() : output::Value(geomean(ratios.winner))},
          {"geomean_header_ratio",
           report.header && !ratios.header.empty() ? output::Value(geomean(ratios.header)) : output::Value()},
          {"regret", regret}};
}

std::string bench_text(const BenchReport& report) {
  const DeviceInfo& device = report.device;
  std::string out = fmt::format(
      "{} ({}), driver {}, runtime {}, median of {} interleaved rounds, L2 flushed; rates in TFLOP/s (i32: TOP/s)\n",
      device.name, device.arch(), device.driver_version, device.runtime_version, report.rounds);
  out += output::render_text(bench_table(report));
  if (!report.regret) return out;
  out += "\ndispatch regret: the chosen kernel's time over the fastest exported kernel's that the call can run, timed "
         "together\n";
  out += output::render_text(regret_table(report));
  const Spread s = regret_spread(report.regret_rows);
  if (s.count > 0)
    out += fmt::format("regret over {} call{}: median {:.3f}, 90th pct {:.3f}, max {:.3f}\n", s.count,
                       s.count == 1 ? "" : "s", s.median, s.p90, s.max);
  return out;
}

}  // namespace cmt::cli
