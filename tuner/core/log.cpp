#include "core/log.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/files.hpp"

namespace cmt {

namespace {

/// The --log-file sink. Each line goes out with write(2), so a failure carries the errno of the
/// call that failed (spdlog's file sink reports a failed buffered write later, often as "Success",
/// in a multi-line "[*** LOG ERROR ***]" block, every second). The first failure is said once, as a
/// warning on the console, and ends logging to the file; the command goes on, its results are in
/// the database.
class LogFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  LogFileSink(std::string name, int fd, spdlog::sink_ptr console)
      : m_name(std::move(name)), m_fd(fd), m_console(std::move(console)) {}
  ~LogFileSink() override { ::close(m_fd); }
  LogFileSink(const LogFileSink&) = delete;
  LogFileSink& operator=(const LogFileSink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (m_failed) return;
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    if (const int err = write_all(m_fd, std::string_view(line.data(), line.size()))) fail(err);
  }
  void flush_() override {}   // nothing is buffered

 private:
  void fail(int err) {
    m_failed = true;
    const std::string text = "cannot write --log-file " + m_name + ": " + std::generic_category().message(err) +
                             "; nothing more is logged to it";
    m_console->log(spdlog::details::log_msg("cm-tune", spdlog::level::warn, text));
  }

  std::string m_name;
  int m_fd;
  spdlog::sink_ptr m_console;
  bool m_failed = false;
};

}  // namespace

void setup_logging(Verbosity verbosity, const std::string& log_file) {
  std::vector<spdlog::sink_ptr> sinks;
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern("%^%l%$: %v");
  console->set_level(verbosity == Verbosity::verbose ? spdlog::level::debug
                     : verbosity == Verbosity::quiet ? spdlog::level::warn
                                                     : spdlog::level::info);
  sinks.push_back(console);
  if (!log_file.empty()) {
    // Said in words before open() would say "No such file or directory"; no folder is created.
    const std::filesystem::path file(log_file);
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
      throw UsageError("cannot open --log-file " + log_file + ": it is a directory");
    if (file.has_parent_path() && !std::filesystem::is_directory(file.parent_path(), ec))
      throw UsageError("cannot open --log-file " + log_file + ": folder " + file.parent_path().string() + " does not exist");
    // Log lines appended to a database (--log-file tune.db for --db tune.db) would damage it. Only a
    // regular file is looked into: reading /dev/stderr would wait for the terminal.
    if (std::filesystem::is_regular_file(file, ec) && is_sqlite_file(file))
      throw UsageError("--log-file " + log_file + " is a SQLite database, not a log; refusing to append to it");
    const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) throw UsageError("cannot open --log-file " + log_file + ": " + std::generic_category().message(errno));
    auto sink = std::make_shared<LogFileSink>(log_file, fd, console);
    sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    sink->set_level(spdlog::level::debug);
    sinks.push_back(sink);
  }
  auto logger = std::make_shared<spdlog::logger>("cm-tune", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace cmt
