#include "store/sqlite.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <random>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>

#include "store/lock_holder.hpp"

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace cmt {

namespace {

constexpr size_t k_sql_in_message = 80;     // how much of a statement an error message quotes
constexpr milliseconds k_say_waiting_after{1000};   // a wait this long is worth a line in the log

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

std::string seconds_text(milliseconds duration) { return fmt::format("{:g} s", duration.count() / 1000.0); }

fs::path folder_of(const fs::path& file) { return file.has_parent_path() ? file.parent_path() : fs::path("."); }

/// Empty when this process may write path, else why not (strerror).
std::string write_denied(const fs::path& path) { return ::access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno); }

/// What a file that is not a regular file is, for the refusal.
std::string file_kind(const struct stat& st) {
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a named pipe";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

/// The file as an SQLite URI ("file:" and the path, percent-encoded) with the given query.
std::string file_uri(const fs::path& file, std::string_view query) {
  std::string uri = "file:";
  for (const unsigned char c : file.string()) {
    if (std::isalnum(c) || std::strchr("/._-~", c))
      uri += static_cast<char>(c);
    else
      uri += fmt::format("%{:02X}", c);
  }
  return uri + "?" + std::string(query);
}

/// Why a database cannot be written, for "cannot write database X: <why>".
std::string why_not_writable(const fs::path& file, const std::string& sqlite_message) {
  std::error_code ec;
  if (const std::string denied = fs::exists(file, ec) ? write_denied(file) : ""; !denied.empty())
    return fmt::format("{} (query, export, bench, precision, report, db check, db info and db export only read it)", denied);
  if (const std::string denied = write_denied(folder_of(file)); !denied.empty())
    return fmt::format("its folder {} is not writable ({}), and SQLite keeps its -wal and -shm files there",
                       folder_of(file).string(), denied);
  return sqlite_message;
}

/// Who holds the lock a connection to `file` waits for, and which lock.
struct LockText {
  std::string who;    // "process 1234 (cm-tune tune ...)"
  std::string what;   // "the write lock"
};

/// Never throws: it runs inside SQLite's busy handler, which an exception must not cross.
LockText describe_lock(const fs::path& file) noexcept {
  try {
    const auto holder = find_lock_holder(file);
    if (holder) {
      const std::string what = holder->writer ? "the write lock" : "a lock";
      if (holder->pid == static_cast<int>(::getpid())) return {"another connection in this process", what};
      return {describe_process(holder->pid), what};
    }
  } catch (const std::exception&) {
    // Said vaguely below.
  }
  return {"another process", "a lock"};
}

std::string locked_message(const fs::path& file, const std::string& who, milliseconds waited) {
  return fmt::format("database {} is locked by {}; gave up after {} (CMTUNE_LOCK_TIMEOUT sets how long to wait)",
                     file.string(), who, seconds_text(waited));
}

}  // namespace

bool DatabaseError::busy() const { return (m_code & 0xff) == SQLITE_BUSY; }

DamagedDatabaseError::DamagedDatabaseError(const fs::path& file, const std::string& what_is_wrong, int sqlite_code)
    : DatabaseError(fmt::format("database {} is damaged ({}); restore it from a backup, or remove it and tune again",
                                file.string(), what_is_wrong),
                    sqlite_code),
      m_what_is_wrong(what_is_wrong) {}

milliseconds lock_timeout() {
  const char* text = std::getenv("CMTUNE_LOCK_TIMEOUT");
  if (!text || !*text) return k_default_lock_timeout;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  // A week is far more than any wait worth making; the bound keeps the milliseconds in range.
  if (end == text || *end != '\0' || errno == ERANGE || !(seconds >= 0) || seconds > 7 * 24 * 3600)
    throw UsageError(fmt::format("CMTUNE_LOCK_TIMEOUT: '{}' is not a number of seconds (0 to 604800)", text));
  return milliseconds(static_cast<int64_t>(seconds * 1000));
}

// ---------------------------------------------------------------------------------------------
// Database

Database::Database(const fs::path& file, OpenMode mode) : m_file(file), m_mode(mode), m_lock_timeout(lock_timeout()) {
  const std::string name = file.string();
  // ":memory:" and "" (a private temporary database) are no files to check.
  const bool on_disk = !name.empty() && name != ":memory:";
  std::string open_name = name;
  int flags = mode == OpenMode::read ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (on_disk) {
    // SQLite would open a folder or a device and fail later with a raw message, or, for
    // /dev/null, create /dev/null-journal beside it.
    struct stat st{};
    const bool exists = ::stat(name.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
      throw DatabaseError(fmt::format("database {} is a folder; name a database file, e.g. {}", name,
                                      (file / "cm-tune.db").string()),
                          0);
    if (exists && !S_ISREG(st.st_mode))
      throw DatabaseError(fmt::format("database {} is {}, not a database file", name, file_kind(st)), 0);
    if (!exists && errno != ENOENT)
      throw DatabaseError(fmt::format("cannot open database {}: {}", name, std::strerror(errno)), 0);
    if (!exists && mode != OpenMode::create)
      throw DatabaseError(fmt::format("database {} does not exist; run cm-tune tune first", name), 0);
    if (mode == OpenMode::create) {
      flags |= SQLITE_OPEN_CREATE;
      if (file.has_parent_path()) {
        std::error_code ec;
        fs::create_directories(file.parent_path(), ec);
        if (ec)
          throw DatabaseError(fmt::format("cannot create folder {} for database {}: {}", file.parent_path().string(),
                                          name, ec.message()),
                              0);
      }
    }
    const std::string file_denied = exists ? write_denied(file) : "";
    const std::string folder_denied = write_denied(folder_of(file));
    if (mode != OpenMode::read && (!file_denied.empty() || !folder_denied.empty()))
      throw DatabaseError(fmt::format("cannot write database {}: {}", name, why_not_writable(file, "")), 0);
    if (mode == OpenMode::read && file_denied.empty() && folder_denied.empty()) {
      // Opened writable, but no statement may write (query_only, below): when the last connection
      // closes, SQLite then removes the -wal and -shm files as it does for writers. A read-only
      // connection would leave them behind.
      flags = SQLITE_OPEN_READWRITE;
    } else if (mode == OpenMode::read && !fs::exists(name + "-wal") && !fs::exists(name + "-journal")) {
      // Read without locks (immutable): SQLite would otherwise create the -shm and -wal files,
      // with the database's own permissions (a read-only -shm left behind makes the database
      // unwritable for its owner later), or fail when the folder is not writable. Without a -wal
      // no one is writing the database.
      open_name = file_uri(file, "immutable=1");
      flags |= SQLITE_OPEN_URI;
    }
  }
  const int rc = sqlite3_open_v2(open_name.c_str(), &m_db, flags, nullptr);
  try {
    if (rc != SQLITE_OK) fail(rc, fmt::format("sqlite3_open_v2({})", name), errmsg(m_db), __FILE__, __LINE__);
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_handler(m_db, &Database::on_busy, this);
    if (mode == OpenMode::read && !(flags & SQLITE_OPEN_READONLY)) exec("PRAGMA query_only = ON");
  } catch (...) {
    sqlite3_close_v2(m_db);   // a handle is returned even on failure and must be released
    m_db = nullptr;
    throw;
  }
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
    fail(rc, call_name("sqlite3_exec", sql), message, __FILE__, __LINE__);
  }
}

Statement Database::prepare(std::string_view sql) { return Statement(*this, sql); }

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(m_db); }

