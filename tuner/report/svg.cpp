#include "report/svg.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "output/printers.hpp"

namespace cmt::report {

// Named, not anonymous: a unity build compiles this file with the other report files' helpers.
namespace svg_detail {

/// Pixels of one character of 11-12 px text, roughly: for legend widths and truncation.
constexpr double k_char_px = 6.6;
constexpr int k_key_width = 120;
constexpr double k_legend_row = 18;
constexpr double k_key_height = 150;

std::string num(double v) { return fmt::format("{:.1f}", v); }

/// The tooltip child of a drawn element: nothing when empty.
std::string title_of(std::string_view tooltip) {
  return tooltip.empty() ? "" : fmt::format("<title>{}</title>", output::html_escaped(tooltip));
}

/// The text cut to `chars` characters (UTF-8 continuation bytes kept whole), with an ellipsis.
std::string truncated(const std::string& text, size_t chars) {
  size_t shown = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (shown == chars) return text.substr(0, i) + "\xE2\x80\xA6";
    ++shown;
  }
  return text;
}

/// The note's words in lines of at most `chars` characters.
std::vector<std::string> wrapped(const std::string& text, size_t chars) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > chars) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

double log_base(double v, int base) { return std::log(v) / std::log(static_cast<double>(base)); }

/// A name fit for an id and an attribute: letters, digits and '-'.
std::string clean_name(const std::string& name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '-';
  return out.empty() ? "plot" : out;
}

}  // namespace svg_detail

using namespace svg_detail;

std::string tick_label(double value) {
  if (value == 0) return "0";
  const double a = std::fabs(value);
  if (a >= 1e5) {
    if (a >= 1e6) return fmt::format("{:.3g}M", value / 1e6);
    return fmt::format("{:.3g}k", value / 1e3);
  }
  if (a >= 1 && std::fabs(value - std::round(value)) < 1e-9 * a) return fmt::format("{}", static_cast<int64_t>(std::round(value)));
  return fmt::format("{:.3g}", value);
}

std::vector<Tick> log_ticks(double lo, double hi, int base) {
  if (!(lo > 0) || !(hi > lo) || base < 2) throw std::invalid_argument("log_ticks: need 0 < lo < hi and base >= 2");
  const double slack = 1e-9;
  const auto inside = [&](double v) { return v >= lo * (1 - slack) && v <= hi * (1 + slack); };
  const int first = static_cast<int>(std::floor(log_base(lo, base) + slack));
  const int last = static_cast<int>(std::ceil(log_base(hi, base) - slack));
  const bool fine = base == 10 && std::log10(hi / lo) < 3;   // few decades: 2 and 5 labelled too
  std::vector<Tick> ticks;
  for (int p = first; p <= last; ++p) {
    const double v = std::pow(static_cast<double>(base), p);
    if (inside(v)) ticks.push_back({v, tick_label(v)});
    if (base != 10) continue;
    for (int m = 2; m <= 9; ++m) {
      const double w = v * m;
      if (!inside(w)) continue;
      if (fine && (m == 2 || m == 5))
        ticks.push_back({w, tick_label(w)});
      else if (!fine)
        ticks.push_back({w, ""});
    }
  }
  std::sort(ticks.begin(), ticks.end(), [](const Tick& a, const Tick& b) { return a.value < b.value; });
  if (std::none_of(ticks.begin(), ticks.end(), [](const Tick& t) { return !t.label.empty(); })) {
    ticks.insert(ticks.begin(), {lo, tick_label(lo)});
    ticks.push_back({hi, tick_label(hi)});
  }
  return ticks;
}

std::vector<Tick> linear_ticks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1) throw std::invalid_argument("linear_ticks: need lo < hi and count >= 1");
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<Tick> ticks;
  for (double i = std::ceil(lo / step - 1e-9); i * step <= hi + 1e-9 * step; ++i) {
    double v = i * step;
    if (std::fabs(v) < 1e-12 * step) v = 0;
    ticks.push_back({v, tick_label(v)});
  }
  return ticks;
}

Axis Axis::linear(std::string label, double lo, double hi) {
  Axis a;
  a.label = std::move(label);
  a.lo = lo;
  a.hi = hi > lo ? hi : lo + 1;
  return a;
}

Axis Axis::log(std::string label, double lo, double hi, int base) {
  Axis a;
  a.label = std::move(label);
  a.scale = Scale::log;
  a.lo = lo > 0 ? lo : 1;
  a.hi = hi > a.lo ? hi : a.lo * base;
  a.base = base;
  return a;
}

