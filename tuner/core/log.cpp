#include "core/log.hpp"

#include <filesystem>
#include <memory>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"

namespace cmt {

void setup_logging(Verbosity verbosity, const std::string& log_file) {
  std::vector<spdlog::sink_ptr> sinks;
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern("%^%l%$: %v");
  console->set_level(verbosity == Verbosity::verbose ? spdlog::level::debug
                     : verbosity == Verbosity::quiet ? spdlog::level::warn
                                                     : spdlog::level::info);
  sinks.push_back(console);
  if (!log_file.empty()) {
    // spdlog would create missing folders: a mistyped path must fail instead.
    const std::filesystem::path file(log_file);
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
      throw UsageError("cannot open --log-file " + log_file + ": it is a directory");
    if (file.has_parent_path() && !std::filesystem::is_directory(file.parent_path(), ec))
      throw UsageError("cannot open --log-file " + log_file + ": folder " + file.parent_path().string() + " does not exist");
    try {
      auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file, false);
      file->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
      file->set_level(spdlog::level::debug);
      sinks.push_back(file);
    } catch (const spdlog::spdlog_ex& e) {
      throw UsageError("cannot open --log-file " + log_file + ": " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("cm-tune", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace cmt
