// The output layer (tuner/output/): values, records and tables, and the printers: aligned text,
// JSON, CSV (RFC 4180), markdown and HTML.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "output/printers.hpp"
#include "output/table.hpp"
#include "output/value.hpp"

namespace cmt::output {
namespace {

// --- values and records -----------------------------------------------------------------------

TEST(OutputValue, KindsAndConversions) {
  EXPECT_TRUE(Value().is_null());
  EXPECT_TRUE(Value(nullptr).is_null());
  EXPECT_EQ(Value(true).kind(), Value::Kind::boolean);
  EXPECT_EQ(Value(7).as_int(), 7);
  EXPECT_EQ(Value(size_t{7}).as_int(), 7);
  EXPECT_EQ(Value(int64_t{-3}).as_int(), -3);
  EXPECT_EQ(Value(2.5).as_real(), 2.5);
  EXPECT_EQ(Value(2.5f).kind(), Value::Kind::real);
  EXPECT_EQ(Value("text").as_text(), "text");   // not a flag
  EXPECT_EQ(Value(std::string("s")).as_text(), "s");
  EXPECT_EQ(Value(std::optional<double>()).kind(), Value::Kind::null);
  EXPECT_EQ(Value(std::optional<double>(1.5)).as_real(), 1.5);
  EXPECT_EQ(Value(std::vector<int64_t>{1, 2}).as_list(), (List{1, 2}));
  EXPECT_EQ(Value(std::vector<std::string>{"a"}).as_list(), (List{"a"}));
  const Value map(std::map<std::string, int64_t>{{"ok", 2}, {"abandoned", 1}});
  ASSERT_EQ(map.as_record().size(), 2u);
  EXPECT_EQ(map.as_record().fields()[0].name, "abandoned");   // the map's order
  EXPECT_EQ(Value(7).as_number(), 7.0);
  EXPECT_EQ(Value(0.5).as_number(), 0.5);
}

TEST(OutputValue, ReadingTheWrongKindOrAnOutOfRangeNumberThrows) {
  EXPECT_THROW(Value(1).as_text(), std::logic_error);
  EXPECT_THROW(Value("1").as_int(), std::logic_error);
  EXPECT_THROW(Value(1).as_real(), std::logic_error);   // whole numbers stay whole
  EXPECT_THROW(Value().as_number(), std::logic_error);
  EXPECT_THROW(Value(std::numeric_limits<uint64_t>::max()), std::out_of_range);
  EXPECT_EQ(Value(uint64_t{1} << 62).as_int(), int64_t{1} << 62);
}

TEST(OutputRecord, FieldsKeepTheirOrderAndANameAppearsOnce) {
  Record r{{"b", 1}, {"a", "x"}};
  r.set("c", nullptr).set("b", 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.fields()[0].name, "b");
  EXPECT_EQ(r.at("b").as_int(), 2);
  EXPECT_EQ(r.find("missing"), nullptr);
  EXPECT_THROW(r.at("missing"), std::out_of_range);
  EXPECT_EQ(Value(r), Value(Record{{"b", 2}, {"a", "x"}, {"c", nullptr}}));
  EXPECT_NE(Value(r), Value(Record{{"a", "x"}, {"b", 2}, {"c", nullptr}}));   // order counts
}

// --- tables -----------------------------------------------------------------------------------

TEST(OutputTable, ColumnsAreNamedOnceAndRowsSetByName) {
  EXPECT_THROW(Table({Column("a"), Column("a")}), std::logic_error);
  Table t({Column("a"), Column("b")});
  EXPECT_THROW(t.add_row().set("c", 1), std::logic_error);
  t.add_row().set("b", 2);
  EXPECT_TRUE(t.cell(1, 0).value.is_null());   // not set: null
  EXPECT_EQ(t.cell(1, 1).value.as_int(), 2);
  EXPECT_EQ(t.column_index("b"), 1u);
}

TEST(OutputCellText, NumbersNullsListsAndOverrides) {
  const Column plain("x");
  const auto text = [](const Column& c, Value v) { return cell_text(c, Cell{std::move(v), std::nullopt, true}); };
  EXPECT_EQ(text(plain, 3), "3");
  EXPECT_EQ(text(plain, 0.25), "0.25");
  EXPECT_EQ(text(plain, true), "true");
  EXPECT_EQ(text(plain, Value()), "-");
  EXPECT_EQ(text(plain, "as is"), "as is");
  EXPECT_EQ(text(plain, List{3, 1}), "3, 1");
  EXPECT_EQ(text(plain, Record{{"b", 1}, {"a", "x"}}), R"({"a":"x","b":1})");
  EXPECT_EQ(text(Column("r").precision(3).suffix("x"), 0.49512), "0.495x");
  EXPECT_EQ(text(Column("p").scale(100).precision(1).suffix("%"), 0.0754), "7.5%");
  EXPECT_EQ(text(Column("p").scale(100).precision(0).suffix("%"), 1), "100%");
  EXPECT_EQ(text(Column("n").suffix(" us"), 7), "7 us");
  EXPECT_EQ(text(Column("n").suffix(" us"), "text"), "text");   // no suffix on text
  EXPECT_EQ(text(Column("c").null_text("n/a"), Value()), "n/a");
  EXPECT_EQ(cell_text(plain, Cell{1.5, std::string("shown"), true}), "shown");
  EXPECT_EQ(cell_text(plain, Cell{1.5, std::nullopt, false}), "");
}

// --- text ---------------------------------------------------------------------------------------

TEST(OutputText, FixedWidthsPadAndOverflowAsPrintfDoes) {
  Table t({Column("problem").width(8), Column("tflops", "TF/s").right().width(6).precision(2),
           Column("note").gap("  ")});
  t.add_row().set("problem", "64x64").set("tflops", 1.234).set("note", "a");
  t.add_row().set("problem", "4096x4096").set("tflops", 12.5).set("note", "longer");
  EXPECT_EQ(render_text(t),
            "problem    TF/s  note\n"
            "64x64      1.23  a\n"
            "4096x4096  12.50  longer\n");   // the long cell pushes its line, as {:<8} would
}

TEST(OutputText, FittedColumnsLineUpWithTheirTitlesAndShareAGroupWidth) {
  Table t({Column("problem").fit(), Column("chosen").fit(1), Column("best", "fastest measured").fit(1),
           Column("us").right().width(4).precision(1)});
  t.add_row().set("problem", "1x2x3").set("chosen", "k[A=1]").set("best", "k[A=1,B=2]").set("us", 3.0);
  t.add_row().set("problem", "100x200x300").set("chosen", "k").set("best", "k").set("us", 12.26);
  EXPECT_EQ(render_text(t),
            "problem     chosen           fastest measured   us\n"
            "1x2x3       k[A=1]           k[A=1,B=2]        3.0\n"
            "100x200x300 k                k                12.3\n");
  // Without the titles, only the cells count.
  EXPECT_EQ(render_text(t, {"  ", false}),
            "  1x2x3       k[A=1]     k[A=1,B=2]  3.0\n"
            "  100x200x300 k          k          12.3\n");
}

TEST(OutputText, LinesEndAfterTheirLastPresentCellAndHumanRowsAndColumnsShowOnlyHere) {
  Table t({Column("name").width(6), Column("ok").show(Show::data), Column("status", "st").width(4),
           Column("count").right().width(5), Column("notes", "").gap("")});
  t.add_row().set("name", "a").set("ok", true).set("status", "ok").set("count", 3).set("notes", "  (see)");
  t.add_row(Show::human).set("name", "total").set("status", "").set("count", 3).omit("notes");
  t.add_row(Show::data).set("name", "hidden");
  t.add_row().set("name", "b").omit("status").set("count", 1).omit("notes");
  EXPECT_EQ(render_text(t),
            "name   st   count\n"
            "a      ok       3  (see)\n"
            "total           3\n"
            "b               1\n");
}

TEST(OutputText, TrimmingAndWideCharacters) {
  Table t({Column("k").fit(), Column("v").fit().gap("  "), Column("help").gap("  ")});
  t.add_row().set("k", "größe").set("v", "1, 2").set("help", "");
  t.add_row().set("k", "n").set("v", "3").set("help", "rows");
  EXPECT_EQ(render_text(t, {"    ", false, true}),
            "    größe  1, 2\n"
            "    n      3     rows\n");
}

// --- JSON ---------------------------------------------------------------------------------------

TEST(OutputJson, FieldsInNameOrderAndNumbersKeepTheirKind) {
  const Value doc(Record{{"rows", List{}}, {"b", 2}, {"a", 2.0}, {"n", nullptr}, {"t", true}, {"o", Record{}}});
  EXPECT_EQ(render_json(doc), "{\n  \"a\": 2.0,\n  \"b\": 2,\n  \"n\": null,\n  \"o\": {},\n  \"rows\": [],\n  \"t\": true\n}");
  EXPECT_EQ(render_json(doc, -1), R"({"a":2.0,"b":2,"n":null,"o":{},"rows":[],"t":true})");
  EXPECT_EQ(render_json(Value(std::nan(""))), "null");
}

TEST(OutputJson, TextIsEscaped) {
  EXPECT_EQ(render_json(Value("say \"hi\"\\ now\n\ttab\x01 é")), R"("say \"hi\"\\ now\n\ttab\u0001 é")");
  EXPECT_EQ(render_json(Value(Record{{"a\"b", 1}}), -1), R"({"a\"b":1})");
}

TEST(OutputJson, ATableIsItsDataRowsAsRecords) {
  Table t({Column("problem"), Column("ratio").precision(3).suffix("x"), Column("shown").show(Show::human),
           Column("extra").show(Show::data)});
  t.add_row().set("problem", "64").set("ratio", 0.5, "half").set("shown", "x").set("extra", List{1});
  t.add_row().set("problem", "96").omit("ratio").set("extra", Value());
  t.add_row(Show::human).set("problem", "footer");
  EXPECT_EQ(render_json(t, -1), R"([{"extra":[1],"problem":"64","ratio":0.5},{"extra":null,"problem":"96"}])");
  const List records = table_records(t);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].as_record().fields()[0].name, "problem");   // the table's order, for CSV and others
}

