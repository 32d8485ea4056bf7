#include "store/sqlite.hpp"

#include <cctype>
#include <fmt/format.h>
#include <sqlite3.h>
#include <system_error>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

constexpr int k_busy_timeout_ms = 10'000;   // other cm-tune processes may hold the write lock briefly
constexpr size_t k_sql_in_message = 80;     // how much of a statement an error message quotes

/// The statement as quoted in error messages: whitespace collapsed, long ones shortened.
std::string short_sql(std::string_view sql) {
  std::string out;
  bool space = false;
  for (const char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
    if (out.size() > k_sql_in_message) {
      out += "...";
      break;
    }
  }
  return out;
}

std::string call_name(const char* function, std::string_view sql) {
  return fmt::format("{}({})", function, short_sql(sql));
}

/// sqlite3_errmsg of a handle that may be null (a failed open).
std::string errmsg(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

/// True when text holds only whitespace and SQL comments, i.e. no further statement.
bool only_trivia(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.compare(i, 2, "--") == 0) {
      const size_t end = text.find('\n', i);
      i = end == std::string_view::npos ? text.size() : end + 1;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Database

Database::Database(const fs::path& file) : m_file(file) {
  const std::string name = file.string();
  // ":memory:" and "" (a private temporary database) have no folder to create.
  const bool on_disk = !name.empty() && name != ":memory:";
  if (on_disk && file.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec)
      throw InfraError("filesystem", fmt::format("create_directories({})", file.parent_path().string()),
                       ec.message(), __FILE__, __LINE__);
  }
  const int rc = sqlite3_open_v2(name.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = errmsg(m_db);
    sqlite3_close_v2(m_db);   // a handle is returned even on failure and must be released
    m_db = nullptr;
    throw InfraError("SQLite", fmt::format("sqlite3_open_v2({})", name), message, __FILE__, __LINE__);
  }
  sqlite3_extended_result_codes(m_db, 1);
  sqlite3_busy_timeout(m_db, k_busy_timeout_ms);
}

Database::~Database() {
  // close_v2 defers the close until outstanding statements are finalized instead of failing.
  if (m_db) sqlite3_close_v2(m_db);
}

void Database::exec(std::string_view sql) {
  const std::string text(sql);   // sqlite3_exec wants a terminated string
  char* error = nullptr;
  const int rc = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error ? error : errmsg(m_db);
    sqlite3_free(error);
    throw InfraError("SQLite", call_name("sqlite3_exec", sql), message, __FILE__, __LINE__);
  }
}

Statement Database::prepare(std::string_view sql) { return Statement(*this, sql); }

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(m_db); }

int Database::changes() const { return sqlite3_changes(m_db); }

// ---------------------------------------------------------------------------------------------
// Transaction

Transaction::Transaction(Database& db) : m_db(db) {
  // IMMEDIATE takes the write lock now (waiting up to the busy timeout), so a later write in the
  // transaction cannot fail with SQLITE_BUSY half-way through.
  m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (m_done) return;
  // SQLite may already have rolled back on its own after some errors; then there is nothing to do.
  if (!sqlite3_get_autocommit(m_db.handle())) sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  m_db.exec("COMMIT");
  m_done = true;
}

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(Database& db, std::string_view sql) : m_db(&db), m_sql(sql) {
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v2(db.handle(), m_sql.data(), static_cast<int>(m_sql.size()), &m_stmt, &tail);
  if (rc != SQLITE_OK)
    throw InfraError("SQLite", call_name("sqlite3_prepare_v2", m_sql), errmsg(db.handle()), __FILE__, __LINE__);
  // Anything after the first statement would be silently ignored by SQLite; refuse it instead.
  const std::string_view rest(tail, static_cast<size_t>(m_sql.data() + m_sql.size() - tail));
  if (!m_stmt || !only_trivia(rest)) {
    const char* problem = m_stmt ? "more than one statement" : "no statement";
    sqlite3_finalize(m_stmt);
    m_stmt = nullptr;
    throw InfraError("SQLite", call_name("sqlite3_prepare_v2", m_sql), problem, __FILE__, __LINE__);
  }
}

Statement::~Statement() {
  if (m_stmt) sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement&& other) noexcept
    : m_db(other.m_db), m_stmt(other.m_stmt), m_sql(std::move(other.m_sql)) {
  other.m_stmt = nullptr;
}

