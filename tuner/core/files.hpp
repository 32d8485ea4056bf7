// Reading and writing whole files, with the user-facing errors cm-tune gives when one cannot be
// read or written.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace cmt {

/// The file's bytes; UsageError "cannot read WHAT 'FILE': REASON" when it cannot be read (REASON
/// from the system: "Permission denied", "Is a directory").
std::string read_text_file(const std::filesystem::path& file, const std::string& what);

/// Writes all of text to fd, retrying after EINTR: 0, or the errno of the write that failed. Plain
/// write(2), because a failed iostream write sets no errno, and a message built from it read "Success".
int write_all(int fd, std::string_view text);

/// Whether the file starts with SQLite's 16-byte magic "SQLite format 3\0" (false when unreadable).
bool is_sqlite_file(const std::filesystem::path& file);

/// The file a write to `file` must replace: `file` itself, or the end of its chain of symbolic
/// links (relative targets resolved against their link's folder), so that replacing it keeps the
/// links. The result may not exist (a dangling link). UsageError for a loop of links.
std::filesystem::path symlink_destination(const std::filesystem::path& file);

/// The file `file` names, whether or not it exists: absolute, with every symbolic link in it followed
/// (a dangling last link to its target, a loop as far as it goes) and "." and ".." removed, so two
/// spellings of one file (relative and absolute, through a link, with ./ or ..) compare equal.
std::filesystem::path resolved_path(const std::filesystem::path& file);

/// A file of a SQLite database that a command must not write: the database, or a side file.
struct DatabaseFile {
  bool side_file = false;   // SQLite's -wal, -shm or -journal, which it deletes or replays
  std::string what;         // "the database DB itself", "the -wal file of the database DB"
};

/// What `file` is of a SQLite database, compared by resolved path and whether or not it exists:
/// "the database DB itself" (also a hard link to it) or "the -wal file of the database DB" (-shm,
/// -journal) for db_file, the database in use (none when empty); for a name ending in -wal, -shm or
/// -journal beside any other SQLite database X, "the -wal file of the SQLite database X". nullopt
/// when none. Writing a side file loses what is written (SQLite deletes it, or replays it as a
/// journal) or damages the database.
std::optional<DatabaseFile> database_file_kind(const std::filesystem::path& file, const std::filesystem::path& db_file);

/// Whether `file`, through any symbolic links, is a character device or a pipe (/dev/null,
/// /dev/stdout, a FIFO): such a file is written into, never replaced, and never read back (a read
/// may never end).
bool is_stream_file(const std::filesystem::path& file);

/// Writes through a temporary file in the same folder and a rename, so a reader never sees half a
/// file and a failed write leaves the old one as it was. `file` must be no symbolic link (rename
/// would replace the link): pass symlink_destination's result. A stream file (is_stream_file) is
/// written into in place instead. UsageError "cannot write FILE: REASON" when it cannot be written,
/// REASON from the failing call ("folder X does not exist", "No space left on device").
void write_file_atomically(const std::filesystem::path& file, const std::string& text);

}  // namespace cmt
