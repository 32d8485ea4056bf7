#include "core/error.hpp"

#include <fmt/format.h>

namespace cmt {

InfraError::InfraError(std::string library, std::string call, std::string message, const char* file,
                       int line)
    : std::runtime_error(fmt::format("{} error: {} failed at {}:{}: {}", library, call, file, line, message)),
      m_library(std::move(library)),
      m_call(std::move(call)),
      m_message(std::move(message)) {}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

}  // namespace cmt
