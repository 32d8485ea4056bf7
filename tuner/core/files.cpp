#include "core/files.hpp"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace cmt {

std::string read_text_file(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read {} '{}'", what, file.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cmt
