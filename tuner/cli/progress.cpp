#include "cli/progress.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace cmt {

std::string format_duration(double seconds) {
  if (seconds < 0) seconds = 0;
  const auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Progress(std::string label, int64_t total, bool enabled)
    : m_label(std::move(label)),
      m_total(total),
      m_tty(stderr_is_terminal()),
      m_enabled(enabled && spdlog::default_logger()->should_log(spdlog::level::info)),
      m_start(std::chrono::steady_clock::now()),
      m_last_draw(m_start) {}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done, const std::string& status) {
  m_done = done;
  m_status = status;
  draw(false);
}

void Progress::draw(bool force) {
  if (!m_enabled || m_finished) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_draw = std::chrono::duration<double>(now - m_last_draw).count();
  const double elapsed = std::chrono::duration<double>(now - m_start).count();
  // A terminal is redrawn ten times a second; a log gets a line every ten seconds.
  if (!force && since_draw < (m_tty ? 0.1 : 10.0) && m_done < m_total) return;
  m_last_draw = now;
  const double frac = m_total > 0 ? static_cast<double>(m_done) / static_cast<double>(m_total) : 1.0;
  const std::string eta = (m_done > 0 && m_done < m_total) ? format_duration(elapsed / frac - elapsed) : "-";
  if (m_tty) {
    constexpr int k_width = 28;
    const int filled = static_cast<int>(frac * k_width);
    const std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(k_width - filled), '.');
    fmt::print(stderr, "\r\033[K{} [{}] {}/{} ETA {} {}", m_label, bar, m_done, m_total, eta, m_status);
    std::fflush(stderr);
  } else {
    spdlog::info("{}: {}/{} done, ETA {} {}", m_label, m_done, m_total, eta, m_status);
  }
}

void Progress::finish() {
  if (m_finished) return;
  if (m_enabled && m_tty) {
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  m_finished = true;
}

}  // namespace cmt