Axis Axis::category(std::string label, std::vector<std::string> categories) {
  Axis a;
  a.label = std::move(label);
  a.scale = Scale::category;
  a.lo = -0.5;
  a.hi = std::max<double>(1, static_cast<double>(categories.size())) - 0.5;
  a.categories = std::move(categories);
  return a;
}

Axis Axis::log_fit(std::string label, const std::vector<double>& values, int base) {
  double least = 0, most = 0;
  for (const double v : values) {
    if (!(v > 0) || !std::isfinite(v)) continue;
    least = least > 0 ? std::min(least, v) : v;
    most = std::max(most, v);
  }
  if (least <= 0) return log(std::move(label), 1, base, base);
  const double b = base;
  double lo = std::pow(b, std::floor(log_base(least, base) + 1e-9));
  double hi = std::pow(b, std::ceil(log_base(most, base) - 1e-9));
  if (hi <= lo) hi = lo * b;
  // A margin of 3% of the range on each side, so no point sits on the frame.
  const double margin = std::pow(hi / lo, 0.03);
  return log(std::move(label), lo / margin, hi * margin, base);
}

Axis Axis::linear_from_zero(std::string label, const std::vector<double>& values, double least_hi) {
  double most = least_hi;
  for (const double v : values)
    if (std::isfinite(v)) most = std::max(most, v * 1.06);
  const std::vector<Tick> ticks = linear_ticks(0, most, 5);
  const double step = ticks.size() > 1 ? ticks[1].value - ticks[0].value : most;
  return linear(std::move(label), 0, std::ceil(most / step - 1e-9) * step);
}

std::vector<Tick> Axis::ticks() const {
  switch (scale) {
    case Scale::log: return log_ticks(lo, hi, base);
    case Scale::linear: return linear_ticks(lo, hi, 6);
    case Scale::category: {
      std::vector<Tick> out;
      for (size_t i = 0; i < categories.size(); ++i) out.push_back({static_cast<double>(i), categories[i]});
      return out;
    }
  }
  return {};
}

