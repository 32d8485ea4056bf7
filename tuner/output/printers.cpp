#include "output/printers.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace cmt::output {

namespace {

/// Characters a terminal shows: UTF-8 lead bytes, not continuation bytes.
size_t shown_length(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string padded(const std::string& text, size_t width, Align align) {
  const size_t length = shown_length(text);
  if (length >= width) return text;
  const std::string fill(width - length, ' ');
  return align == Align::left ? text + fill : fill + text;
}

std::string number_text(const Column& column, double number, bool whole) {
  if (column.scale() != 1) {
    number *= column.scale();
    whole = false;
  }
  if (whole) return fmt::format("{}", static_cast<int64_t>(number));
  if (column.precision() >= 0) return fmt::format("{:.{}f}", number, column.precision());
  return fmt::format("{}", number);
}

std::string value_text(const Column& column, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::null: return column.null_text();
    case Value::Kind::boolean: return value.as_bool() ? "true" : "false";
    case Value::Kind::integer:
      if (column.scale() == 1) return fmt::format("{}", value.as_int()) + column.suffix();
      return number_text(column, static_cast<double>(value.as_int()), false) + column.suffix();
    case Value::Kind::real: return number_text(column, value.as_real(), false) + column.suffix();
    case Value::Kind::text: return value.as_text();
    case Value::Kind::list: {
      std::string out;
      for (const Value& item : value.as_list()) out += (out.empty() ? "" : ", ") + value_text(column, item);
      return out;
    }
    case Value::Kind::record: return render_json(value, -1);
  }
  return "";
}

std::vector<size_t> human_columns(const Table& table) {
  std::vector<size_t> out;
  for (size_t c = 0; c < table.columns().size(); ++c)
    if (Table::for_humans(table.columns()[c].shown())) out.push_back(c);
  return out;
}

std::vector<size_t> data_columns(const Table& table) {
  std::vector<size_t> out;
  for (size_t c = 0; c < table.columns().size(); ++c)
    if (Table::for_data(table.columns()[c].shown())) out.push_back(c);
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_value(const Cell& cell) {
  if (!cell.present) return "";
  const Value& v = cell.value;
  switch (v.kind()) {
    case Value::Kind::null: return "";
    case Value::Kind::boolean: return v.as_bool() ? "true" : "false";
    case Value::Kind::integer: return fmt::format("{}", v.as_int());
    case Value::Kind::real: return std::isfinite(v.as_real()) ? fmt::format("{}", v.as_real()) : "";
    case Value::Kind::text: return csv_field(v.as_text());
    case Value::Kind::list:
    case Value::Kind::record: return csv_field(render_json(v, -1));
  }
  return "";
}

std::string markdown_escaped(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' || c == '|' || c == '*' || c == '`') {
      out += '\\';
      out += c;
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      out += "<br>";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
  if (name == "text") return Format::text;
  if (name == "json") return Format::json;
  if (name == "csv") return Format::csv;
  if (name == "markdown" || name == "md") return Format::markdown;
  return std::nullopt;
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::text: return "text";
    case Format::json: return "json";
    case Format::csv: return "csv";
    case Format::markdown: return "markdown";
  }
  return "?";
}

std::string cell_text(const Column& column, const Cell& cell) {
  if (!cell.present) return "";
  if (cell.text) return *cell.text;
  return value_text(column, cell.value);
}

std::string render_text(const Table& table, const TextOptions& options) {
  const std::vector<size_t> columns = human_columns(table);
  std::vector<std::vector<std::string>> lines;   // the cells of each line, up to its last present one
  if (options.header) {
    lines.emplace_back();
    for (const size_t c : columns) lines.back().push_back(table.columns()[c].title());
  }
  for (size_t r = 0; r < table.row_count(); ++r) {
    if (!Table::for_humans(table.row_shown(r))) continue;
    std::vector<std::string> cells;
    size_t end = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      const Cell& cell = table.cell(r, columns[i]);
      cells.push_back(cell_text(table.columns()[columns[i]], cell));
      if (cell.present) end = i + 1;
    }
    cells.resize(end);
    lines.push_back(std::move(cells));
  }

  // Widths: at least Column::width; fitted columns as wide as their widest cell (and title).
  std::vector<size_t> widths(columns.size());
  std::map<int, size_t> group_widths;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& column = table.columns()[columns[i]];
    widths[i] = column.width();
    if (!column.fits()) continue;
    for (const auto& cells : lines)   // the titles too, when they are shown
      if (i < cells.size()) widths[i] = std::max(widths[i], shown_length(cells[i]));
    if (column.group() != 0) group_widths[column.group()] = std::max(group_widths[column.group()], widths[i]);
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& column = table.columns()[columns[i]];
    if (column.fits() && column.group() != 0) widths[i] = group_widths[column.group()];
  }

  std::string out;
  for (const auto& cells : lines) {
    std::string line = options.indent;
    for (size_t i = 0; i < cells.size(); ++i) {
      const Column& column = table.columns()[columns[i]];
      if (i > 0) line += column.gap();
      line += padded(cells[i], widths[i], column.align());
    }
    if (options.trim)
      while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

nlohmann::json to_json(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::null: return nullptr;
    case Value::Kind::boolean: return value.as_bool();
    case Value::Kind::integer: return value.as_int();
    case Value::Kind::real: return value.as_real();
    case Value::Kind::text: return value.as_text();
    case Value::Kind::list: {
      nlohmann::json out = nlohmann::json::array();
      for (const Value& item : value.as_list()) out.push_back(to_json(item));
      return out;
    }
    case Value::Kind::record: {
      nlohmann::json out = nlohmann::json::object();
      for (const Field& f : value.as_record().fields()) out[f.name] = to_json(f.value);
      return out;
    }
  }
  return nullptr;
}

std::string render_json(const Value& value, int indent) { return to_json(value).dump(indent); }

List table_records(const Table& table) {
  const std::vector<size_t> columns = data_columns(table);
  List out;
  for (size_t r = 0; r < table.row_count(); ++r) {
    if (!Table::for_data(table.row_shown(r))) continue;
    Record record;
    for (const size_t c : columns)
      if (table.cell(r, c).present) record.set(table.columns()[c].name(), table.cell(r, c).value);
    out.emplace_back(std::move(record));
  }
  return out;
}

std::string render_json(const Table& table, int indent) { return render_json(Value(table_records(table)), indent); }

std::string render_json_lines(const Table& table) {
  std::string out;
  for (const Value& record : table_records(table)) out += render_json(record, -1) + "\n";
  return out;
}

std::string render_csv(const Table& table) {
  const std::vector<size_t> columns = data_columns(table);
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_field(table.columns()[columns[i]].name());
  out += "\r\n";
  for (size_t r = 0; r < table.row_count(); ++r) {
    if (!Table::for_data(table.row_shown(r))) continue;
    for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_value(table.cell(r, columns[i]));
    out += "\r\n";
  }
  return out;
}

std::string render_markdown(const Table& table) {
  const std::vector<size_t> columns = human_columns(table);
  std::vector<std::vector<std::string>> lines(1);
  for (const size_t c : columns) {
    const Column& column = table.columns()[c];
    lines[0].push_back(markdown_escaped(column.unit().empty() ? column.title()
                                                              : fmt::format("{} ({})", column.title(), column.unit())));
  }
  for (size_t r = 0; r < table.row_count(); ++r) {
    if (!Table::for_humans(table.row_shown(r))) continue;
    lines.emplace_back();
    for (const size_t c : columns) lines.back().push_back(markdown_escaped(cell_text(table.columns()[c], table.cell(r, c))));
  }
  std::vector<size_t> widths(columns.size(), 3);   // "---" at least
  for (const auto& cells : lines)
    for (size_t i = 0; i < cells.size(); ++i) widths[i] = std::max(widths[i], shown_length(cells[i]));
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t i = 0; i < cells.size(); ++i)
      out += " " + padded(cells[i], widths[i], table.columns()[columns[i]].align()) + " |";
    return out + "\n";
  };
  std::string out = line(lines[0]);
  out += "|";
  for (size_t i = 0; i < columns.size(); ++i)
    out += " " + (table.columns()[columns[i]].align() == Align::right ? std::string(widths[i] - 1, '-') + ":"
                                                                       : std::string(widths[i], '-')) + " |";
  out += "\n";
  for (size_t l = 1; l < lines.size(); ++l) out += line(lines[l]);
  return out;
}

std::string html_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html(const Table& table, std::string_view attributes) {
  const std::vector<size_t> columns = human_columns(table);
  const auto cell_class = [&](size_t c) {
    return table.columns()[c].align() == Align::right ? std::string(" class=\"num\"") : std::string();
  };
  std::string out = attributes.empty() ? "<table>\n" : fmt::format("<table {}>\n", attributes);
  out += "<thead><tr>";
  for (const size_t c : columns) {
    const Column& column = table.columns()[c];
    const std::string title = column.unit().empty() ? column.title() : fmt::format("{} ({})", column.title(), column.unit());
    out += fmt::format("<th{}>{}</th>", cell_class(c), html_escaped(title));
  }
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < table.row_count(); ++r) {
    if (!Table::for_humans(table.row_shown(r))) continue;
    out += "<tr>";
    for (const size_t c : columns)
      out += fmt::format("<td{}>{}</td>", cell_class(c), html_escaped(cell_text(table.columns()[c], table.cell(r, c))));
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string render(const Table& table, Format format) {
  switch (format) {
    case Format::text: return render_text(table);
    case Format::json: return render_json(table);
    case Format::csv: return render_csv(table);
    case Format::markdown: return render_markdown(table);
  }
  return "";
}

}  // namespace cmt::output
