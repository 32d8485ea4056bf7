// A table of rows: what a command reports when it reports several things of one kind (bench's
// calls, tune's problems, query's trials, db check's checks). Columns are named, typed fields and
// say how human readers see them; the printers (output/printers.hpp) render a table as aligned text,
// JSON, CSV or markdown.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/value.hpp"

namespace cmt::output {

enum class Align { left, right };

/// Which printers show a column or a row.
enum class Show {
  all,    // every printer
  human,  // text and markdown only: what is there for reading (a footer, counts joined, a note)
  data,   // JSON and CSV only: a field the text table leaves out
};

/// One column: the field's name (the JSON key and the CSV heading) and how human printers show its
/// values. Setters return *this, so a table's columns read as one list.
class Column {
 public:
  /// Headed by its name.
  explicit Column(std::string name);
  /// `title`: the heading of the text and markdown tables (may be empty).
  Column(std::string name, std::string title);

  /// The field's name: the JSON key and the CSV heading.
  const std::string& name() const { return m_name; }
  /// The heading of the text and markdown tables.
  const std::string& title() const { return m_title; }
  /// What its numbers count ("us", "TF/s"): markdown headings show it after the title.
  Column& unit(std::string unit);
  const std::string& unit() const { return m_unit; }
  /// Right-aligned (numbers); columns are left-aligned by default.
  Column& right();
  Align align() const { return m_align; }
  /// Human printers show real numbers with this many digits after the point (default: the shortest
  /// text that reads back the same).
  Column& precision(int digits);
  int precision() const { return m_precision; }
  /// Human printers show numbers times this (100: a fraction as a percentage).
  Column& scale(double factor);
  double scale() const { return m_scale; }
  /// Human printers put this after every number ("x", "%", " us").
  Column& suffix(std::string suffix);
  const std::string& suffix() const { return m_suffix; }
  /// What human printers show for a null ("-" by default).
  Column& null_text(std::string text);
  const std::string& null_text() const { return m_null_text; }
  /// Text: at least this wide; a wider cell overflows it, as a printf width does.
  Column& width(size_t width);
  size_t width() const { return m_width; }
  /// Text: as wide as its widest cell and title (and at least width()). Columns of one nonzero group
  /// share the widest of their widths.
  Column& fit(int group = 0);
  bool fits() const { return m_fit; }
  int group() const { return m_group; }
  /// Text: what comes before it on a line, after the column to its left (one space by default).
  Column& gap(std::string gap);
  const std::string& gap() const { return m_gap; }
  /// Which printers show it (all by default).
  Column& show(Show show);
  Show shown() const { return m_show; }

 private:
  std::string m_name;
  std::string m_title;
  std::string m_unit;
  Align m_align = Align::left;
  int m_precision = -1;
  double m_scale = 1;
  std::string m_suffix;
  std::string m_null_text = "-";
  size_t m_width = 0;
  bool m_fit = false;
  int m_group = 0;
  std::string m_gap = " ";
  Show m_show = Show::all;
};

/// One cell: a value, and what human printers show instead of its formatted value, if anything.
struct Cell {
  Value value;
  std::optional<std::string> text;
  /// false: the row has no such field: JSON leaves the field out, the other printers show nothing,
  /// and a text line ends before the cells it lacks at its end.
  bool present = true;
};

/// Columns and rows of cells (null until set).
class Table {
 public:
  explicit Table(std::vector<Column> columns);

  /// Sets the cells of one row by column name; a name the table lacks is a std::logic_error.
  class Row {
   public:
    Row& set(std::string_view column, Value value);
    /// The value, shown to humans as `text`.
    Row& set(std::string_view column, Value value, std::string text);
    /// What human printers show instead of the cell's formatted value.
    Row& text(std::string_view column, std::string text);
    /// The row has no such field (Cell::present).
    Row& omit(std::string_view column);

   private:
    friend class Table;
    Row(Table& table, size_t row) : m_table(table), m_row(row) {}
    Cell& cell(std::string_view column);
    Table& m_table;
    size_t m_row;
  };

  /// A new last row, every cell null; `show`: which printers show it.
  Row add_row(Show show = Show::all);

  /// The columns, in the order human printers and CSV show them.
  const std::vector<Column>& columns() const { return m_columns; }
  /// How many rows there are, for every printer together.
  size_t row_count() const { return m_rows.size(); }
  /// One cell, by row and column index.
  const Cell& cell(size_t row, size_t column) const { return m_rows.at(row).cells.at(column); }
  /// Which printers show a row.
  Show row_shown(size_t row) const { return m_rows.at(row).show; }
  /// The index of the column named `name`; std::logic_error when there is none.
  size_t column_index(std::string_view name) const;
  /// Whether printers for humans (or for data) show the column or the row.
  static bool for_humans(Show show) { return show != Show::data; }
  static bool for_data(Show show) { return show != Show::human; }

 private:
  struct RowData {
    std::vector<Cell> cells;
    Show show = Show::all;
  };
  std::vector<Column> m_columns;
  std::vector<RowData> m_rows;
};

}  // namespace cmt::output
