// A child process that holds a database open or write-locked, for the tests of what another
// process sees (lock waits, vacuum refusing while the database is in use). Real processes: SQLite
// locks are POSIX locks, which a process never conflicts with itself on.
#pragma once

#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "store/sqlite.hpp"

namespace cmt::test {

class DatabaseHolder {
 public:
  enum class Hold {
    open,         ///< a connection that has read the database, nothing more
    write_lock,   ///< BEGIN IMMEDIATE: the write lock, as a writer between its first write and commit
  };

  /// Forks a child that opens `file`, takes the hold and keeps it until wait(); returns once the
  /// child holds it. (No hold for a fixed time: a test releases it on an event it has seen.)
  DatabaseHolder(const std::filesystem::path& file, Hold hold) {
    int ready[2], release[2];
    // Close-on-exec: a process the test starts (cm-tune) must not hold the release pipe open, or
    // closing it here would not reach the holder.
    if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(release, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    m_pid = ::fork();
    if (m_pid < 0) throw std::runtime_error("fork failed");
    if (m_pid == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      int code = 0;
      try {
        Database db(file, OpenMode::write);
        db.exec(hold == Hold::write_lock ? "BEGIN IMMEDIATE" : "SELECT count(*) FROM sqlite_master");
        const char byte = 'r';
        if (::write(ready[1], &byte, 1) != 1) code = 2;
        char ignored;
        while (::read(release[0], &ignored, 1) > 0) {
        }
      } catch (const std::exception&) {
        code = 1;
      }
      ::_exit(code);   // the connection's locks go with the process
    }
    ::close(ready[1]);
    ::close(release[0]);
    m_release = release[1];
    char byte = 0;
    const bool held = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    if (!held) {
      wait();
      throw std::runtime_error("the holder process could not open " + file.string());
    }
  }
  ~DatabaseHolder() { wait(); }
  DatabaseHolder(const DatabaseHolder&) = delete;
  DatabaseHolder& operator=(const DatabaseHolder&) = delete;

  int pid() const { return m_pid; }

  /// Ends the hold (the child exits) and waits for the child; its exit code.
  int wait() {
    if (m_release >= 0) ::close(m_release);
    m_release = -1;
    if (m_pid > 0 && !m_waited) {
      int status = 0;
      ::waitpid(m_pid, &status, 0);
      m_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      m_waited = true;
    }
    return m_status;
  }

 private:
  int m_pid = 0;
  int m_release = -1;
  bool m_waited = false;
  int m_status = -1;
};

}  // namespace cmt::test
