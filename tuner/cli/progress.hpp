// Progress reporting: a redrawn bar on a terminal, periodic log lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace cmt {

class Progress {
 public:
  Progress(std::string label, int64_t total, bool enabled = true);
  ~Progress();

  /// Sets the done count and a short status text (e.g. the current best).
  void update(int64_t done, const std::string& status = {});
  void set_total(int64_t total) { m_total = total; }
  /// Clears the bar line.
  void finish();

 private:
  void draw(bool force);
  std::string m_label;
  int64_t m_total;
  int64_t m_done = 0;
  std::string m_status;
  bool m_tty;
  bool m_enabled;
  bool m_finished = false;
  std::chrono::steady_clock::time_point m_start;
  std::chrono::steady_clock::time_point m_last_draw;
};

/// "1h02m", "3m05s", "12s".
std::string format_duration(double seconds);

}  // namespace cmt
