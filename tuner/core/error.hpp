// Error types shared by every part of cm-tune.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace cmt {

/// Bad input from the user (flags, size strings, presets). Printed as one line, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A failure of the machinery underneath (CUDA, NVRTC, cuBLAS, SQLite, the file system).
/// Carries the failing call, where it was made and the library's own message.
class InfraError : public std::runtime_error {
 public:
  InfraError(std::string library, std::string call, std::string message, const char* file, int line);

  const std::string& library() const { return m_library; }
  const std::string& call() const { return m_call; }
  const std::string& library_message() const { return m_message; }

 private:
  std::string m_library;
  std::string m_call;
  std::string m_message;
};

/// A process cm-tune needs could not start (the measuring process named by CMTUNE_MEASURE_WORKER
/// is missing, or exits before it answers): a condition of the machine, not of cm-tune's code.
/// Printed as one line without a source location, exit code 4.
class StartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// No usable GPU (no driver, no device, wrong index). Printed as one line, exit code 3.
class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The text with control characters written as escapes (\n, \x07), so that a message quoting user
/// input stays one line.
std::string printable(std::string_view text);

}  // namespace cmt
