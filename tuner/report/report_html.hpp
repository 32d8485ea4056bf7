// The report as one self-contained HTML page: the plots of report/report_data.hpp drawn as inline
// SVG (report/svg.hpp), the winners and the held-out check as tables (output's render_html), and a
// style sheet for light and dark mode. It loads nothing: no script, font, style sheet or image from
// anywhere, and a Content-Security-Policy that forbids it.
#pragma once

#include <string>

#include "report/report_data.hpp"

namespace cmt::report {

/// The page. The same data give the same bytes (no clock, no random ids).
std::string render_report(const ReportData& data);

}  // namespace cmt::report
