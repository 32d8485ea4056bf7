// Who holds the locks on a database, read from the kernel's table of POSIX locks (/proc/locks).
// SQLite locks byte ranges with fcntl: in the database file with a rollback journal, in its -shm
// file in WAL mode. fcntl(F_GETLK) would tell the same, but it needs a descriptor of the file, and
// closing that descriptor would drop every POSIX lock this process holds on the file, SQLite's own.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cmt {

struct LockHolder {
  int pid = 0;            // 0: a process outside this PID namespace
  bool writer = false;    // holds the write lock, not a read, checkpoint or recovery lock
};

/// The process holding the lock that a writer of `database` waits for: the holder of the write
/// lock when there is one, else of any other lock. Another process before this one (SQLite shares
/// one set of POSIX locks among a process's connections). nullopt when no lock is seen: released
/// meanwhile, or /proc/locks unreadable.
std::optional<LockHolder> find_lock_holder(const std::filesystem::path& database);

/// Other processes that have `database` open: every WAL connection holds a read lock on its -shm
/// file while it is open. Empty when /proc/locks cannot be read.
std::vector<int> processes_using(const std::filesystem::path& database);

/// "process 1234 (cm-tune tune --sizes 4096)", with its command line from /proc (shortened), or
/// "process 1234" when it cannot be read; "another process" for pid 0.
std::string describe_process(int pid);

}  // namespace cmt