std::string heat_colour(double t) {
  // viridis at t = 0, 0.1, ..., 1
  static const int k_stops[11][3] = {{68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},
                                     {42, 120, 142}, {33, 145, 140}, {34, 168, 132}, {68, 191, 112},
                                     {122, 209, 81}, {189, 223, 38}, {253, 231, 37}};
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * 10;
  const int i = std::min(9, static_cast<int>(t));
  const double f = t - i;
  int rgb[3];
  for (int c = 0; c < 3; ++c)
    rgb[c] = static_cast<int>(std::lround(k_stops[i][c] + f * (k_stops[i + 1][c] - k_stops[i][c])));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

std::string extra_colour(int index) {
  return fmt::format("hsl({:.0f}, 62%, 52%)", std::fmod(index * 137.508, 360.0));
}

Plot::Plot(std::string name, std::string title, Axis x, Axis y)
    : m_name(clean_name(name)), m_title(std::move(title)), m_x(std::move(x)), m_y(std::move(y)) {}

Plot& Plot::size(int width, int height) {
  m_width = std::max(width, 200);
  m_height = std::max(height, 160);
  return *this;
}

Plot& Plot::legend_width(int width) {
  m_legend_width = std::max(width, 120);
  return *this;
}

Plot& Plot::note(std::string text) {
  m_note = std::move(text);
  return *this;
}

Plot& Plot::colour_key(std::string label, double lo, double hi, bool log) {
  m_key = Key{std::move(label), lo, hi > lo ? hi : lo + 1, log && lo > 0};
  return *this;
}

int Plot::add_series(Series series) {
  m_series.push_back(std::move(series));
  m_in_legend.push_back(true);
  return static_cast<int>(m_series.size()) - 1;
}

int Plot::add_hidden_series(Series series) {
  const int index = add_series(std::move(series));
  m_in_legend.back() = false;
  return index;
}

void Plot::point(int series, double x, double y, std::string_view tooltip) {
  Item item;
  item.kind = Item::Kind::point;
  item.series = series;
  item.at = {{x, y}};
  item.tooltip = tooltip;
  item.counted = true;
  m_items.push_back(std::move(item));
  ++m_points;
}

void Plot::line(int series, const std::vector<std::pair<double, double>>& points, std::string_view label) {
  Item item;
  item.kind = Item::Kind::line;
  item.series = series;
  item.at = points;
  item.label = label;
  m_items.push_back(std::move(item));
}

void Plot::rect(int series, double x0, double y0, double x1, double y1, std::string_view tooltip, bool counted,
                std::string_view fill) {
  Item item;
  item.kind = Item::Kind::rect;
  item.series = series;
  item.at = {{x0, y0}, {x1, y1}};
  item.tooltip = tooltip;
  item.fill = fill;
  item.counted = counted;
  m_items.push_back(std::move(item));
  if (counted) ++m_points;
}

void Plot::ring(double x, double y, double r, std::string_view tooltip) {
  Item item;
  item.kind = Item::Kind::ring;
  item.at = {{x, y}};
  item.radius = r;
  item.tooltip = tooltip;
  m_items.push_back(std::move(item));
}

void Plot::slash(double x0, double y0, double x1, double y1) {
  Item item;
  item.kind = Item::Kind::slash;
  item.at = {{x0, y0}, {x1, y1}};
  m_items.push_back(std::move(item));
}

/// Where everything goes, in pixels.
struct Plot::Layout {
  int width = 0, height = 0;
  double left = 0, top = 0, w = 0, h = 0;   // the plot area
  double legend_x = 0;                       // the legend's column (0: none)
  double legend_w = 0;
  std::vector<std::string> note;
  const Axis* ax = nullptr;
  const Axis* ay = nullptr;

  static double fraction(const Axis& a, double v) {
    if (a.scale == Scale::log) {
      if (!(v > 0)) return -1;
      return (std::log(v) - std::log(a.lo)) / (std::log(a.hi) - std::log(a.lo));
    }
    return (v - a.lo) / (a.hi - a.lo);
  }
  double x(double v) const { return left + fraction(*ax, v) * w; }
  double y(double v) const { return top + h - fraction(*ay, v) * h; }
};

Plot::Layout Plot::layout() const {
  Layout l;
  l.ax = &m_x;
  l.ay = &m_y;
  l.width = m_width;
  size_t legend_rows = 0;
  for (const bool shown : m_in_legend) legend_rows += shown ? 1 : 0;
  const bool legend = legend_rows > 0 || m_key;
  // A colour key alone needs a narrow column.
  l.legend_w = legend_rows > 0 ? m_legend_width : m_key ? k_key_width : 0;
  l.legend_x = legend ? m_width - l.legend_w : 0;
  l.top = 40;
  // Room for the y axis's tick labels (a category axis's may be long) and its label.
  double y_labels = 5;
  for (const Tick& t : m_y.ticks()) y_labels = std::max<double>(y_labels, static_cast<double>(t.label.size()));
  l.left = 30 + std::min(26.0, y_labels) * k_char_px;
  const double right = legend ? l.legend_w + 12 : 20;
  const double bottom = 52;
  l.note = m_note.empty() ? std::vector<std::string>{}
                          : wrapped(m_note, static_cast<size_t>(std::max(40.0, (m_width - 24) / k_char_px)));
  const double note_h = l.note.empty() ? 0 : 10 + 15.0 * static_cast<double>(l.note.size());
  const double legend_h = k_legend_row * static_cast<double>(legend_rows) + (m_key ? k_key_height + 40 : 0) + 10;
  l.height = static_cast<int>(std::ceil(std::max<double>(m_height, l.top + legend_h + bottom + note_h)));
  l.w = m_width - l.left - right;
  l.h = l.height - l.top - bottom - note_h;
  return l;
}

namespace svg_detail {

/// The class of a series' shapes: its palette entry, or the text colour.
std::string colour_class(const Series& s) { return s.colour == k_foreground ? "fg" : fmt::format("c{}", ((s.colour % k_palette_size) + k_palette_size) % k_palette_size); }

/// The inline fill of a shape with a colour of its own.
std::string own_fill(const std::string& fill, bool stroke_too) {
  if (fill.empty()) return "";
  return stroke_too ? fmt::format(" style=\"fill:{0};stroke:{0}\"", output::html_escaped(fill))
                    : fmt::format(" style=\"fill:{}\"", output::html_escaped(fill));
}

std::string marker_svg(const Series& s, double x, double y, const std::string& attributes) {
  const std::string cls = fmt::format("pt {}{}", colour_class(s), s.hollow ? " hollow" : "");
  switch (s.marker) {
    case Marker::square:
      return fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"6.4\" height=\"6.4\"{}", cls, num(x - 3.2),
                         num(y - 3.2), attributes);
    case Marker::diamond:
      return fmt::format("<path class=\"{}\" d=\"M{} {}L{} {}L{} {}L{} {}Z\"{}", cls, num(x), num(y - 4.6), num(x + 4.6),
                         num(y), num(x), num(y + 4.6), num(x - 4.6), num(y), attributes);
    case Marker::triangle:
      return fmt::format("<path class=\"{}\" d=\"M{} {}L{} {}L{} {}Z\"{}", cls, num(x), num(y - 4.6), num(x + 4.3),
                         num(y + 3.6), num(x - 4.3), num(y + 3.6), attributes);
    case Marker::circle: break;
  }
  return fmt::format("<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3.6\"{}", cls, num(x), num(y), attributes);
}

}  // namespace svg_detail

