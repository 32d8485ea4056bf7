#include "report/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "core/dtype.hpp"
#include "output/printers.hpp"
#include "report/held_out_table.hpp"
#include "report/svg.hpp"

namespace cmt::report {

// Named, not anonymous: a unity build compiles this file with the other report files' helpers.
namespace report_html_detail {

using output::html_escaped;

/// The colour and marker of each kernel family that has points, the same in every plot: palette
/// entries in name order, the marker changing each time the palette wraps.
class FamilyStyles {
 public:
  explicit FamilyStyles(const ReportData& data) {
    std::set<std::string> names;
    for (const SpeedPlot& p : data.speed)
      for (const SpeedSeries& s : p.series)
        if (!s.cublas) names.insert(s.name);
    for (const RooflinePoint& w : data.roofline.winners) names.insert(w.template_name);
    for (const LandscapeTrial& t : data.landscape.trials) names.insert(t.template_name);
    int i = 0;
    for (const std::string& n : names) m_index[n] = i++;
  }
  Series series(const std::string& family, const std::string& label) const {
    const auto it = m_index.find(family);
    const int i = it == m_index.end() ? 0 : it->second;
    static const Marker k_markers[] = {Marker::circle, Marker::diamond, Marker::triangle, Marker::square};
    Series s;
    s.label = label;
    s.colour = i % k_palette_size;
    s.marker = k_markers[(i / k_palette_size) % 4];
    return s;
  }

