// A thin RAII layer over the SQLite C API. Every failure throws InfraError with the SQL call,
// file:line and sqlite3_errmsg.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace cmt {

class Statement;

class Database {
 public:
  /// Opens (creating if needed, with parent folders) a database file; ":memory:" works too.
  explicit Database(const std::filesystem::path& file);
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

 private:
  sqlite3* m_db = nullptr;
  std::filesystem::path m_file;
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
