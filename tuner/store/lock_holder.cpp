#include "store/lock_holder.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace cmt {

namespace {

// Where SQLite's unix VFS takes its locks (os_unix.c). WAL mode, in the -shm file: the write lock,
// then the checkpoint, recovery and five read locks; byte 128 is held shared by every connection.
constexpr int64_t k_wal_write_lock = 120;
constexpr int64_t k_wal_locks_end = 128;
// Rollback journal, in the database file: the pending and reserved bytes, then the shared range.
constexpr int64_t k_pending_byte = 0x40000000;
constexpr int64_t k_shared_end = k_pending_byte + 2 + 510 - 1;
constexpr size_t k_command_in_message = 100;   // how much of a command line a message quotes

/// One POSIX lock from /proc/locks: "1: POSIX  ADVISORY  WRITE 1234 fe:00:11083799 120 120".
struct PosixLock {
  int pid = 0;
  bool write = false;
  ino_t inode = 0;
  int64_t start = 0;
  int64_t end = 0;   // inclusive; "EOF" reads as the largest value
};

std::vector<PosixLock> posix_locks() {
  std::ifstream in("/proc/locks");
  std::vector<PosixLock> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string number, type, advisory, access, device, start, end;
    PosixLock lock;
    // Lines of processes blocked on a lock carry "->" after the number: those hold nothing.
    if (!(fields >> number >> type) || type != "POSIX") continue;
    if (!(fields >> advisory >> access >> lock.pid >> device >> start >> end)) continue;
    // The device is printed as the kernel sees the inode (on overlay file systems not what stat()
    // says), so locks are matched by inode number and byte range alone.
    const size_t colon = device.rfind(':');
    if (colon == std::string::npos) continue;
    try {
      lock.inode = static_cast<ino_t>(std::stoull(device.substr(colon + 1)));
      lock.start = std::stoll(start);
      lock.end = end == "EOF" ? INT64_MAX : std::stoll(end);
    } catch (const std::exception&) {
      continue;
    }
    lock.write = access == "WRITE";
    out.push_back(lock);
  }
  return out;
}

std::optional<ino_t> inode_of(const fs::path& file) {
  struct stat st{};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}

bool covers(const PosixLock& lock, int64_t first, int64_t last) { return lock.start <= last && lock.end >= first; }

/// The database's locks: those in its own file (rollback journal) and its -shm file (WAL).
struct DatabaseLocks {
  std::vector<PosixLock> database, shm;
};

DatabaseLocks database_locks(const fs::path& database) {
  const auto db_inode = inode_of(database);
  const auto shm_inode = inode_of(database.string() + "-shm");
  DatabaseLocks out;
  for (const PosixLock& lock : posix_locks()) {
    if (db_inode && lock.inode == *db_inode && covers(lock, k_pending_byte, k_shared_end)) out.database.push_back(lock);
    if (shm_inode && lock.inode == *shm_inode && covers(lock, k_wal_write_lock, k_wal_locks_end)) out.shm.push_back(lock);
  }
  return out;
}

}  // namespace

std::optional<LockHolder> find_lock_holder(const fs::path& database) {
  const DatabaseLocks locks = database_locks(database);
  const bool wal = fs::exists(database.string() + "-shm");
  const int self = static_cast<int>(::getpid());
  std::optional<LockHolder> best;
  const auto consider = [&](const PosixLock& lock, bool writer) {
    // A writer before other locks, another process before this one.
    const auto rank = [&](const LockHolder& h) { return (h.writer ? 2 : 0) + (h.pid != self ? 1 : 0); };
    const LockHolder holder{lock.pid, writer};
    if (!best || rank(holder) > rank(*best)) best = holder;
  };
  for (const PosixLock& lock : locks.shm) {
    // Every open connection holds the shared byte: that says the file is open, not what is waited for.
    if (!lock.write && lock.start >= k_wal_locks_end) continue;
    consider(lock, lock.write && covers(lock, k_wal_write_lock, k_wal_write_lock));
  }
  // In WAL mode every connection also reads the database file; only its write locks block then.
  for (const PosixLock& lock : locks.database)
    if (lock.write || !wal) consider(lock, lock.write);
  return best;
}

std::vector<int> processes_using(const fs::path& database) {
  const DatabaseLocks locks = database_locks(database);
  const int self = static_cast<int>(::getpid());
  std::vector<int> pids;
  for (const auto* list : {&locks.shm, &locks.database})
    for (const PosixLock& lock : *list)
      if (lock.pid != self) pids.push_back(lock.pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

std::string describe_process(int pid) {
  if (pid <= 0) return "another process";
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string command, arg;
  // Arguments end with NUL; the program is named by its file name, not its whole path.
  while (std::getline(in, arg, '\0')) {
    if (command.empty()) arg = fs::path(arg).filename().string();
    command += (command.empty() ? "" : " ") + arg;
  }
  if (command.size() > k_command_in_message) command = command.substr(0, k_command_in_message) + "...";
  return command.empty() ? "process " + std::to_string(pid) : "process " + std::to_string(pid) + " (" + command + ")";
}

}  // namespace cmt
