#include "core/error.hpp"

#include <fmt/format.h>

namespace cmt {

InfraError::InfraError(std::string library, std::string call, std::string message, const char* file,
                       int line)
    : std::runtime_error(fmt::format("{} error: {} failed at {}:{}: {}", library, call, file, line, message)),
      m_library(std::move(library)),
      m_call(std::move(call)),
      m_message(std::move(message)) {}

}  // namespace cmt
