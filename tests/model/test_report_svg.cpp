// The report's SVG plot builder (tuner/report/svg.hpp): ticks of log and linear axes and their
// labels, escaping of every text, counted points, legends and colour keys.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "report/svg.hpp"

namespace cmt::report {
namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks)
    if (!t.label.empty()) out.push_back(t.label);
  return out;
}

Series named(const std::string& label) {
  Series s;
  s.label = label;
  return s;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ReportSvgTicks, LogTicksLabelPowersAndFillShortRanges) {
  // Three decades or more: the powers of ten labelled, 2..9 times each marked unlabelled.
  const std::vector<Tick> wide = log_ticks(1, 1000);
  EXPECT_EQ(labels(wide), (std::vector<std::string>{"1", "10", "100", "1000"}));
  EXPECT_EQ(wide.size(), 4u + 3 * 8);
  // Fewer: 2 and 5 times each power labelled too.
  EXPECT_EQ(labels(log_ticks(0.05, 3)), (std::vector<std::string>{"0.05", "0.1", "0.2", "0.5", "1", "2"}));
  // Base 2 (sizes): every power of two, whole numbers.
  EXPECT_EQ(labels(log_ticks(64, 16384, 2)),
            (std::vector<std::string>{"64", "128", "256", "512", "1024", "2048", "4096", "8192", "16384"}));
  // A range between two powers is labelled at its ends.
  EXPECT_EQ(labels(log_ticks(300, 700, 2)), (std::vector<std::string>{"512"}));
  EXPECT_EQ(labels(log_ticks(30, 40)), (std::vector<std::string>{"30", "40"}));
  EXPECT_THROW(log_ticks(0, 10), std::invalid_argument);
  EXPECT_THROW(log_ticks(10, 1), std::invalid_argument);
}