TEST(OutputJsonLines, ARecordPerDataRowOnALineOfItsOwn) {
  Table t({Column("problem"), Column("ms").precision(1), Column("shown").show(Show::human),
           Column("note").show(Show::data)});
  t.add_row().set("problem", "64").set("ms", 0.5, "half").set("shown", "x").set("note", "two\nlines");
  t.add_row().set("problem", "96").omit("ms").set("note", Value());
  t.add_row(Show::human).set("problem", "footer");
  EXPECT_EQ(render_json_lines(t), "{\"ms\":0.5,\"note\":\"two\\nlines\",\"problem\":\"64\"}\n"
                                  "{\"note\":null,\"problem\":\"96\"}\n");
  EXPECT_EQ(render_json_lines(Table({Column("a")})), "");
}

// --- CSV ----------------------------------------------------------------------------------------

TEST(OutputCsv, QuotesCommasQuotesAndLineBreaksAsRfc4180Says) {
  Table t({Column("name"), Column("value").precision(1), Column("shown").show(Show::human), Column("list")});
  t.add_row().set("name", "plain").set("value", 0.125).set("list", List{1, 2});
  t.add_row().set("name", "a, b").set("value", 3).set("list", Value());
  t.add_row().set("name", "say \"hi\"").set("value", Value()).omit("list");
  t.add_row().set("name", "two\nlines").set("value", true);
  t.add_row().set("name", "cr\r").set("value", std::numeric_limits<double>::infinity());
  t.add_row(Show::human).set("name", "footer");
  EXPECT_EQ(render_csv(t),
            "name,value,list\r\n"
            "plain,0.125,\"[1,2]\"\r\n"   // full precision: CSV is data
            "\"a, b\",3,\r\n"
            "\"say \"\"hi\"\"\",,\r\n"
            "\"two\nlines\",true,\r\n"
            "\"cr\r\",,\r\n");
}

