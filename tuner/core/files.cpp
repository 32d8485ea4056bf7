#include "core/files.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"

namespace cmt {

namespace fs = std::filesystem;

namespace {

/// The system's text for an errno value (thread-safe, unlike std::strerror).
std::string reason(int err) { return std::generic_category().message(err); }

/// An open file descriptor, closed when it goes out of scope unless close() was called.
class Descriptor {
 public:
  explicit Descriptor(int fd) : m_fd(fd) {}
  ~Descriptor() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return m_fd; }
  /// Closes now: 0, or close's errno (some file systems report a failed write only here).
  int close() {
    const int result = ::close(m_fd);
    m_fd = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int m_fd;
};

/// Why `file` could not be written, from the errno of the call that failed.
std::string write_failure(const fs::path& file, int err) {
  std::error_code ec;
  if (err == ENOENT && file.has_parent_path() && !fs::exists(file.parent_path(), ec))
    return fmt::format("folder {} does not exist", file.parent_path().string());
  return reason(err);
}

}  // namespace

int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n > 0) {
      text.remove_prefix(static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return n == 0 ? EIO : errno;   // no progress on a non-empty write: give up rather than spin
    }
  }
  return 0;
}

std::string read_text_file(const fs::path& file, const std::string& what) {
  const auto fail = [&](int err) { return UsageError(fmt::format("cannot read {} '{}': {}", what, file.string(), reason(err))); };
  Descriptor in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) throw fail(errno);
  // Presets, descriptors and sources are small: the limit stops /dev/zero from filling the memory.
  constexpr size_t k_max_bytes = size_t{64} << 20;
  std::string text;
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n == 0) return text;
    if (n > 0) text.append(buffer.data(), static_cast<size_t>(n));
    else if (errno != EINTR) throw fail(errno);   // a folder opens, and fails here: "Is a directory"
    if (text.size() > k_max_bytes)
      throw UsageError(fmt::format("cannot read {} '{}': it is larger than 64 MiB", what, file.string()));
  }
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
      throw UsageError(fmt::format("cannot write {}: {}", file.string(), reason(ELOOP)));
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) throw UsageError(fmt::format("cannot write {}: cannot read link {}: {}", file.string(), at.string(), ec.message()));
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  return at;
}

fs::path resolved_path(const fs::path& file) {
  fs::path at = file;
  try {
    at = symlink_destination(file);
  } catch (const UsageError&) {   // a loop of links: weakly_canonical stops at it too
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(at, ec);
  if (ec) absolute = at;
  const fs::path resolved = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : resolved;
}

std::optional<DatabaseFile> database_file_kind(const fs::path& file, const fs::path& db_file) {
  static constexpr const char* k_side_files[] = {"-wal", "-shm", "-journal"};
  const fs::path target = resolved_path(file);
  std::error_code ec;
  if (!db_file.empty()) {
    // SQLite names the side files after the database's path with its links followed; as spelt too,
    // in case a build does not follow them.
    std::vector<fs::path> bases = {resolved_path(db_file)};
    const fs::path spelt = resolved_path(db_file.has_parent_path() ? db_file.parent_path() : ".") / db_file.filename();
    if (spelt != bases.front()) bases.push_back(spelt);
    // equivalent() finds a hard link too; it is false when either file is missing.
    if (std::find(bases.begin(), bases.end(), target) != bases.end() || fs::equivalent(file, db_file, ec))
      return DatabaseFile{false, fmt::format("the database {} itself", db_file.string())};
    for (const fs::path& base : bases) {
      for (const char* suffix : k_side_files)
        if (target == fs::path(base.string() + suffix) || fs::equivalent(file, base.string() + suffix, ec))
          return DatabaseFile{true, fmt::format("the {} file of the database {}", suffix, db_file.string())};
    }
  }
  const std::string name = target.filename().string();
  for (const char* suffix : k_side_files) {
    const std::string_view s(suffix);
    if (name.size() <= s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0) continue;
    const fs::path stem = target.parent_path() / name.substr(0, name.size() - s.size());
    if (fs::is_regular_file(stem, ec) && is_sqlite_file(stem)) {   // regular: a pipe's read would wait
      const bool link = fs::is_symlink(fs::symlink_status(file, ec));   // else named as the user spelt the folder
      const fs::path shown = (link ? stem.parent_path() : file.parent_path()) / stem.filename();
      return DatabaseFile{true, fmt::format("the {} file of the SQLite database {}", suffix, shown.string())};
    }
  }
  return std::nullopt;
}

bool is_stream_file(const fs::path& file) {
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);   // through links, as /dev/stdout is one
  return !ec && (fs::is_character_file(status) || fs::is_fifo(status));
}

void write_file_atomically(const fs::path& file, const std::string& text) {
  const auto fail = [&](int err) { return UsageError(fmt::format("cannot write {}: {}", file.string(), write_failure(file, err))); };
  if (is_stream_file(file)) {
    // Replacing /dev/null with a file would break the system; a device or pipe takes the text as it comes.
    Descriptor out(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
    if (out.get() < 0) throw fail(errno);
    int err = write_all(out.get(), text);
    if (const int closed = out.close(); !err) err = closed;
    if (err) throw fail(err);
    return;
  }
  // A temporary name next to `file` that nothing uses: O_EXCL claims it, so no other file is replaced.
  fs::path temp;
  int fd = -1;
  for (int i = 0; fd < 0; ++i) {
    temp = file.string() + (i == 0 ? std::string(".tmp") : fmt::format(".tmp{}", i));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) throw fail(errno);
  }
  Descriptor out(fd);
  int err = write_all(out.get(), text);
  if (!err && ::fsync(out.get()) != 0) err = errno;   // the data is on disk before the rename makes it the file
  if (const int closed = out.close(); !err) err = closed;
  if (!err && ::rename(temp.c_str(), file.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(temp.c_str());
    throw fail(err);
  }
}

}  // namespace cmt
