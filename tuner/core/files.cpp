#include "core/files.hpp"

#include <array>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"

namespace cmt {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path& file, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read {} '{}'", what, file.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_sqlite_file(const fs::path& file) {
  static constexpr char k_magic[] = "SQLite format 3";   // 15 characters and the terminating NUL: 16 bytes
  static_assert(sizeof(k_magic) == 16);
  std::ifstream in(file, std::ios::binary);
  std::array<char, sizeof(k_magic)> head{};
  if (!in || !in.read(head.data(), head.size())) return false;
  return std::memcmp(head.data(), k_magic, sizeof(k_magic)) == 0;
}

fs::path symlink_destination(const fs::path& file) {
  constexpr int k_max_links = 40;   // as the kernel's ELOOP limit
  fs::path at = file;
  std::error_code ec;
  for (int links = 0; fs::is_symlink(fs::symlink_status(at, ec)); ++links) {
    if (links == k_max_links)
      throw UsageError(fmt::format("cannot write {}: too many levels of symbolic links", file.string()));
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) throw UsageError(fmt::format("cannot write {}: cannot read link {}: {}", file.string(), at.string(), ec.message()));
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  return at;
}

namespace {

/// A name next to `file` that nothing uses yet, so that the temporary file never replaces another.
fs::path unused_temp_name(const fs::path& file) {
  std::error_code ec;
  for (int i = 0;; ++i) {
    fs::path temp = file.string() + (i == 0 ? std::string(".tmp") : fmt::format(".tmp{}", i));
    if (!fs::exists(fs::symlink_status(temp, ec))) return temp;
  }
}

}  // namespace

void write_file_atomically(const fs::path& file, const std::string& text) {
  const fs::path temp = unused_temp_name(file);
  std::error_code ec;
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      throw UsageError(fmt::format("cannot write {}", temp.string()));
    }
  }
  fs::rename(temp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(temp, ec);
    throw UsageError(fmt::format("cannot write {}: {}", file.string(), why));
  }
}

}  // namespace cmt