 private:
  std::map<std::string, int> m_index;
};

std::string rate_unit(DType d) { return std::string(type_info(d).rate_unit); }

/// "TF/s", or "TF/s or TOP/s" when the types shown mix floating-point and integer rates.
std::string rate_units(const std::vector<DType>& dtypes) {
  std::vector<std::string> units;
  for (const DType d : dtypes)
    if (std::find(units.begin(), units.end(), rate_unit(d)) == units.end()) units.push_back(rate_unit(d));
  std::string out;
  for (const std::string& u : units) out += (out.empty() ? "" : " or ") + u;
  return out.empty() ? "TF/s" : out;
}

std::string rate_text(double rate, const std::string& unit) {
  return fmt::format("{} {}", rate >= 100 ? fmt::format("{:.1f}", rate) : fmt::format("{:.3g}", rate), unit);
}

std::string time_text(double us) {
  if (us >= 1000) return fmt::format("{:.3f} ms", us / 1000);
  return fmt::format("{:.1f} us", us);
}

bool is_generic(const ExportModel& model, int kernel) {
  for (const auto& row : model.generic_kernels)
    for (const int k : row)
      if (k == kernel) return true;
  return false;
}

/// A kernel of the model for a legend: "#12 warptile 128x256" (its index, family, and tile).
std::string short_kernel(const ExportModel& model, int kernel) {
  if (kernel < 0) return "none computes it";
  const ExportKernel& k = model.kernels.at(static_cast<size_t>(kernel));
  return fmt::format("#{} {} {}x{}{}", kernel, k.template_name, k.shape.tile_m, k.shape.tile_n,
                     is_generic(model, kernel) ? " (generic)" : "");
}

/// A legend entry drawn as a line (a roof, a reference rate).
Series line_series(std::string label, int colour, bool dashed) {
  Series s;
  s.label = std::move(label);
  s.colour = colour;
  s.line = true;
  s.dashed = dashed;
  return s;
}

std::string figure(const Plot& plot) { return "<figure>\n" + plot.render() + "</figure>\n"; }

// --- the plots -------------------------------------------------------------------------------------

std::string speed_plot(const SpeedPlot& p, const FamilyStyles& styles) {
  const std::string unit = rate_unit(p.dtype);
  std::vector<double> sizes, rates;
  size_t families = 0;
  for (const SpeedSeries& s : p.series) {
    families += s.cublas ? 0 : 1;
    for (const RatePoint& r : s.points) {
      sizes.push_back(problem_size(r.problem));
      rates.push_back(r.rate);
    }
  }
  const bool cublas = std::any_of(p.series.begin(), p.series.end(), [](const SpeedSeries& s) { return s.cublas; });
  Plot plot(fmt::format("speed-{}", dtype_name(p.dtype)),
            fmt::format("Speed against size, {}: {} famil{}{} on {} tuned problem{}", dtype_name(p.dtype), families,
                        families == 1 ? "y" : "ies", cublas ? " and cuBLAS" : "", p.problems, p.problems == 1 ? "" : "s"),
            Axis::log_fit("problem size: (M N K batch)^(1/3), log scale", sizes, 2),
            Axis::log_fit(fmt::format("rate ({}), log scale", unit), rates, 10));
  plot.size(980, 520);
  for (const SpeedSeries& s : p.series) {
    Series style = styles.series(s.name, s.name);
    if (s.cublas) {
      style.colour = k_foreground;
      style.marker = Marker::square;
      style.hollow = true;
    }
    const int series = plot.add_series(style);
    for (const RatePoint& r : s.points)
      plot.point(series, problem_size(r.problem), r.rate,
                 fmt::format("{} at {}: {} ({:.4g} ms)\n{}", s.name, r.problem.to_string(), rate_text(r.rate, unit), r.ms,
                             r.kernel));
  }
  plot.note(fmt::format("Each point is a family's best passing trial at a tuned problem (its interleaved re-timing where "
                        "it was re-timed){}. Every layout and batch of a size shares its x. Hover a point for the problem "
                        "and the kernel.",
                        cublas ? "; hollow squares are cuBLAS at the same problem" : ""));
  return figure(plot);
}

std::string roofline_plot(const ReportData& data, const FamilyStyles& styles) {
  const Roofline& r = data.roofline;
  const std::string unit = rate_units(data.dtypes);
  const double bw = r.bandwidth_gbs / 1000;   // T bytes/s: rate = intensity x bw
  std::vector<double> xs, ys;
  for (const RooflinePoint& w : r.winners) {
    xs.push_back(w.intensity);
    ys.push_back(w.rate);
  }
  for (const Roof& roof : r.roofs) {
    ys.push_back(roof.rate);
    if (bw > 0) xs.push_back(roof.rate / bw);   // the ridge point
  }
  const Axis x = Axis::log_fit("arithmetic intensity (operations per byte moved at the least), log scale", xs, 10);
  Axis y = Axis::log_fit(fmt::format("rate ({}), log scale", unit), ys, 10);
  Plot plot("roofline", fmt::format("Roofline of {}: {} winners", data.device.name, r.winners.size()), x, y);
  plot.size(1060, 520).legend_width(330);
  for (const Roof& roof : r.roofs) {
    const int series =
        plot.add_series(line_series(fmt::format("{}: {}", roof.name, rate_text(roof.rate, unit)), k_foreground, roof.tensor_cores));
    const double ridge = bw > 0 ? roof.rate / bw : x.lo;
    plot.line(series, {{std::max(ridge, x.lo), roof.rate}, {x.hi, roof.rate}}, roof.name);
  }
  if (bw > 0) {
    const double top = r.roofs.empty() ? y.hi : r.roofs.back().rate;
    // Grey: the memory roof.
    const int series = plot.add_series(line_series(fmt::format("DRAM: {:.0f} GB/s (theoretical)", r.bandwidth_gbs), 7, false));
    plot.line(series, {{x.lo, bw * x.lo}, {top / bw, top}}, fmt::format("DRAM {:.0f} GB/s", r.bandwidth_gbs));
  }
  std::map<std::string, int> families;
  for (const RooflinePoint& w : r.winners) families.emplace(w.template_name, 0);
  for (auto& [family, series] : families) series = plot.add_series(styles.series(family, family));
  for (const RooflinePoint& w : r.winners) {
    plot.point(families.at(w.template_name), w.intensity, w.rate,
               fmt::format("{}: {} at {:.1f} operations/byte\n{}", w.problem.to_string(), rate_text(w.rate, rate_unit(w.problem.dtype)),
                           w.intensity, w.kernel));
  }
  plot.note(r.note + " Solid roofs: CUDA cores (SIMT) and DRAM; dashed: tensor cores. Points: each tuned problem's "
                     "winner, by family.");
  return figure(plot);
}

std::string landscape_trials_plot(const Landscape& l, const FamilyStyles& styles) {
  const std::string unit = rate_unit(l.problem.dtype);
  std::vector<double> rates;
  for (const LandscapeTrial& t : l.trials) rates.push_back(t.rate);
  if (l.cublas_rate) rates.push_back(*l.cublas_rate);
  Plot plot("landscape-trials",
            fmt::format("Search landscape of {}: {} passing trials", l.problem.to_string(), l.trials.size()),
            Axis::linear("trial, fastest first (rank)", 0, static_cast<double>(std::max<size_t>(l.trials.size(), 1)) + 1),
            Axis::linear_from_zero(fmt::format("rate ({})", unit), rates));
  plot.size(980, 460);
  std::map<std::string, int> families;
  for (const LandscapeTrial& t : l.trials) families.emplace(t.template_name, 0);
  for (auto& [family, series] : families) series = plot.add_series(styles.series(family, family));
  for (size_t i = 0; i < l.trials.size(); ++i) {
    const LandscapeTrial& t = l.trials[i];
    plot.point(families.at(t.template_name), static_cast<double>(i + 1), t.rate,
               fmt::format("#{} {}: {}{}\n{}[{}]", i + 1, t.template_name, rate_text(t.rate, unit),
                           t.winner ? " (the winner)" : "", t.template_name, t.params));
    if (t.winner) plot.ring(static_cast<double>(i + 1), t.rate, 7, "the winner");
  }
  if (l.cublas_rate) {
    const int series = plot.add_series(line_series(fmt::format("cuBLAS: {}", rate_text(*l.cublas_rate, unit)), k_foreground, true));
    plot.line(series, {{0, *l.cublas_rate}, {static_cast<double>(l.trials.size()) + 1, *l.cublas_rate}}, "cuBLAS");
  }
  plot.note(fmt::format("Every candidate that passed validation and was timed on {} ({}), ranked as the winner "
                        "choice ranks them (re-timed trials first). The ring marks the winner.",
                        l.problem.to_string(), l.requested ? "the requested problem" : "the largest problem searched in full"));
  return figure(plot);
}

std::string heat_map_plots(const Landscape& l) {
  const std::string unit = rate_unit(l.problem.dtype);
  double lo = 0, hi = 0;
  bool first = true;
  for (const HeatMap& m : l.heat_maps)
    for (const HeatCell& c : m.cells) {
      lo = first ? c.best_rate : std::min(lo, c.best_rate);
      hi = first ? c.best_rate : std::max(hi, c.best_rate);
      first = false;
    }
  if (!(hi > lo)) hi = lo + 1;
  std::string out;
  for (const HeatMap& m : l.heat_maps) {
    std::vector<std::string> bns, bms;
    for (const int64_t v : m.bns) bns.push_back(std::to_string(v));
    for (const int64_t v : m.bms) bms.push_back(std::to_string(v));
    Plot plot(fmt::format("heatmap-{}", m.template_name), fmt::format("{}: best per tile", m.template_name),
              Axis::category("BN (columns of C per block)", bns), Axis::category("BM (rows per block)", bms));
    // Cells about 60 x 36 pixels, beside the axis labels and the colour key.
    plot.size(static_cast<int>(std::max<size_t>(330, 200 + 60 * bns.size())),
              static_cast<int>(std::max<size_t>(200, 100 + 36 * bms.size())));
    plot.colour_key(unit, lo, hi, false);
    Series cells;
    cells.label = m.template_name;
    const int series = plot.add_hidden_series(cells);
    for (const HeatCell& c : m.cells) {
      const double x = static_cast<double>(std::find(m.bns.begin(), m.bns.end(), c.bn) - m.bns.begin());
      const double y = static_cast<double>(std::find(m.bms.begin(), m.bms.end(), c.bm) - m.bms.begin());
      plot.rect(series, x - 0.5, y - 0.5, x + 0.5, y + 0.5,
                fmt::format("BM={} BN={}: best {} of {} passing trial{}{}\n{}[{}]", c.bm, c.bn, rate_text(c.best_rate, unit),
                            c.trials, c.trials == 1 ? "" : "s", c.winner ? " (the winner's tile)" : "", m.template_name,
                            c.best_params),
                true, heat_colour((c.best_rate - lo) / (hi - lo)));
      if (c.winner) plot.ring(x, y, 9, "the winner's tile");
    }
    out += figure(plot);
  }
  return out;
}

std::string outcome_plot(const Landscape& l) {
  // A colour per outcome: ok green, wrong red, abandoned orange, skipped grey, ...
  static const int k_outcome_colours[] = {2, 6, 8, 3, 1, 7, 4, 5};
  static_assert(std::size(k_outcome_colours) == std::size(k_outcomes));
  // The first family at the top: bands count up from the axis.
  std::vector<OutcomeBar> bars(l.outcomes.rbegin(), l.outcomes.rend());
  std::vector<std::string> families;
  std::vector<double> totals;
  for (const OutcomeBar& b : bars) {
    families.push_back(b.template_name);
    int total = 0;
    for (const int c : b.counts) total += c;
    totals.push_back(total);
  }
  Plot plot("outcomes", fmt::format("Outcomes of the trials of {}, per family", l.problem.to_string()),
            Axis::linear_from_zero("trials", totals), Axis::category("kernel family", families));
  plot.size(980, static_cast<int>(std::max<size_t>(240, 130 + 26 * families.size())));
  std::vector<int> series;
  for (size_t o = 0; o < std::size(k_outcomes); ++o) {
    Series s;
    s.label = to_string(k_outcomes[o]);
    s.colour = k_outcome_colours[o];
    s.swatch = true;
    series.push_back(plot.add_series(s));
  }
  for (size_t f = 0; f < bars.size(); ++f) {
    const OutcomeBar& b = bars[f];
    double at = 0;
    for (size_t o = 0; o < std::size(k_outcomes); ++o) {
      const int count = b.counts[o];
      if (count == 0) continue;
      plot.rect(series[o], at, static_cast<double>(f) - 0.32, at + count, static_cast<double>(f) + 0.32,
                fmt::format("{}: {} {} of {} trials", b.template_name, count, to_string(k_outcomes[o]),
                            static_cast<int>(totals[f])));
      at += count;
    }
  }
  plot.note("ok: passed and timed; wrong: failed validation; abandoned: passed, then stopped as over 3x the best time "
            "so far; skipped: its requirements, resources or spills ruled it out; crashed, timeout: the measuring "
            "process faulted or hung; compile_error, launch_error: as named.");
  return figure(plot);
}

std::string dispatch_plots(const ReportData& data, const DispatchMap& map) {
  const ExportModel& model = data.model;
  const std::string unit = rate_unit(map.dtype);
  const double lo = static_cast<double>(map.sizes.front()), hi = static_cast<double>(map.sizes.back());
  const double half_step = map.sizes.size() > 1 ? std::sqrt(std::pow(hi / lo, 1.0 / (map.sizes.size() - 1))) : 2;
  const auto axis = [&](const std::string& label) { return Axis::log(label, lo / half_step, hi * half_step, 2); };
  const std::string what = fmt::format("{} NN at K={}", dtype_name(map.dtype), map.k);

  // Kernels by how many cells they take, most first: the palette goes to the most visible.
  std::map<int, int> cells_of;
  for (const DispatchCell& c : map.cells) ++cells_of[c.kernel];
  std::vector<std::pair<int, int>> kernels(cells_of.begin(), cells_of.end());
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.second > b.second; });

