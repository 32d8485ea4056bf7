// Reading and writing whole files, with the user-facing errors cm-tune gives when one cannot be
// read or written.
#pragma once

#include <filesystem>
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
