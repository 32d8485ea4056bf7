// The printers: one table (output/table.hpp) or one value (output/value.hpp) as aligned text, JSON,
// CSV or markdown. They see only names, values and how a column is shown, never how a number came
// about, so every command and every later report (an HTML page, `db export`) prints the same way.
// Each returns the text; the caller writes it (the command line with fmt::print, which fails loudly).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "output/table.hpp"
#include "output/value.hpp"

namespace cmt::output {

enum class Format { text, json, csv, markdown };

/// The format of a name: "text", "json", "csv", "markdown" (or "md"); nullopt for any other.
std::optional<Format> parse_format(std::string_view name);
/// "text", "json", "csv" or "markdown".
std::string_view format_name(Format format);

/// The text human printers (text, markdown) show for one cell of `column`: the cell's own text if it
/// has one; else null as the column's null text; a number times the column's scale, with its
/// precision (real numbers, and whole numbers that were scaled) and then its suffix; a flag as true or
/// false; text as it is; a list's items so shown, joined by ", "; a record as one-line JSON. Nothing
/// for a cell that is not present.
std::string cell_text(const Column& column, const Cell& cell);

/// How render_text lays a table out.
struct TextOptions {
  std::string indent;    // before every line
  bool header = true;    // a first line of the column titles
  bool trim = false;     // no spaces at the end of a line
};

/// Aligned text, a line per row for humans (Show::all and Show::human columns and rows): each cell
/// after its column's gap, padded to the column's width (Column::width, Column::fit) on the side its
/// alignment says; a line ends after the last cell its row has (Cell::present). Lines end with "\n".
std::string render_text(const Table& table, const TextOptions& options = {});

/// The value as nlohmann's JSON: records become objects, which list their fields in name order.
nlohmann::json to_json(const Value& value);
/// JSON text: indented by `indent` spaces a level, or on one line when `indent` is negative; fields
/// in name order; no newline at the end. It is what cm-tune's --json has always printed.
std::string render_json(const Value& value, int indent = 2);
/// A record per data row (Show::all and Show::data rows) with its data columns' fields, leaving out
/// the cells it lacks (Cell::present); human printers' texts play no part.
List table_records(const Table& table);
/// The table's records (table_records) as a JSON array.
std::string render_json(const Table& table, int indent = 2);
/// JSON lines: the table's records (table_records), each as one line of JSON (fields in name order)
/// ended by "\n"; nothing for a table without data rows.
std::string render_json_lines(const Table& table);

/// CSV as RFC 4180 writes it: a heading line of the data columns' names, then a line per data row,
/// each line ended by CRLF; a field holding a comma, a double quote, CR or LF is quoted, its double
/// quotes doubled. Null, a missing cell and a real number that is not finite are empty; a list or a
/// record is its one-line JSON.
std::string render_csv(const Table& table);

/// A markdown (GitHub) pipe table of what humans see: the titles (a unit in parentheses after its
/// title), an alignment row, then a line per row, the cells as cell_text gives them with "\", "|",
/// "*", "`" and "<" escaped and line breaks as <br>, padded to line up.
std::string render_markdown(const Table& table);

/// Text made safe for HTML and XML (an HTML page, an SVG drawing), in content and in quoted attribute
/// values: &, <, >, " and ' as character references.
std::string html_escaped(std::string_view text);

/// An HTML table of what humans see (as render_markdown): a <thead> row of the titles (a unit in
/// parentheses after its title), then a <tbody> row per row, each cell as cell_text gives it,
/// escaped; a right-aligned column's cells carry class "num". `attributes` (e.g. `class="wide"`,
/// the caller's, not escaped) go into the <table> tag. Lines end with "\n".
std::string render_html(const Table& table, std::string_view attributes = {});

/// The table in `format`: render_text with default options, render_json, render_csv or render_markdown.
std::string render(const Table& table, Format format);

}  // namespace cmt::output