namespace {

/// Throws for a failed bind, naming the parameter.
void check_bind(int rc, sqlite3* db, const char* function, int index, const std::string& sql, int line) {
  if (rc != SQLITE_OK)
    throw InfraError("SQLite", fmt::format("{}(#{}, {})", function, index, short_sql(sql)), errmsg(db), __FILE__,
                     line);
}

}  // namespace

Statement& Statement::bind(int index, int64_t value) {
  check_bind(sqlite3_bind_int64(m_stmt, index, value), m_db->handle(), "sqlite3_bind_int64", index, m_sql, __LINE__);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  check_bind(sqlite3_bind_double(m_stmt, index, value), m_db->handle(), "sqlite3_bind_double", index, m_sql,
             __LINE__);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  // A null data pointer would bind SQL NULL; an empty string must stay an empty string.
  const char* data = value.data() ? value.data() : "";
  check_bind(sqlite3_bind_text64(m_stmt, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
             m_db->handle(), "sqlite3_bind_text64", index, m_sql, __LINE__);
  return *this;
}

Statement& Statement::bind(int index, const std::vector<char>& blob) {
  // Same as for text: an empty vector has no data pointer, but must store a zero-length blob.
  const void* data = blob.empty() ? static_cast<const void*>("") : blob.data();
  check_bind(sqlite3_bind_blob64(m_stmt, index, data, blob.size(), SQLITE_TRANSIENT), m_db->handle(),
             "sqlite3_bind_blob64", index, m_sql, __LINE__);
  return *this;
}

Statement& Statement::bind_null(int index) {
  check_bind(sqlite3_bind_null(m_stmt, index), m_db->handle(), "sqlite3_bind_null", index, m_sql, __LINE__);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string message = errmsg(m_db->handle());
  sqlite3_reset(m_stmt);   // leave the statement reusable after the error
  throw InfraError("SQLite", call_name("sqlite3_step", m_sql), message, __FILE__, __LINE__);
}

void Statement::run() {
  while (step()) {
  }
  // Resetting releases the statement's hold on the database and makes it ready to run again.
  sqlite3_reset(m_stmt);
}

void Statement::reset() {
  // Like sqlite3_reset, keeps the bindings: callers rebind what changes.
  sqlite3_reset(m_stmt);
}

namespace {

/// Throws when col is not a column of the current row (SQLite would return NULL silently).
void check_column(sqlite3_stmt* stmt, int col, const std::string& sql, int line) {
  if (col < 0 || col >= sqlite3_data_count(stmt))
    throw InfraError("SQLite", fmt::format("sqlite3_column(#{}, {})", col, short_sql(sql)),
                     "no such column in the current row", __FILE__, line);
}

}  // namespace

bool Statement::is_null(int col) const {
  check_column(m_stmt, col, m_sql, __LINE__);
  return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}

int64_t Statement::column_int(int col) const {
  check_column(m_stmt, col, m_sql, __LINE__);
  return sqlite3_column_int64(m_stmt, col);
}

double Statement::column_double(int col) const {
  check_column(m_stmt, col, m_sql, __LINE__);
  return sqlite3_column_double(m_stmt, col);
}

std::string Statement::column_text(int col) const {
  check_column(m_stmt, col, m_sql, __LINE__);
  const bool null = sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
  // Bytes, not strlen: text may contain NULs and must come back exactly as stored.
  const int size = sqlite3_column_bytes(m_stmt, col);
  if (!text && !null)
    throw InfraError("SQLite", call_name("sqlite3_column_text", m_sql), errmsg(m_db->handle()), __FILE__, __LINE__);
  return text ? std::string(text, static_cast<size_t>(size)) : std::string();
}

std::vector<char> Statement::column_blob(int col) const {
  check_column(m_stmt, col, m_sql, __LINE__);
  const auto* data = static_cast<const char*>(sqlite3_column_blob(m_stmt, col));
  const int size = sqlite3_column_bytes(m_stmt, col);
  // A zero-length blob also comes back as a null pointer; only a non-empty one signals failure.
  if (!data && size > 0)
    throw InfraError("SQLite", call_name("sqlite3_column_blob", m_sql), errmsg(m_db->handle()), __FILE__, __LINE__);
  return data ? std::vector<char>(data, data + size) : std::vector<char>();
}

std::optional<int64_t> Statement::column_opt_int(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_int64(m_stmt, col);
}

std::optional<double> Statement::column_opt_double(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_double(m_stmt, col);
}

}  // namespace cmt
