// A small SVG plot builder for cm-tune report's page (report/report_html.hpp): linear, logarithmic
// or categorical axes with ticks, grid lines and labels; points, lines, rectangles and rings in data
// coordinates; a title, a legend, a colour key and a note. Colours are classes of the page's style
// sheet (plot_stylesheet: a palette for light and one for dark mode), text and axes take
// currentColor, so a plot reads in either mode; a heat map's fill is a colour of its own
// (heat_colour). Every plotted point carries `data-point`, and the drawing `data-plot="NAME"` and
// `data-points="N"`, so a test counts them in the page.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmt::report {

/// One tick of an axis: where it is, in data units, and its label (empty: an unlabelled minor tick).
struct Tick {
  double value = 0;
  std::string label;
};

/// Ticks of a logarithmic axis over [lo, hi] (0 < lo < hi): every power of `base` in it, labelled.
/// Base 10 over fewer than three decades also labels 2 and 5 times each power; over more, it marks
/// 2 to 9 times each power unlabelled. A range holding no power is labelled at its ends.
std::vector<Tick> log_ticks(double lo, double hi, int base = 10);
/// Ticks of a linear axis over [lo, hi]: multiples of one step (1, 2 or 5 times a power of ten),
/// about `count` of them, each labelled.
std::vector<Tick> linear_ticks(double lo, double hi, int count = 6);
/// A number as a tick shows it: "0.05", "2.5", "64", "4096", "10k", "2.5M".
std::string tick_label(double value);

/// Which way an axis maps data onto the page.
enum class Scale { linear, log, category };

/// An axis: its label (with its unit, "rate (TF/s)"), scale and domain. A category axis has a band
/// per category, band i centred on data value i: its domain is [-0.5, n - 0.5].
struct Axis {
  std::string label;
  Scale scale = Scale::linear;
  double lo = 0, hi = 1;
  int base = 10;                         // log: the power whose multiples are ticked (2: sizes)
  std::vector<std::string> categories;   // category: the bands' labels, from the origin out

  static Axis linear(std::string label, double lo, double hi);
  static Axis log(std::string label, double lo, double hi, int base = 10);
  static Axis category(std::string label, std::vector<std::string> categories);
  /// A log axis over whole powers of `base` around the values (> 0; others are ignored): from the
  /// power at or below the least to the one at or above the greatest, at least one power wide.
  static Axis log_fit(std::string label, const std::vector<double>& values, int base = 10);
  /// A linear axis from 0 to a little above the greatest value (at least `least_hi`).
  static Axis linear_from_zero(std::string label, const std::vector<double>& values, double least_hi = 1);
  /// Its ticks: log_ticks, linear_ticks, or one per category.
  std::vector<Tick> ticks() const;
};

/// How a series' points look.
enum class Marker { circle, square, diamond, triangle };

/// A legend entry and how what it names is drawn.
struct Series {
  std::string label;
  /// An index into the page's palette (class "cN", N modulo k_palette_size), or k_foreground for the
  /// text colour (reference data: cuBLAS).
  int colour = 0;
  Marker marker = Marker::circle;
  bool hollow = false;     // points drawn as outlines
  bool line = false;       // the legend shows a line (roofs, reference lines), not a marker
  bool swatch = false;     // the legend shows a filled square (a series of rectangles)
  bool dashed = false;
  std::string fill;        // a colour of its own ("#3b528b", "hsl(...)"), over the palette's
};
/// The palette's size (plot_stylesheet defines classes c0 .. c{k_palette_size - 1}).
constexpr int k_palette_size = 12;
/// Series::colour for the text colour.
constexpr int k_foreground = -1;

/// A colour of a sequential scale from t = 0 (dark blue) to 1 (yellow), viridis's, readable on a
/// light and on a dark page: "#rrggbb". t is clamped to [0, 1].
std::string heat_colour(double t);
/// A colour past the palette, for categorical series beyond k_palette_size: index i's hue by the
/// golden angle, "hsl(H, 62%, 52%)".
std::string extra_colour(int index);

/// One plot, rendered as one <svg> element.
class Plot {
 public:
  /// `name` identifies it in the page (data-plot; letters, digits and '-' are kept, anything else
  /// becomes '-'); `title` heads it.
  Plot(std::string name, std::string title, Axis x, Axis y);

  /// The drawing's size in pixels (default 720 x 420), the legend's column included.
  Plot& size(int width, int height);
  /// The legend's column, in pixels (default 230), for long entries.
  Plot& legend_width(int width);
  /// A note under the plot (where its data come from, what is left out); wrapped to the width.
  Plot& note(std::string text);
  /// A continuous colour key beside the plot: heat_colour from lo (t = 0) to hi (t = 1).
  Plot& colour_key(std::string label, double lo, double hi, bool log);
  /// Adds a legend entry; returns its index for point(), line() and rect().
  int add_series(Series series);
  /// Adds `series` without a legend entry (the series of rectangles a colour key explains).
  int add_hidden_series(Series series);

  /// A plotted point (counted: data-point) at data (x, y), with a tooltip (<title>).
  void point(int series, double x, double y, std::string_view tooltip);
  /// A line through data points (not counted), clipped to the plot area; `label` is written at its
  /// last point inside the area.
  void line(int series, const std::vector<std::pair<double, double>>& points, std::string_view label = {});
  /// A rectangle from data (x0, y0) to (x1, y1) filled in the series' colour, or in `fill` when given;
  /// `counted`: a plotted point (a heat map's cell, a bar).
  void rect(int series, double x0, double y0, double x1, double y1, std::string_view tooltip, bool counted = true,
            std::string_view fill = {});
  /// A ring around data (x, y), r pixels wide, in the text colour (not counted): a winner, a tuned shape.
  void ring(double x, double y, double r, std::string_view tooltip);
  /// A diagonal stroke across the rectangle (not counted): marks a cell as a variant (split K).
  void slash(double x0, double y0, double x1, double y1);

  /// How many plotted points it holds.
  size_t points() const { return m_points; }
  const std::string& name() const { return m_name; }
  /// The <svg> element.
  std::string render() const;

 private:
  /// What was drawn, in data coordinates: placed when the plot renders, once its layout is known.
  struct Item {
    enum class Kind { point, line, rect, ring, slash } kind = Kind::point;
    int series = 0;
    std::vector<std::pair<double, double>> at;   // a point; a line's points; a rectangle's two corners
    std::string tooltip;
    std::string label;    // a line's
    std::string fill;     // a rectangle's own colour
    double radius = 0;    // a ring's, in pixels
    bool counted = false;
  };
  struct Layout;
  Layout layout() const;

  std::string m_name, m_title, m_note;
  Axis m_x, m_y;
  int m_width = 720, m_height = 420;
  int m_legend_width = 230;
  std::vector<Series> m_series;
  std::vector<bool> m_in_legend;
  std::vector<Item> m_items;
  size_t m_points = 0;
  struct Key {
    std::string label;
    double lo = 0, hi = 1;
    bool log = false;
  };
  std::optional<Key> m_key;
};

/// The style sheet the plots' classes need: the palette (light, and dark under
/// prefers-color-scheme: dark), axes, grid lines, text, points, lines, legend and rings.
std::string plot_stylesheet();

}  // namespace cmt::report