int Database::changes() const { return sqlite3_changes(m_db); }

void Database::retry_while_busy(const std::function<void()>& f) {
  const auto start = steady_clock::now();
  thread_local std::minstd_rand random(std::random_device{}());
  m_said_waiting = false;
  while (true) {
    try {
      f();
      return;
    } catch (const DatabaseError& e) {
      if (!e.busy() || e.timed_out()) throw;   // not busy, or the busy handler has waited already
      const auto waited = steady_clock::now() - start;
      if (waited >= m_lock_timeout)
        throw DatabaseError(locked_message(m_file, describe_lock(m_file).who, m_lock_timeout), e.sqlite_code(), true);
      if (waited >= k_say_waiting_after) say_waiting();
    }
    // Connections that collided would collide again in step: a random pause parts them.
    std::this_thread::sleep_for(milliseconds(5 + random() % 20));
  }
}

int Database::on_busy(void* database, int attempt) noexcept {
  auto& self = *static_cast<Database*>(database);
  const auto now = steady_clock::now();
  if (attempt == 0) {
    self.m_waiting_since = now;
    self.m_said_waiting = false;
    self.m_gave_up_on.reset();
  }
  const auto waited = now - self.m_waiting_since;
  if (waited >= self.m_lock_timeout) {
    self.m_gave_up_on = describe_lock(self.m_file).who;
    return 0;
  }
  if (waited >= k_say_waiting_after) self.say_waiting();
  // Most waits are for one commit: short pauses first, then steps short enough to notice the
  // release soon, never past the timeout.
  static constexpr int k_pause_ms[] = {1, 2, 5, 10, 20, 50};
  const milliseconds pause(k_pause_ms[std::min<size_t>(static_cast<size_t>(attempt), std::size(k_pause_ms) - 1)]);
  std::this_thread::sleep_for(std::min<steady_clock::duration>(pause, self.m_lock_timeout - waited));
  return 1;
}