  Plot plot(fmt::format("dispatch-{}", dtype_name(map.dtype)),
            fmt::format("Dispatch map, {}: the kernel the header runs", what), axis("N (columns of C), log scale"),
            axis("M (rows of C), log scale"));
  plot.size(1040, 700).legend_width(330);
  std::map<int, int> series_of;
  for (size_t i = 0; i < kernels.size(); ++i) {
    Series s;
    s.label = fmt::format("{}: {} cell{}", short_kernel(model, kernels[i].first), kernels[i].second,
                          kernels[i].second == 1 ? "" : "s");
    s.colour = static_cast<int>(i % k_palette_size);
    if (i >= static_cast<size_t>(k_palette_size)) s.fill = extra_colour(static_cast<int>(i));
    s.swatch = true;
    series_of[kernels[i].first] = plot.add_series(s);
  }
  bool any_split = false;
  for (const DispatchCell& c : map.cells) {
    const double m = static_cast<double>(c.m), n = static_cast<double>(c.n);
    const std::string time = c.us > 0 ? fmt::format("{}, {}", time_text(c.us), rate_text(2.0 * m * n * map.k / (c.us * 1e6), unit))
                                      : "no prediction";
    plot.rect(series_of.at(c.kernel), n / half_step, m / half_step, n * half_step, m * half_step,
              fmt::format("{}x{}x{}: {}\n{}{}: {}\n{}", c.m, c.n, map.k, short_kernel(model, c.kernel),
                          c.exact ? "measured winner" : "predicted", c.splits > 1 ? fmt::format(" (K in {} slices)", c.splits) : "",
                          time, c.why));
    if (c.splits > 1) {
      plot.slash(n / half_step, m / half_step, n * half_step, m * half_step);
      any_split = true;
    }
  }
  for (const Problem& p : map.tuned)
    plot.ring(static_cast<double>(p.n), static_cast<double>(p.m), 5, fmt::format("tuned: {}", p.to_string()));
  plot.note(fmt::format("Each cell: the kernel the exported header's dispatch (choose_kernel, as cm-tune query decides) "
                        "runs for a tight row-major {} x N x {} call, batch 1; hover for its predicted time and why. "
                        "{}{}K: {}.",
                        "M", map.k, any_split ? "Slashed cells split K into slices. " : "",
                        map.tuned.empty() ? "" : "Rings: problems tuned at this K. ",
                        data.dispatch_k_requested ? "as requested (--k)" : "the most common K of the tuned problems (--k chooses another)"));
  std::string out = figure(plot);