std::string Plot::render() const {
  const Layout l = layout();
  const std::string id = m_name;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" data-plot=\"{}\" data-points=\"{}\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n",
      id, m_points, l.width, l.height, l.width, l.height, output::html_escaped(m_title));
  out += fmt::format("<title>{}</title>\n", output::html_escaped(m_title));
  out += fmt::format("<defs><clipPath id=\"clip-{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>", id,
                     num(l.left), num(l.top), num(l.w), num(l.h));
  if (m_key) {
    out += fmt::format("<linearGradient id=\"key-{}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", id);
    for (int i = 0; i <= 10; ++i) out += fmt::format("<stop offset=\"{}\" stop-color=\"{}\"/>", i / 10.0, heat_colour(i / 10.0));
    out += "</linearGradient>";
  }
  out += "</defs>\n";
  out += fmt::format("<text class=\"title\" x=\"12\" y=\"22\">{}</text>\n", output::html_escaped(m_title));

  // Grid lines and ticks.
  const auto in_x = [&](double v) { const double f = Layout::fraction(m_x, v); return f >= -1e-9 && f <= 1 + 1e-9; };
  const auto in_y = [&](double v) { const double f = Layout::fraction(m_y, v); return f >= -1e-9 && f <= 1 + 1e-9; };
  std::string grid = "<g class=\"grid\">", ticks = "<g class=\"ticks\">";
  const std::vector<Tick> xt = m_x.ticks(), yt = m_y.ticks();
  // Thin out labels that would overlap.
  const auto keep_every = [](const std::vector<Tick>& t, double span, double per_label) {
    size_t labelled = 0;
    for (const Tick& tick : t) labelled += tick.label.empty() ? 0 : 1;
    const double fit = std::max(1.0, span / per_label);
    return labelled > fit ? static_cast<size_t>(std::ceil(static_cast<double>(labelled) / fit)) : size_t{1};
  };
  size_t longest_x = 1;
  for (const Tick& t : xt) longest_x = std::max(longest_x, t.label.size());
  const size_t x_every = keep_every(xt, l.w, std::max(40.0, (static_cast<double>(longest_x) + 1.5) * k_char_px));
  const size_t y_every = keep_every(yt, l.h, 18);
  size_t xi = 0, yi = 0;
  for (const Tick& t : xt) {
    if (!in_x(t.value)) continue;
    const double x = l.x(t.value);
    if (m_x.scale != Scale::category)
      grid += fmt::format("<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", t.label.empty() ? "minor" : "major",
                          num(x), num(l.top), num(x), num(l.top + l.h));
    ticks += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", num(x), num(l.top + l.h),
                         num(l.top + l.h + (t.label.empty() ? 3 : 5)));
    if (!t.label.empty() && xi++ % x_every == 0)
      ticks += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", num(x), num(l.top + l.h + 18),
                           output::html_escaped(t.label));
  }
  for (const Tick& t : yt) {
    if (!in_y(t.value)) continue;
    const double y = l.y(t.value);
    if (m_y.scale != Scale::category)
      grid += fmt::format("<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", t.label.empty() ? "minor" : "major",
                          num(l.left), num(y), num(l.left + l.w), num(y));
    ticks += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>", num(l.left - (t.label.empty() ? 3 : 5)), num(y),
                         num(l.left));
    if (!t.label.empty() && yi++ % y_every == 0)
      ticks += fmt::format("<text x=\"{}\" y=\"{}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>", num(l.left - 8), num(y),
                           output::html_escaped(truncated(t.label, 26)));
  }
  out += grid + "</g>\n";

  // Lines and rectangles, clipped to the plot area; then points and rings over them, unclipped (the
  // axes leave them room).
  out += fmt::format("<g clip-path=\"url(#clip-{})\">\n", id);
  std::string marks;
  for (const Item& item : m_items) {
    const Series* s = item.series >= 0 && static_cast<size_t>(item.series) < m_series.size()
                          ? &m_series[static_cast<size_t>(item.series)]
                          : nullptr;
    const std::string counted = item.counted ? " data-point=\"\"" : "";
    switch (item.kind) {
      case Item::Kind::point: {
        if (!s) break;
        const std::string attributes = fmt::format("{}{}>{}</{}>\n", counted, own_fill(s->fill, true), title_of(item.tooltip),
                                                   s->marker == Marker::circle   ? "circle"
                                                   : s->marker == Marker::square ? "rect"
                                                                                 : "path");
        marks += marker_svg(*s, l.x(item.at[0].first), l.y(item.at[0].second), attributes);
        break;
      }
      case Item::Kind::line: {
        if (!s || item.at.empty()) break;
        std::string points;
        for (const auto& [x, y] : item.at) points += fmt::format("{}{},{}", points.empty() ? "" : " ", num(l.x(x)), num(l.y(y)));
        out += fmt::format("<polyline class=\"ln {}{}\" points=\"{}\"{}/>\n", colour_class(*s), s->dashed ? " dashed" : "",
                           points, own_fill(s->fill, true));
        break;
      }
      case Item::Kind::rect: {
        if (!s) break;
        const double x0 = l.x(item.at[0].first), x1 = l.x(item.at[1].first);
        const double y0 = l.y(item.at[0].second), y1 = l.y(item.at[1].second);
        out += fmt::format("<rect class=\"cell {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}{}>{}</rect>\n",
                           colour_class(*s), num(std::min(x0, x1)), num(std::min(y0, y1)), num(std::fabs(x1 - x0)),
                           num(std::fabs(y1 - y0)), counted, own_fill(item.fill.empty() ? s->fill : item.fill, false),
                           title_of(item.tooltip));
        break;
      }
      case Item::Kind::ring:
        marks += fmt::format("<circle class=\"ring\" cx=\"{}\" cy=\"{}\" r=\"{}\">{}</circle>\n", num(l.x(item.at[0].first)),
                           num(l.y(item.at[0].second)), num(item.radius), title_of(item.tooltip));
        break;
      case Item::Kind::slash:
        out += fmt::format("<line class=\"slash\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(l.x(item.at[0].first)),
                           num(l.y(item.at[0].second)), num(l.x(item.at[1].first)), num(l.y(item.at[1].second)));
        break;
    }
  }
  out += "</g>\n" + marks;
  // Line labels, over the clip: at each line's last point inside the area.
  for (const Item& item : m_items) {
    if (item.kind != Item::Kind::line || item.label.empty()) continue;
    std::optional<std::pair<double, double>> last;
    for (const auto& [x, y] : item.at)
      if (in_x(x) && in_y(y)) last = std::make_pair(l.x(x), l.y(y));
    if (!last) continue;
    out += fmt::format("<text class=\"linelabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", num(last->first - 4),
                       num(last->second - 6), output::html_escaped(item.label));
  }
  out += ticks + "</g>\n";
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", num(l.left), num(l.top),
                     num(l.w), num(l.h));
  out += fmt::format("<text class=\"axislabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(l.left + l.w / 2),
                     num(l.top + l.h + 38), output::html_escaped(m_x.label));
  out += fmt::format("<text class=\"axislabel\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     num(l.top + l.h / 2), output::html_escaped(m_y.label));

  // The legend, then the colour key, in the column on the right.
  if (l.legend_x > 0) {
    out += "<g class=\"legend\">\n";
    double y = l.top + 6;
    const size_t chars = static_cast<size_t>((l.legend_w - 34) / k_char_px);
    for (size_t i = 0; i < m_series.size(); ++i) {
      if (!m_in_legend[i]) continue;
      const Series& s = m_series[i];
      const double x = l.legend_x + 10;
      if (s.line)
        out += fmt::format("<line class=\"ln {}{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}/>", colour_class(s),
                           s.dashed ? " dashed" : "", num(x - 4), num(y), num(x + 14), num(y), own_fill(s.fill, true));
      else if (s.swatch)
        out += fmt::format("<rect class=\"cell {}\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\"{}/>", colour_class(s),
                           num(x - 1), num(y - 6), own_fill(s.fill, false));
      else
        out += marker_svg(s, x + 5, y, "/>");
      const std::string text = truncated(s.label, chars);
      out += fmt::format("<text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}{}</text>\n", num(x + 22), num(y),
                         output::html_escaped(text), text == s.label ? "" : title_of(s.label));
      y += k_legend_row;
    }
    if (m_key) {
      y += 10;
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", num(l.legend_x + 10), num(y),
                         output::html_escaped(truncated(m_key->label, chars + 2)));
      const double top = y + 10, x = l.legend_x + 12;
      out += fmt::format("<rect class=\"key\" x=\"{}\" y=\"{}\" width=\"14\" height=\"{}\" fill=\"url(#key-{})\"/>", num(x),
                         num(top), num(k_key_height), id);
      const std::vector<Tick> kt = m_key->log ? log_ticks(m_key->lo, m_key->hi) : linear_ticks(m_key->lo, m_key->hi, 5);
      for (const Tick& t : kt) {
        if (t.label.empty() || t.value < m_key->lo - 1e-12 || t.value > m_key->hi + 1e-12) continue;
        const double f = m_key->log ? (std::log(t.value) - std::log(m_key->lo)) / (std::log(m_key->hi) - std::log(m_key->lo))
                                    : (t.value - m_key->lo) / (m_key->hi - m_key->lo);
        const double ty = top + k_key_height * (1 - f);
        out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" dy=\"0.32em\">{}</text>",
                           num(x + 14), num(ty), num(x + 18), num(ty), num(x + 22), num(ty), output::html_escaped(t.label));
      }
      out += "\n";
    }
    out += "</g>\n";
  }
  if (!l.note.empty()) {
    double y = l.top + l.h + 62;
    out += "<text class=\"note\">";
    for (const std::string& line : l.note) {
      out += fmt::format("<tspan x=\"12\" y=\"{}\">{}</tspan>", num(y), output::html_escaped(line));
      y += 15;
    }
    out += "</text>\n";
  }
  return out + "</svg>\n";
}