TEST(OutputCsv, AHeadingNameIsQuotedToo) {
  Table t({Column("a,b")});
  EXPECT_EQ(render_csv(t), "\"a,b\"\r\n");
}

// --- markdown -----------------------------------------------------------------------------------

TEST(OutputMarkdown, EscapesPipesAndMarksAndAlignsNumbersRight) {
  Table t({Column("kernel"), Column("us", "time").unit("us").right().precision(1), Column("hidden").show(Show::data)});
  t.add_row().set("kernel", "a|b").set("us", 12.34);
  t.add_row().set("kernel", "x*y `z` \\ <br>").set("us", Value());
  t.add_row(Show::human).set("kernel", "two\nlines").omit("us");
  EXPECT_EQ(render_markdown(t),
            "| kernel                | time (us) |\n"
            "| --------------------- | --------: |\n"
            "| a\\|b                  |      12.3 |\n"
            "| x\\*y \\`z\\` \\\\ &lt;br> |         - |\n"
            "| two<br>lines          |           |\n");
}

// --- HTML ---------------------------------------------------------------------------------------

TEST(OutputHtml, EscapesTextAndMarksNumbersRight) {
  EXPECT_EQ(html_escaped("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  Table t({Column("kernel"), Column("us", "time").unit("us").right().precision(1), Column("hidden").show(Show::data)});
  t.add_row().set("kernel", "a<b>&c").set("us", 12.34).set("hidden", 1);
  t.add_row(Show::data).set("kernel", "json only");
  t.add_row(Show::human).set("kernel", "\"q\"").omit("us");
  EXPECT_EQ(render_html(t, "data-table=\"t\""),
            "<table data-table=\"t\">\n"
            "<thead><tr><th>kernel</th><th class=\"num\">time (us)</th></tr></thead>\n"
            "<tbody>\n"
            "<tr><td>a&lt;b&gt;&amp;c</td><td class=\"num\">12.3</td></tr>\n"
            "<tr><td>&quot;q&quot;</td><td class=\"num\"></td></tr>\n"
            "</tbody>\n</table>\n");
  EXPECT_EQ(render_html(Table({Column("a")})), "<table>\n<thead><tr><th>a</th></tr></thead>\n<tbody>\n</tbody>\n</table>\n");
}

// --- formats ------------------------------------------------------------------------------------

TEST(OutputFormat, NamesReadBackAndRenderPicksThePrinter) {
  for (const Format f : {Format::text, Format::json, Format::csv, Format::markdown})
    EXPECT_EQ(parse_format(format_name(f)), f);
  EXPECT_EQ(parse_format("md"), Format::markdown);
  EXPECT_FALSE(parse_format("html").has_value());
  Table t({Column("a")});
  t.add_row().set("a", 1);
  EXPECT_EQ(render(t, Format::text), "a\n1\n");
  EXPECT_EQ(render(t, Format::json), "[\n  {\n    \"a\": 1\n  }\n]");
  EXPECT_EQ(render(t, Format::csv), "a\r\n1\r\n");
  EXPECT_EQ(render(t, Format::markdown), "| a   |\n| --- |\n| 1   |\n");
}

}  // namespace
}  // namespace cmt::output