  // The predicted rate of the same choices.
  std::vector<double> rates;
  for (const DispatchCell& c : map.cells)
    if (c.us > 0) rates.push_back(2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * map.k / (c.us * 1e6));
  Plot rate(fmt::format("dispatch-rate-{}", dtype_name(map.dtype)),
            fmt::format("Predicted rate of the dispatch's choice, {}", what), axis("N (columns of C), log scale"),
            axis("M (rows of C), log scale"));
  rate.size(820, 700);
  if (!rates.empty()) {
    const Axis key =
        Axis::log("", *std::min_element(rates.begin(), rates.end()), *std::max_element(rates.begin(), rates.end()));
    rate.colour_key(unit, key.lo, key.hi, true);
    Series cells;
    cells.label = "rate";
    const int series = rate.add_hidden_series(cells);
    for (const DispatchCell& c : map.cells) {
      if (!(c.us > 0)) continue;
      const double m = static_cast<double>(c.m), n = static_cast<double>(c.n);
      const double r = 2.0 * m * n * map.k / (c.us * 1e6);
      rate.rect(series, n / half_step, m / half_step, n * half_step, m * half_step,
                fmt::format("{}x{}x{}: {} in {}\n{}", c.m, c.n, map.k, rate_text(r, unit), time_text(c.us),
                            short_kernel(model, c.kernel)),
                true, heat_colour((std::log(r) - std::log(key.lo)) / (std::log(key.hi) - std::log(key.lo))));
    }
  }
  rate.note("The rate each cell's predicted time gives (its kernel's cost model; a tuned problem's own model where it "
            "was measured). Blank cells: no model predicts the call (the generic default never measured here).");
  out += figure(rate) + "</div>\n";