void Database::say_waiting() noexcept {
  if (m_said_waiting) return;
  m_said_waiting = true;
  try {
    const LockText lock = describe_lock(m_file);
    spdlog::warn("waiting for {}, which holds {} on {} (giving up after {})", lock.who, lock.what, m_file.string(),
                 seconds_text(m_lock_timeout));
  } catch (const std::exception&) {
    // Only a log line is lost; the wait goes on.
  }
}

void Database::fail(int code, const std::string& call, const std::string& message, const char* source_file, int line) {
  const std::string name = m_file.string();
  switch (code & 0xff) {
    case SQLITE_BUSY: {
      if (const auto holder = std::exchange(m_gave_up_on, std::nullopt))
        throw DatabaseError(locked_message(m_file, *holder, m_lock_timeout), code, true);
      // Returned without waiting (retry_while_busy waits for these where it is safe).
      throw DatabaseError(fmt::format("database {} is locked by {}", name, describe_lock(m_file).who), code);
    }
    case SQLITE_READONLY:
      // A read-only connection that tries to write is cm-tune's mistake, not the user's.
      if (m_mode == OpenMode::read) break;
      throw DatabaseError(fmt::format("cannot write database {}: {}", name, why_not_writable(m_file, message)), code);
    case SQLITE_CORRUPT:
      // A truncated file, a damaged page or header: nothing the user can fix by other input, but
      // no failure of the machinery either, and the raw statement would not say which file.
      throw DamagedDatabaseError(m_file, "SQLite: " + message, code);
    case SQLITE_NOTADB:
      throw DatabaseError(fmt::format("{} is not a cm-tune database (not an SQLite file)", name), code);
    case SQLITE_CANTOPEN: {
      const int error = m_db ? sqlite3_system_errno(m_db) : 0;
      throw DatabaseError(fmt::format("cannot open database {}: {}", name, error ? std::strerror(error) : message), code);
    }
    default:
      break;
  }
  throw InfraError("SQLite", call, message, source_file, line);
}

// ---------------------------------------------------------------------------------------------
// Transaction

Transaction::Transaction(Database& db) : m_db(db) {
  // IMMEDIATE takes the write lock now (waiting up to the lock timeout), so a later write in the
  // transaction cannot fail with SQLITE_BUSY half-way through.
  m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (m_done) return;
  // SQLite may already have rolled back on its own after some errors; then there is nothing to do.
  if (!sqlite3_get_autocommit(m_db.handle())) sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

WriteScope::WriteScope(Database& db) {
  if (sqlite3_get_autocommit(db.handle())) m_transaction.emplace(db);
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
  if (rc != SQLITE_OK) db.fail(rc, call_name("sqlite3_prepare_v2", m_sql), errmsg(db.handle()), __FILE__, __LINE__);
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

/// Throws when col is not a column of the current row (SQLite would return NULL silently).
void check_column(sqlite3_stmt* stmt, int col, const std::string& sql, int line) {
  if (col < 0 || col >= sqlite3_data_count(stmt))
    throw InfraError("SQLite", fmt::format("sqlite3_column(#{}, {})", col, short_sql(sql)),
                     "no such column in the current row", __FILE__, line);
}

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

Statement& Statement::bind_column(int index, const Statement& from, int col) {
  check_column(from.m_stmt, col, from.m_sql, __LINE__);
  check_bind(sqlite3_bind_value(m_stmt, index, sqlite3_column_value(from.m_stmt, col)), m_db->handle(),
             "sqlite3_bind_value", index, m_sql, __LINE__);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string message = errmsg(m_db->handle());
  sqlite3_reset(m_stmt);   // leave the statement reusable after the error
  m_db->fail(rc, call_name("sqlite3_step", m_sql), message, __FILE__, __LINE__);
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
