// A thin RAII layer over the SQLite C API. A failure the user's situation causes (the file is
// locked by another process past the lock timeout, read-only where a write is needed, not a
// database, damaged, a folder or a device) throws DatabaseError, one line naming the file; every
// other failure throws InfraError with the SQL call, file:line and sqlite3_errmsg.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace cmt {

class Statement;

/// How a command uses its database file.
enum class OpenMode {
  create,   ///< reads and writes; a missing file is created, with its folders
  write,    ///< reads and writes a file that must exist
  read,     ///< only reads a file that must exist; writes nothing, not even SQLite's -wal and -shm
            ///< files where the user cannot write the database or its folder
};

/// A database the user's situation makes unusable: locked by another process past the lock
/// timeout, read-only where a write is needed, not a database, damaged, a folder or a device. One
/// line naming the file; a UsageError, so the command line exits with the usage code.
class DatabaseError : public UsageError {
 public:
  DatabaseError(const std::string& message, int sqlite_code, bool timed_out = false)
      : UsageError(message), m_code(sqlite_code), m_timed_out(timed_out) {}
  /// The SQLite result code behind it (extended), 0 when the check was cm-tune's own.
  int sqlite_code() const { return m_code; }
  /// True for SQLITE_BUSY: another connection holds a lock this one needs.
  bool busy() const;
  /// True when this connection waited for the lock for the whole lock timeout.
  bool timed_out() const { return m_timed_out; }

 private:
  int m_code;
  bool m_timed_out;
};

/// A database file SQLite finds damaged (SQLITE_CORRUPT: a truncated file, a damaged page or
/// header), or one that fails PRAGMA quick_check before a write. One line naming the file, what is
/// wrong and what to do; a DatabaseError, so the command line exits with the usage code.
class DamagedDatabaseError : public DatabaseError {
 public:
  /// `what_is_wrong`: SQLite's words, e.g. "SQLite: database disk image is malformed".
  DamagedDatabaseError(const std::filesystem::path& file, const std::string& what_is_wrong, int sqlite_code);
  /// What is wrong, without the file and the advice: "SQLite: database disk image is malformed".
  const std::string& what_is_wrong() const { return m_what_is_wrong; }

 private:
  std::string m_what_is_wrong;
};

/// How long a connection waits for another process's lock: $CMTUNE_LOCK_TIMEOUT seconds (0 fails
/// at once), else k_default_lock_timeout. UsageError for a value that is no number of seconds.
std::chrono::milliseconds lock_timeout();
constexpr std::chrono::seconds k_default_lock_timeout{60};

class Database {
 public:
  /// Opens a database file as `mode` says; ":memory:" and "" (a private temporary database) work
  /// too. DatabaseError for a folder, a device or another file that is not a regular file, a
  /// missing file (write, read), a file that cannot be written (create, write), and a file that
  /// cannot be opened.
  explicit Database(const std::filesystem::path& file, OpenMode mode = OpenMode::create);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// Runs one or more statements without results.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* handle() const { return m_db; }
  const std::filesystem::path& file() const { return m_file; }

  /// Runs f, and again while it fails with SQLITE_BUSY that SQLite returned without waiting for
  /// the lock (it does so where waiting could deadlock, e.g. when a connection that has read the
  /// file wants to write it), until the lock timeout. f must be safe to repeat.
  void retry_while_busy(const std::function<void()>& f);

 private:
  friend class Statement;
  /// sqlite3_busy_handler callback: waits for another connection's lock, says after a second who
  /// holds it, and gives up after the lock timeout.
  static int on_busy(void* database, int attempt) noexcept;
  /// Throws for a failed SQLite call: DatabaseError where the user's situation is the cause, else
  /// InfraError with the call, where it was made and SQLite's message.
  [[noreturn]] void fail(int code, const std::string& call, const std::string& message, const char* source_file,
                         int line);
  /// Logs, once per wait, who holds the lock this connection waits for.
  void say_waiting() noexcept;

  sqlite3* m_db = nullptr;
  std::filesystem::path m_file;
  OpenMode m_mode;
  std::chrono::milliseconds m_lock_timeout;
  std::chrono::steady_clock::time_point m_waiting_since;   // of the current wait for a lock
  bool m_said_waiting = false;
  std::optional<std::string> m_gave_up_on;                 // the holder, when the last wait timed out
};

/// BEGIN IMMEDIATE on construction; ROLLBACK in the destructor unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& m_db;
  bool m_done = false;
};

/// A transaction for a multi-statement write, unless the caller already holds one (then the
/// caller's transaction makes the statements atomic, and SQLite cannot nest BEGIN).
class WriteScope {
 public:
  explicit WriteScope(Database& db);
  void commit() {
    if (m_transaction) m_transaction->commit();
  }

 private:
  std::optional<Transaction> m_transaction;
};

/// A prepared statement. bind() indices start at 1; column() indices at 0.
class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::vector<char>& blob);
  Statement& bind_null(int index);
  /// Binds the value of column `col` of `from`'s current row as it is stored (its type, every bit of
  /// a REAL, a BLOB's bytes), whatever database `from` reads: a row copied between databases.
  Statement& bind_column(int index, const Statement& from, int col);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }

  /// Advances; true while a row is available.
  bool step();
  /// Runs to completion (for statements without rows).
  void run();
  void reset();

  bool is_null(int col) const;
  int64_t column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  std::vector<char> column_blob(int col) const;
  std::optional<int64_t> column_opt_int(int col) const;
  std::optional<double> column_opt_double(int col) const;

 private:
  Database* m_db;
  sqlite3_stmt* m_stmt = nullptr;
  std::string m_sql;
};

}  // namespace cmt
