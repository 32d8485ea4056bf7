#include "output/table.hpp"

#include <set>
#include <stdexcept>

namespace cmt::output {

Column::Column(std::string name) : m_name(std::move(name)), m_title(m_name) {}

Column::Column(std::string name, std::string title) : m_name(std::move(name)), m_title(std::move(title)) {}

Column& Column::unit(std::string unit) {
  m_unit = std::move(unit);
  return *this;
}

Column& Column::right() {
  m_align = Align::right;
  return *this;
}

Column& Column::precision(int digits) {
  m_precision = digits;
  return *this;
}

Column& Column::scale(double factor) {
  m_scale = factor;
  return *this;
}

Column& Column::suffix(std::string suffix) {
  m_suffix = std::move(suffix);
  return *this;
}

Column& Column::null_text(std::string text) {
  m_null_text = std::move(text);
  return *this;
}

Column& Column::width(size_t width) {
  m_width = width;
  return *this;
}

Column& Column::fit(int group) {
  m_fit = true;
  m_group = group;
  return *this;
}

Column& Column::gap(std::string gap) {
  m_gap = std::move(gap);
  return *this;
}

Column& Column::show(Show show) {
  m_show = show;
  return *this;
}

Table::Table(std::vector<Column> columns) : m_columns(std::move(columns)) {
  std::set<std::string> names;
  for (const Column& c : m_columns)
    if (!names.insert(c.name()).second) throw std::logic_error("output::Table: two columns named " + c.name());
}

Table::Row Table::add_row(Show show) {
  m_rows.push_back({std::vector<Cell>(m_columns.size()), show});
  return Row(*this, m_rows.size() - 1);
}

size_t Table::column_index(std::string_view name) const {
  for (size_t i = 0; i < m_columns.size(); ++i)
    if (m_columns[i].name() == name) return i;
  throw std::logic_error("output::Table: no column named " + std::string(name));
}

Cell& Table::Row::cell(std::string_view column) {
  return m_table.m_rows.at(m_row).cells.at(m_table.column_index(column));
}

Table::Row& Table::Row::set(std::string_view column, Value value) {
  Cell& c = cell(column);
  c.value = std::move(value);
  c.present = true;
  return *this;
}

Table::Row& Table::Row::set(std::string_view column, Value value, std::string text) {
  set(column, std::move(value));
  return this->text(column, std::move(text));
}

Table::Row& Table::Row::text(std::string_view column, std::string text) {
  cell(column).text = std::move(text);
  return *this;
}

Table::Row& Table::Row::omit(std::string_view column) {
  Cell& c = cell(column);
  c = Cell{};
  c.present = false;
  return *this;
}

}  // namespace cmt::output