  // The kernels with their parameters, for the legend's short names.
  out += "<details><summary>The kernels of this map, with their parameters</summary>\n<table class=\"data\"><thead><tr>"
         "<th>kernel</th><th class=\"num\">cells</th><th>parameters</th><th>requirements</th></tr></thead><tbody>\n";
  for (const auto& [kernel, cells] : kernels) {
    if (kernel < 0) {
      out += fmt::format("<tr><td>none computes it</td><td class=\"num\">{}</td><td></td><td></td></tr>\n", cells);
      continue;
    }
    const ExportKernel& k = model.kernels.at(static_cast<size_t>(kernel));
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n",
                       html_escaped(short_kernel(model, kernel)), cells, html_escaped(k.params),
                       html_escaped(k.requirements.to_string()));
  }
  return out + "</tbody></table></details>\n";
}

// --- the page --------------------------------------------------------------------------------------

std::string page_style() {
  return ":root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--grid:#d1d9e0;--panel:#f6f8fa;"
         "--border:#d1d9e0}\n"
         "@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--grid:#3d444d;"
         "--panel:#151b23;--border:#3d444d}}\n"
         "body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
         "margin:0 auto;max-width:1600px;padding:12px 24px 48px}\n"
         "h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid var(--border)}"
         "h3{font-size:15px;margin:18px 0 4px}\n"
         "p,li{max-width:1100px}.muted{color:var(--muted)}\n"
         "code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--panel);padding:1px 4px;"
         "border-radius:3px}\n"
         "figure{margin:6px 12px 6px 0;display:inline-block;vertical-align:top;background:var(--bg)}\n"
         ".plots{display:flex;flex-wrap:wrap;align-items:flex-start}\n"
         "table.data{border-collapse:collapse;font-size:12px}\n"
         "table.data th{position:sticky;top:0;background:var(--panel);text-align:left}\n"
         "table.data th,table.data td{padding:2px 8px;border-bottom:1px solid var(--border);white-space:nowrap}\n"
         "table.data .num{text-align:right;font-variant-numeric:tabular-nums}\n"
         ".scroll{overflow:auto;max-height:640px;border:1px solid var(--border);margin:6px 0}\n"
         "details{margin:6px 0}summary{cursor:pointer;color:var(--muted)}\n"
         "dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:8px 0}"
         "dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}\n"
         "nav a{color:inherit;margin-right:14px}\n" +
         plot_stylesheet();
}

