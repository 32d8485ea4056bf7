// Logging setup (spdlog): stderr always, plus an optional log file.
#pragma once

#include <string>

namespace cmt {

enum class Verbosity { quiet, normal, verbose };

/// Configures the default logger. Throws UsageError if the log file cannot be opened or its folder
/// does not exist (no folder is created).
void setup_logging(Verbosity verbosity, const std::string& log_file);

/// True when stderr is a terminal (progress bars are drawn only then).
bool stderr_is_terminal();

}  // namespace cmt