TEST(ReportSvgTicks, LinearTicksStepByOneTwoOrFive) {
  EXPECT_EQ(labels(linear_ticks(0, 50, 5)), (std::vector<std::string>{"0", "10", "20", "30", "40", "50"}));
  EXPECT_EQ(labels(linear_ticks(0, 1, 4)), (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
  EXPECT_EQ(labels(linear_ticks(-0.5, 3.5, 4)), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(labels(linear_ticks(0, 1200, 6)), (std::vector<std::string>{"0", "200", "400", "600", "800", "1000", "1200"}));
}

TEST(ReportSvgTicks, LabelsAreShort) {
  EXPECT_EQ(tick_label(0), "0");
  EXPECT_EQ(tick_label(0.05), "0.05");
  EXPECT_EQ(tick_label(2.5), "2.5");
  EXPECT_EQ(tick_label(4096), "4096");
  EXPECT_EQ(tick_label(16384), "16384");
  EXPECT_EQ(tick_label(250000), "250k");
  EXPECT_EQ(tick_label(2.5e6), "2.5M");
  EXPECT_EQ(tick_label(-20), "-20");
}

TEST(ReportSvgAxis, FitsWholePowersWithAMargin) {
  const Axis a = Axis::log_fit("size", {70, 3000, -1, 0}, 2);   // non-positive values are ignored
  EXPECT_EQ(a.scale, Scale::log);
  EXPECT_LT(a.lo, 64);   // 64 and 4096, and 3% of the range beyond each
  EXPECT_GT(a.lo, 55);
  EXPECT_GT(a.hi, 4096);
  EXPECT_LT(a.hi, 4700);
  EXPECT_EQ(labels(a.ticks()).front(), "64");
  EXPECT_EQ(labels(a.ticks()).back(), "4096");
  const Axis z = Axis::linear_from_zero("rate", {0.2, 47});
  EXPECT_EQ(z.lo, 0);
  EXPECT_EQ(z.hi, 50);
  const Axis c = Axis::category("BM", {"32", "64", "128"});
  EXPECT_EQ(c.lo, -0.5);
  EXPECT_EQ(c.hi, 2.5);
  EXPECT_EQ(labels(c.ticks()), (std::vector<std::string>{"32", "64", "128"}));
}

TEST(ReportSvgColours, HeatScaleRunsFromDarkBlueToYellow) {
  EXPECT_EQ(heat_colour(0), "#440154");
  EXPECT_EQ(heat_colour(1), "#fde725");
  EXPECT_EQ(heat_colour(-3), heat_colour(0));
  EXPECT_EQ(heat_colour(7), heat_colour(1));
  EXPECT_EQ(heat_colour(0.5), "#21918c");
  EXPECT_NE(extra_colour(12), extra_colour(13));
}

TEST(ReportSvgPlot, CountsPointsAndCellsButNotLinesOrMarks) {
  Plot plot("speed-f32", "Speed", Axis::log("size", 32, 8192, 2), Axis::log("rate (TF/s)", 0.01, 100));
  const int family = plot.add_series(named("warptile"));
  Series reference;
  reference.label = "cuBLAS";
  reference.colour = k_foreground;
  reference.marker = Marker::square;
  reference.hollow = true;
  const int cublas = plot.add_series(reference);
  Series roof;
  roof.label = "roof";
  roof.colour = k_foreground;
  roof.line = true;
  roof.dashed = true;
  const int line = plot.add_series(roof);
  plot.point(family, 64, 0.5, "a");
  plot.point(family, 4096, 50, "b");
  plot.point(cublas, 4096, 52, "c");
  plot.rect(family, 100, 1, 200, 2, "cell");
  plot.rect(family, 100, 1, 200, 2, "not counted", false);
  plot.line(line, {{32, 60}, {8192, 60}}, "FP32");
  plot.ring(4096, 50, 6, "winner");
  plot.slash(100, 1, 200, 2);
  EXPECT_EQ(plot.points(), 4u);
  const std::string svg = plot.render();
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("data-plot=\"speed-f32\" data-points=\"4\""), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "data-point=\"\""), 4u);
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  EXPECT_NE(svg.find("class=\"ln fg dashed\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"pt fg hollow\""), std::string::npos);   // cuBLAS: hollow squares
  EXPECT_NE(svg.find("class=\"pt c0\""), std::string::npos);
  EXPECT_NE(svg.find("<title>winner</title>"), std::string::npos);
  EXPECT_NE(svg.find(">FP32</text>"), std::string::npos);   // the line's label
  // Both axes labelled, a legend entry per series, the title twice (shown, and the drawing's own).
  EXPECT_NE(svg.find(">size</text>"), std::string::npos);
  EXPECT_NE(svg.find(">rate (TF/s)</text>"), std::string::npos);
  for (const char* entry : {">warptile</text>", ">cuBLAS</text>", ">roof</text>"})
    EXPECT_NE(svg.find(entry), std::string::npos) << entry;
  EXPECT_EQ(count(svg, ">Speed</t"), 2u);
  EXPECT_TRUE(svg.size() > 10 && svg.substr(svg.size() - 7) == "</svg>\n");
}

TEST(ReportSvgPlot, EscapesEveryText) {
  Plot plot("a b<c>", "T <&> \"q\"", Axis::linear("x <unit>", 0, 1), Axis::category("y", {"<script>", "a&b"}));
  const int s = plot.add_series(named("fam<ily>"));
  plot.point(s, 0.5, 0, "tip </title><script>alert(1)</script>");
  plot.note("note & <b>");
  plot.colour_key("key \"k\"", 1, 10, true);
  const std::string svg = plot.render();
  EXPECT_NE(svg.find("data-plot=\"a-b-c-\""), std::string::npos) << "the name is cleaned for the attribute";
  EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<unit>"), std::string::npos);
  EXPECT_EQ(svg.find("fam<ily>"), std::string::npos);
  EXPECT_NE(svg.find("T &lt;&amp;&gt; &quot;q&quot;"), std::string::npos);
  EXPECT_NE(svg.find("tip &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);
  EXPECT_NE(svg.find("note &amp; &lt;b&gt;"), std::string::npos);
  EXPECT_NE(svg.find("key &quot;k&quot;"), std::string::npos);
  // Every '<' opens an element or closes one: none comes from the data.
  EXPECT_FALSE(std::regex_search(svg, std::regex("<[^a-zA-Z/!]")));
}

TEST(ReportSvgPlot, ALongLegendGrowsTheDrawingAndAColourKeyHasItsGradient) {
  Plot plot("many", "Many", Axis::linear("x", 0, 1), Axis::linear("y", 0, 1));
  plot.size(400, 200);
  for (int i = 0; i < 40; ++i) plot.add_series(named("series " + std::to_string(i)));
  const std::string svg = plot.render();
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(svg, r, std::regex("height=\"(\\d+)\""));
    return r;
  }();
  EXPECT_GT(std::stoi(m[1].str()), 40 * 18);
  Plot heat("heat", "Heat", Axis::category("BN", {"64"}), Axis::category("BM", {"64"}));
  heat.colour_key("TF/s", 20, 50, false);
  const int cells = heat.add_hidden_series(named("cells"));
  heat.rect(cells, -0.5, -0.5, 0.5, 0.5, "cell", true, heat_colour(0.25));
  const std::string h = heat.render();
  EXPECT_NE(h.find("<linearGradient id=\"key-heat\""), std::string::npos);
  EXPECT_NE(h.find("fill=\"url(#key-heat)\""), std::string::npos);
  EXPECT_NE(h.find("style=\"fill:" + heat_colour(0.25) + "\""), std::string::npos);
  EXPECT_EQ(h.find(">cells</text>"), std::string::npos) << "a hidden series has no legend entry";
  EXPECT_NE(plot_stylesheet().find("prefers-color-scheme: dark"), std::string::npos);
}

}  // namespace
}  // namespace cmt::report