std::string facts(const ReportData& data) {
  const DeviceInfo& d = data.info;
  std::string types;
  for (const DType t : data.dtypes) types += (types.empty() ? "" : ", ") + std::string(dtype_name(t));
  std::string merged;
  for (size_t i = 1; i < data.table_devices.size(); ++i)
    merged += fmt::format("{}{}", merged.empty() ? "" : ", ", data.table_devices[i].uuid);
  std::string out = "<dl class=\"facts\">\n";
  const auto row = [&](const std::string& name, const std::string& value) {
    out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", html_escaped(name), html_escaped(value));
  };
  row("device", fmt::format("{} ({}, sm_{}{}, {} SMs{})", d.name, d.uuid, d.cc_major, d.cc_minor, d.sm_count,
                            d.clock_khz > 0 ? fmt::format(" at {:.0f} MHz", d.clock_khz / 1000.0) : ""));
  if (!merged.empty()) row("its dispatch table also merges", merged);
  row("database", data.database);
  row("content hash", data.content_hash);
  row("element types shown", types);
  row("tuned problems", fmt::format("{} ({} kernels in the export model, incl. its generic defaults)", data.winners.size(),
                                    data.model.kernels.size()));
  row("made by", fmt::format("cm-tune {} report", data.model.tool_version));
  return out + "</dl>\n";
}

}  // namespace report_html_detail

using namespace report_html_detail;