std::string plot_stylesheet() {
  // Tableau's ten and two more, for a white page; lighter ones for a dark page.
  static const char* k_light[k_palette_size] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                                "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
  static const char* k_dark[k_palette_size] = {"#5aa9e6", "#ffa24a", "#5fd35f", "#ff6b6b", "#b894e8", "#c49a8a",
                                               "#f2a0d8", "#b4b4b4", "#dede4a", "#4fd8e8", "#8f93e8", "#a8c466"};
  std::string light, dark, classes;
  for (int i = 0; i < k_palette_size; ++i) {
    light += fmt::format("--c{}:{};", i, k_light[i]);
    dark += fmt::format("--c{}:{};", i, k_dark[i]);
    classes += fmt::format(".c{0}{{fill:var(--c{0});stroke:var(--c{0})}}\n", i);
  }
  return fmt::format(":root{{{}}}\n@media (prefers-color-scheme: dark){{:root{{{}}}}}\n", light, dark) + classes +
         ".fg{fill:currentColor;stroke:currentColor}\n"
         "svg.plot{color:var(--fg);max-width:100%;height:auto;font:12px system-ui,-apple-system,'Segoe UI',sans-serif}\n"
         "svg.plot text{fill:currentColor;stroke:none}\n"
         "svg.plot .title{font-size:14px;font-weight:600}\n"
         "svg.plot .axislabel{font-size:12px}\n"
         "svg.plot .note,svg.plot .linelabel{font-size:11px;fill:var(--muted)}\n"
         "svg.plot .grid line{stroke:var(--grid);stroke-width:1}\n"
         "svg.plot .grid line.minor{stroke-opacity:.45}\n"
         "svg.plot .ticks line,svg.plot .legend line:not(.ln){stroke:currentColor}\n"
         "svg.plot .frame{fill:none;stroke:currentColor;stroke-opacity:.6}\n"
         "svg.plot .pt{stroke-width:0;fill-opacity:.85}\n"
         "svg.plot .pt.hollow{fill:none;fill-opacity:0;stroke-width:1.5}\n"
         "svg.plot .ln{fill:none;stroke-width:2}\n"
         "svg.plot .ln.dashed{stroke-dasharray:6 4}\n"
         "svg.plot .cell{stroke:var(--bg);stroke-width:.6}\n"
         "svg.plot .ring{fill:none;stroke:currentColor;stroke-width:2}\n"
         "svg.plot .slash{stroke:var(--bg);stroke-width:1.2;stroke-opacity:.8}\n"
         "svg.plot .key{stroke:var(--grid)}\n";
}

}  // namespace cmt::report