std::string render_report(const ReportData& data) {
  const FamilyStyles styles(data);
  std::string body;
  body += fmt::format("<h1>cm-tune report: {}</h1>\n", html_escaped(data.device.name));
  body += facts(data);
  body += "<nav><a href=\"#speed\">Speed</a><a href=\"#roofline\">Roofline</a><a href=\"#landscape\">Search "
          "landscape</a><a href=\"#dispatch\">Dispatch map</a><a href=\"#winners\">Winners</a><a href=\"#held-out\">Held-out "
          "check</a></nav>\n";

  body += "<h2 id=\"speed\">Speed against size</h2>\n<p>Each kernel family's best rate at every tuned problem, per element "
          "type or precision class, beside cuBLAS's.</p>\n<div class=\"plots\">\n";
  for (const SpeedPlot& p : data.speed) body += speed_plot(p, styles);
  body += "</div>\n";

  body += "<h2 id=\"roofline\">Roofline</h2>\n<div class=\"plots\">\n" + roofline_plot(data, styles) + "</div>\n";

  const Landscape& l = data.landscape;
  body += fmt::format("<h2 id=\"landscape\">Search landscape of {}</h2>\n<p>{}. Every trial measured on it: each "
                      "passing candidate's rate, the best rate per tile of each family, and how the trials ended.</p>\n",
                      html_escaped(l.problem.to_string()),
                      l.requested ? "The problem --problem names"
                                  : "The largest problem searched in full (--problem chooses another)");
  body += "<div class=\"plots\">\n" + landscape_trials_plot(l, styles) + "</div>\n";
  body += "<h3>Heat maps: the best rate of each tile (BM x BN), per family</h3>\n<p class=\"muted\">One colour scale for "
          "every family; a ring marks the winner's tile; hover a cell for its best kernel.</p>\n<div class=\"plots\">\n" +
          heat_map_plots(l) + "</div>\n";
  body += "<div class=\"plots\">\n" + outcome_plot(l) + "</div>\n";

  body += "<h2 id=\"dispatch\">Dispatch map</h2>\n<p>Which exported kernel the generated header runs at each M x N, "
          "and its predicted time and rate, from the same dispatch rules and cost models <code>cm-tune query</code> "
          "uses.</p>\n";
  for (const DispatchMap& m : data.dispatch) body += "<div class=\"plots\">\n" + dispatch_plots(data, m);

  const output::Table winners = winners_table(data);
  body += fmt::format("<h2 id=\"winners\">Winners</h2>\n<p>Every tuned problem's winner ({} rows): its rate (re-timed, "
                      "interleaved with cuBLAS), cuBLAS's rate and the ratio, how its problem's trials ended, and its "
                      "largest measured error.</p>\n<div class=\"scroll\">\n",
                      data.winners.size());
  body += output::render_html(winners, fmt::format("class=\"data\" data-table=\"winners\" data-rows=\"{}\"", data.winners.size()));
  body += "</div>\n";

  body += "<h2 id=\"held-out\">Held-out check of the dispatch</h2>\n<p>As <code>cm-tune export</code> prints it: each "
          "tuned shape left out of the cost models' fit in turn, the kernel the dispatch then chooses there, its measured "
          "time against the fastest exported kernel's (the regret) and its model's error.</p>\n";
  for (const HeldOutCheck& c : data.checks) {
    body += fmt::format("<p><code>{}</code></p>\n", html_escaped(held_out_summary(data.model, data.checks, c)));
    body += fmt::format("<details><summary>Per shape ({} rows)</summary><div class=\"scroll\">\n", c.problems.size());
    body += output::render_html(held_out_table(data.model, c),
                                fmt::format("class=\"data\" data-table=\"held-out-{}\" data-rows=\"{}\"", dtype_name(c.dtype),
                                            c.problems.size()));
    body += "</div></details>\n";
  }

  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"color-scheme\" content=\"light dark\">\n<title>cm-tune report: {}</title>\n<style>\n{}</style>\n"
      "</head>\n<body>\n{}</body>\n</html>\n",
      html_escaped(data.device.name), page_style(), body);
}

}  // namespace cmt::report
