#include "store/store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <map>
#include <sqlite3.h>
#include <stdexcept>

#include "core/embedded.hpp"
#include "core/error.hpp"
#include "core/source_bundle.hpp"
#include "core/hash.hpp"
#include "store/cubin_codec.hpp"

namespace fs = std::filesystem;

namespace cmt {

DatabaseIdentity read_identity(Database& db) {
  Statement s = db.prepare(
      "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
      "(SELECT count(*) FROM sqlite_master)");
  s.step();
  return DatabaseIdentity{s.column_int(0), s.column_int(1), s.column_int(2)};
}

namespace {

/// Now as ISO 8601 UTC with second resolution: "2025-01-31T12:34:56Z".
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

/// Reads an integer PRAGMA (user_version, application_id, foreign_keys).
int64_t pragma_int(Database& db, const char* name) {
  Statement statement = db.prepare(fmt::format("PRAGMA {}", name));
  return statement.step() ? statement.column_int(0) : 0;
}

/// Refuses files that are not cm-tune databases, cm-tune databases newer than known_version, and,
/// unless allow_empty, files with nothing in them yet. Only reads, so a refused file is left
/// exactly as it was. A file that is not SQLite at all fails with DatabaseError (SQLITE_NOTADB), a
/// damaged one with DamagedDatabaseError.
DatabaseIdentity check_identity(Database& db, int known_version, bool allow_empty) {
  const std::string file = db.file().string();
  const DatabaseIdentity id = read_identity(db);
  // A brand-new (empty) file is ours to initialise; anything else must carry our application_id.
  const bool empty = id.empty();
  if (empty && !allow_empty)
    throw DatabaseError(fmt::format("database {} is empty (no cm-tune data yet); run cm-tune tune first", file), 0);
  if (id.application_id != k_application_id && !empty)
    throw UsageError(fmt::format("{} is not a cm-tune database", file));
  // cm-tune never writes a negative version: the header was overwritten.
  if (id.version < 0)
    throw DamagedDatabaseError(db.file(), fmt::format("its schema version reads {}", id.version), SQLITE_CORRUPT);
  if (id.version > known_version)
    throw UsageError(fmt::format("database {} has schema version {}, newer than this cm-tune (knows up to {}); "
                                 "upgrade cm-tune",
                                 file, id.version, known_version));
  return id;
}

/// Throws DamagedDatabaseError when PRAGMA quick_check finds the file damaged, naming the first
/// problem it reports. It reads every page once (docs/RELIABILITY.md has what that costs).
void refuse_if_damaged(Database& db) {
  constexpr int k_limit = 20;
  const std::vector<std::string> problems = integrity_problems(db, true, k_limit);
  if (problems.empty()) return;
  std::string what = problems.front().rfind("SQLite: ", 0) == 0 ? problems.front() : "quick_check: " + problems.front();
  if (problems.size() > 1)
    what += fmt::format(" and {}{} more", problems.size() - 1, problems.size() >= k_limit ? " or" : "");
  throw DamagedDatabaseError(db.file(), what, SQLITE_CORRUPT);
}

/// Turns foreign key enforcement off for its lifetime and restores the previous setting.
/// Migrations that rebuild a table (create new, copy, drop old, rename) need this; the pragma
/// cannot change inside a transaction, hence around it. Each migration runs foreign_key_check
/// after its script instead.
class ForeignKeysOff {
 public:
  explicit ForeignKeysOff(Database& db) : m_db(db), m_was_on(pragma_int(db, "foreign_keys") != 0) {
    if (m_was_on) m_db.exec("PRAGMA foreign_keys = OFF");
  }
  ~ForeignKeysOff() {
    if (m_was_on) sqlite3_exec(m_db.handle(), "PRAGMA foreign_keys = ON", nullptr, nullptr, nullptr);
  }
  ForeignKeysOff(const ForeignKeysOff&) = delete;
  ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;

 private:
  Database& m_db;
  bool m_was_on;
};

/// "?, ?, ?" with one placeholder per comma-separated column in columns.
std::string placeholders(std::string_view columns) {
  std::string out = "?";
  for (const char c : columns)
    if (c == ',') out += ", ?";
  return out;
}

/// Binds consecutive parameters starting at 1, so binding order mirrors the column lists below.
class Binder {
 public:
  explicit Binder(Statement& statement) : m_statement(statement) {}
  template <typename T>
  Binder& operator()(const T& value) {
    m_statement.bind(m_index++, value);
    return *this;
  }
  Binder& boolean(bool value) { return (*this)(static_cast<int64_t>(value ? 1 : 0)); }
  /// threads, tile_m, tile_n, dynamic_smem, grid_z, problems_per_block, tensor_maps
  Binder& shape(const LaunchShape& s) {
    return (*this)(s.threads)(s.tile_m)(s.tile_n)(s.dynamic_smem)(s.grid_z)(s.problems_per_block)(s.tensor_maps);
  }
  /// align_bytes, ld_multiple
  Binder& requirements(const Requirements& r) { return (*this)(r.align_bytes)(r.ld_multiple); }
  /// m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype (k_problem_columns)
  Binder& problem(const Problem& p) {
    return (*this)(p.m)(p.n)(p.k)(std::string(p.layout()))(p.batch)(p.stride_a)(p.stride_b)(p.stride_c)(
        std::string(dtype_name(p.dtype)));
  }

 private:
  Statement& m_statement;
  int m_index = 1;
};

/// Reads consecutive columns starting at `first`, mirroring Binder.
class Reader {
 public:
  explicit Reader(const Statement& statement, int first = 0) : m_statement(statement), m_col(first) {}
  int64_t integer() { return m_statement.column_int(m_col++); }
  int small() { return static_cast<int>(m_statement.column_int(m_col++)); }
  double real() { return m_statement.column_double(m_col++); }
  std::string text() { return m_statement.column_text(m_col++); }
  std::vector<char> blob() { return m_statement.column_blob(m_col++); }
  std::optional<int64_t> opt_integer() { return m_statement.column_opt_int(m_col++); }
  std::optional<int> opt_small() {
    const auto value = m_statement.column_opt_int(m_col++);
    return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
  }
  std::optional<double> opt_real() { return m_statement.column_opt_double(m_col++); }
  /// threads, tile_m, tile_n, dynamic_smem, grid_z, problems_per_block, tensor_maps (as Binder::shape)
  LaunchShape shape() {
    LaunchShape s;
    s.threads = integer();
    s.tile_m = integer();
    s.tile_n = integer();
    s.dynamic_smem = integer();
    s.grid_z = integer();
    s.problems_per_block = integer();
    s.tensor_maps = integer();
    return s;
  }
  /// k_problem_columns (as Binder::problem)
  Problem problem() {
    Problem p;
    p.m = integer();
    p.n = integer();
    p.k = integer();
    const std::string layout = text();
    const auto ops = parse_layout(layout);
    if (!ops) throw InfraError("SQLite", "reading a problem", fmt::format("unknown layout '{}'", layout), __FILE__, __LINE__);
    std::tie(p.trans_a, p.trans_b) = *ops;
    p.batch = integer();
    p.stride_a = integer();
    p.stride_b = integer();
    p.stride_c = integer();
    const std::string dtype = text();
    const auto d = parse_dtype(dtype);
    if (!d) throw InfraError("SQLite", "reading a problem", fmt::format("unknown element type '{}'", dtype), __FILE__, __LINE__);
    p.dtype = *d;
    return p;
  }
  /// align_bytes, ld_multiple (as Binder::requirements)
  Requirements requirements() {
    Requirements req;
    req.align_bytes = integer();
    req.ld_multiple = integer();
    return req;
  }

 private:
  const Statement& m_statement;
  int m_col;
};

// Column lists shared by INSERT and SELECT; the bind_* and read_* functions follow their order.

constexpr std::string_view k_binary_columns =
    "key, template_name, params, arch, nvrtc_version, options, source_hash, ok, log, cubin, lowered_name, "
    "registers, spill_stores, spill_loads, compile_seconds, batched, takes_batch_count";

constexpr std::string_view k_device_columns =
    "uuid, name, cc_major, cc_minor, sm_count, clock_khz, memory_clock_khz, memory_bus_bits, memory_bytes, "
    "l2_bytes, driver_version, runtime_version, nvrtc_version, first_seen, last_seen";

constexpr std::string_view k_run_columns =
    "command_line, preset_path, preset_hash, device_id, started_at, ended_at, status";

/// The columns that key a problem, in Binder::problem order, and a WHERE clause matching them.
constexpr std::string_view k_problem_columns = "m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype";
constexpr std::string_view k_problem_match =
    "m = ? AND n = ? AND k = ? AND layout = ? AND batch = ? AND stride_a = ? AND stride_b = ? AND stride_c = ? AND "
    "dtype = ?";

constexpr std::string_view k_trial_columns =
    "trial_key, run_id, device_id, template_name, params, name_expression, binary_key, m, n, k, layout, batch, "
    "stride_a, stride_b, stride_c, dtype, lda, ldb, ldc, "
    "outcome, reason, log, max_abs_error, max_error_ratio, simt_error_ratio, median_ms, min_ms, cv, samples, gflops, "
    "ratio_to_cublas, retime_median_ms, registers, smem_bytes, threads, tile_m, tile_n, dynamic_smem, "
    "grid_z, problems_per_block, tensor_maps, align_bytes, ld_multiple, created_at";

constexpr std::string_view k_baseline_columns =
    "device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, lda, ldb, ldc, median_ms, min_ms, cv, samples, "
    "gflops, run_id, created_at";

constexpr std::string_view k_winner_columns =
    "device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, scope, trial_id, template_name, params, name_expression, median_ms, gflops, "
    "ratio_to_cublas, align_bytes, ld_multiple, threads, tile_m, tile_n, dynamic_smem, grid_z, problems_per_block, tensor_maps, "
    "binary_key";

BinaryRecord read_binary(const Statement& s) {
  Reader r(s);
  BinaryRecord b;
  b.key = r.text();
  b.template_name = r.text();
  b.params = r.text();
  b.arch = r.text();
  b.nvrtc_version = r.text();
  b.options = r.text();
  b.source_hash = r.text();
  b.ok = r.integer() != 0;
  b.log = r.text();
  b.cubin = r.blob();
  b.lowered_name = r.text();
  b.registers = r.small();
  b.spill_stores = r.small();
  b.spill_loads = r.small();
  b.compile_seconds = r.real();
  b.batched = r.integer() != 0;
  b.takes_batch_count = r.integer() != 0;
  return b;
}

/// Reads "id, <k_device_columns>".
DeviceRecord read_device(const Statement& s) {
  Reader r(s);
  DeviceRecord d;
  d.id = r.integer();
  d.uuid = r.text();
  d.name = r.text();
  d.cc_major = r.small();
  d.cc_minor = r.small();
  d.sm_count = r.small();
  d.clock_khz = r.small();
  d.memory_clock_khz = r.small();
  d.memory_bus_bits = r.small();
  d.memory_bytes = r.integer();
  d.l2_bytes = r.integer();
  d.driver_version = r.small();
  d.runtime_version = r.small();
  d.nvrtc_version = r.text();
  d.first_seen = r.text();
  d.last_seen = r.text();
  return d;
}

/// Reads "id, <k_run_columns>".
RunRecord read_run(const Statement& s) {
  Reader r(s);
  RunRecord run;
  run.id = r.integer();
  run.command_line = r.text();
  run.preset_path = r.text();
  run.preset_hash = r.text();
  run.device_id = r.opt_integer();
  run.started_at = r.text();
  run.ended_at = r.text();   // NULL while running reads as ""
  run.status = r.text();
  return run;
}

void bind_trial(Statement& s, const TrialRecord& t, const std::string& created_at) {
  Binder b(s);
  b(t.trial_key)(t.run_id)(t.device_id)(t.template_name)(t.params)(t.name_expression)(t.binary_key);
  b.problem(t.problem)(t.lda)(t.ldb)(t.ldc);
  b(to_string(t.outcome))(t.reason)(t.log);
  b(t.max_abs_error)(t.max_error_ratio)(t.simt_error_ratio)(t.median_ms)(t.min_ms)(t.cv)(t.samples)(t.gflops);
  b(t.ratio_to_cublas)(t.retime_median_ms);
  b(t.registers)(t.smem_bytes);
  b.shape(t.shape).requirements(t.requirements)(created_at);
}

/// Reads "id, <k_trial_columns>".
TrialRecord read_trial(const Statement& s) {
  Reader r(s);
  TrialRecord t;
  t.id = r.integer();
  t.trial_key = r.text();
  t.run_id = r.integer();
  t.device_id = r.integer();
  t.template_name = r.text();
  t.params = r.text();
  t.name_expression = r.text();
  t.binary_key = r.text();
  t.problem = r.problem();
  t.lda = r.integer();
  t.ldb = r.integer();
  t.ldc = r.integer();
  t.outcome = outcome_from_string(r.text());
  t.reason = r.text();
  t.log = r.text();
  t.max_abs_error = r.opt_real();
  t.max_error_ratio = r.opt_real();
  t.simt_error_ratio = r.opt_real();
  t.median_ms = r.opt_real();
  t.min_ms = r.opt_real();
  t.cv = r.opt_real();
  t.samples = r.opt_small();
  t.gflops = r.opt_real();
  t.ratio_to_cublas = r.opt_real();
  t.retime_median_ms = r.opt_real();
  t.registers = r.small();
  t.smem_bytes = r.integer();
  t.shape = r.shape();
  t.requirements = r.requirements();
  t.created_at = r.text();
  return t;
}

BaselineRecord read_baseline(const Statement& s) {
  Reader r(s);
  BaselineRecord b;
  b.device_id = r.integer();
  b.problem = r.problem();
  b.lda = r.integer();
  b.ldb = r.integer();
  b.ldc = r.integer();
  b.median_ms = r.real();
  b.min_ms = r.real();
  b.cv = r.real();
  b.samples = r.small();
  b.gflops = r.real();
  b.run_id = r.integer();
  b.created_at = r.text();
  return b;
}

/// Reads <k_winner_columns> starting at column first.
WinnerRecord read_winner(const Statement& s, int first = 0) {
  Reader r(s, first);
  WinnerRecord w;
  w.device_id = r.integer();
  w.problem = r.problem();
  w.scope = r.text();
  w.trial_id = r.integer();
  w.template_name = r.text();
  w.params = r.text();
  w.name_expression = r.text();
  w.median_ms = r.real();
  w.gflops = r.real();
  w.ratio_to_cublas = r.real();
  w.requirements = r.requirements();
  w.shape = r.shape();
  w.binary_key = r.text();
  return w;
}

/// Doubles enter the content hash as their shortest round-trip decimal spelling, which is exact
/// and deterministic (Hasher::field(int64_t) would silently truncate them).
void hash_real(Hasher& h, double value) { h.field(fmt::format("{}", value)); }

/// What a binary's log starts with once `db vacuum` dropped its cubin (then follows the compile
/// log). The rows stay, so this marks them; nothing else stores an empty cubin with this log.
constexpr std::string_view k_dropped_cubin_log = "[cubin dropped by cm-tune db vacuum] ";

bool cubin_dropped(const BinaryRecord& b) {
  return b.ok && b.cubin.empty() && std::string_view(b.log).substr(0, k_dropped_cubin_log.size()) == k_dropped_cubin_log;
}

}  // namespace

std::vector<std::string> integrity_problems(Database& db, bool quick, int limit) {
  Statement s = db.prepare(fmt::format("PRAGMA {}({})", quick ? "quick_check" : "integrity_check", limit));
  std::vector<std::string> problems;
  try {
    while (s.step()) {
      // A row may hold several problems, one a line, after a line "*** in database main ***".
      const std::string text = s.column_text(0);
      for (size_t pos = 0; pos < text.size();) {
        const size_t end = std::min(text.find('\n', pos), text.size());
        const std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (!line.empty() && line != "ok" && line != "*** in database main ***") problems.push_back(printable(line));
      }
    }
  } catch (const DamagedDatabaseError& e) {
    // SQLite may stop at a page it cannot read; what it reported before says more than its error.
    if (problems.empty()) problems.push_back(e.what_is_wrong());
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Migrations

const std::vector<Migration>& builtin_migrations() {
  // db/migrations/NNNN_name.sql, checked for that form when the build embeds them.
  static const std::vector<Migration> k_migrations = [] {
    std::vector<Migration> out;
    for (const EmbeddedFile& f : embedded_migrations()) {
      const std::string_view stem = f.name.substr(0, f.name.rfind(".sql"));
      const size_t underscore = stem.find('_');
      out.push_back({std::stoi(std::string(stem.substr(0, underscore))), std::string(stem.substr(underscore + 1)),
                     std::string(f.text)});
    }
    return out;
  }();
  return k_migrations;
}

int latest_schema_version() {
  const auto& migrations = builtin_migrations();
  return migrations.empty() ? 0 : migrations.back().version;
}

void migrate(Database& db, const std::vector<Migration>& migrations) {
  int previous = 0;
  for (const Migration& m : migrations) {
    if (m.version <= previous)
      throw std::logic_error(fmt::format("migration {:04}_{} is out of order (after version {})", m.version, m.name,
                                         previous));
    previous = m.version;
  }
  const int known = migrations.empty() ? 0 : migrations.back().version;
  check_identity(db, known, true);

  // Every missing step, and the version and application_id, commit together: a process killed
  // half-way (a signal while it creates the database) leaves the schema it found, never a partial
  // one that only some later step would complete.
  if (pragma_int(db, "user_version") < known) {
    ForeignKeysOff foreign_keys_off(db);
    Transaction transaction(db);
    // Another process may have migrated while we waited for the write lock.
    const int64_t found = pragma_int(db, "user_version");
    for (const Migration& m : migrations) {
      if (m.version <= found) continue;
      try {
        db.exec(m.sql);
      } catch (const InfraError& e) {
        // On a file that says it has an earlier schema, the step fails when the tables are not what
        // that version says (a later column already there): the file's condition, not cm-tune's.
        if (found > 0)
          throw UsageError(fmt::format("database {} says schema version {}, but its tables are not that version's: "
                                       "migration {:04}_{} fails on it ({}); nothing was changed",
                                       db.file().string(), found, m.version, m.name, e.library_message()));
        throw InfraError(e.library(), fmt::format("migration {:04}_{}: {}", m.version, m.name, e.call()),
                         e.library_message(), __FILE__, __LINE__);
      }
      Statement violations = db.prepare("PRAGMA foreign_key_check");
      if (violations.step())
        throw InfraError("SQLite", fmt::format("migration {:04}_{}: PRAGMA foreign_key_check", m.version, m.name),
                         fmt::format("foreign key violation in table {}", violations.column_text(0)), __FILE__,
                         __LINE__);
    }
    if (found < known) {
      // Pragmas that write the header are part of the transaction: version and data commit together.
      db.exec(fmt::format("PRAGMA application_id = {}", k_application_id));
      db.exec(fmt::format("PRAGMA user_version = {}", known));
    }
    transaction.commit();
  }
  // A newer cm-tune may have migrated past us concurrently.
  check_identity(db, known, true);
}

fs::path default_database_path() {
  const auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  if (const std::string db = env("CMTUNE_DB"); !db.empty()) return db;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (const std::string cache = env("XDG_CACHE_HOME"); !cache.empty() && fs::path(cache).is_absolute())
    return fs::path(cache) / "cm-tune" / "cm-tune.db";
  if (const std::string home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "cm-tune" / "cm-tune.db";
  throw UsageError("cannot choose a database file: set CMTUNE_DB (or HOME) or pass --db");
}

// ---------------------------------------------------------------------------------------------
// Store

Store::Store(const fs::path& file, OpenMode mode, OlderSchema older) : m_db(file, mode) {
  const int latest = latest_schema_version();
  if (mode == OpenMode::read) {
    const DatabaseIdentity id = check_identity(m_db, latest, false);
    if (id.version < latest && older == OlderSchema::refuse)
      throw DatabaseError(fmt::format("database {} has schema version {}, older than this cm-tune's {}, and a command "
                                      "that only reads does not migrate it; run cm-tune db migrate --db {} once",
                                      file.string(), id.version, latest, file.string()),
                          0);
    return;
  }
  // Processes opening a new file at the same moment race to set it up, and SQLite answers some of
  // the losers SQLITE_BUSY without waiting (switching to WAL reads the file, then wants to write
  // it). Every step below may be repeated, so the whole setup is.
  bool checked_pages = false;
  m_db.retry_while_busy([&] {
    // Check before anything writes: switching to WAL would already modify a foreign file.
    const DatabaseIdentity id = check_identity(m_db, latest, mode == OpenMode::create);
    // A write into a damaged file can spread the damage (a page written over another, the free
    // list corrupted), and its own commit may succeed: once per open for writing, it is checked
    // first. A new file has no pages to check.
    if (!checked_pages && id.objects > 0) {
      refuse_if_damaged(m_db);
      checked_pages = true;
    }
    m_db.exec("PRAGMA foreign_keys = ON");
    // WAL lets export and report read while a tune writes; NORMAL sync is durable across process
    // crashes in WAL mode and keeps one-commit-per-trial cheap.
    m_db.exec("PRAGMA journal_mode = WAL");
    m_db.exec("PRAGMA synchronous = NORMAL");
    migrate(m_db, builtin_migrations());
  });
}

int Store::schema_version() { return static_cast<int>(pragma_int(m_db, "user_version")); }

std::optional<BinaryRecord> Store::find_binary(const std::string& key) {
  Statement s = m_db.prepare(fmt::format("SELECT {} FROM binaries WHERE key = ?", k_binary_columns));
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  BinaryRecord binary = read_binary(s);
  if (::cmt::cubin_dropped(binary)) return std::nullopt;
  try {
    binary.cubin = unpack_cubin(binary.cubin);
  } catch (const CubinCodecError& e) {
    throw DatabaseError(fmt::format("database {}: the cubin of {}[{}] (binary {}) is damaged: {}; cm-tune db check "
                                    "lists every damaged cubin",
                                    file().string(), binary.template_name, binary.params, key, e.what()),
                        0);
  }
  return binary;
}

bool Store::cubin_dropped(const std::string& key) {
  Statement s = m_db.prepare("SELECT ok, length(cubin), log FROM binaries WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return false;
  BinaryRecord b;
  b.ok = s.column_int(0) != 0;
  if (s.column_int(1) > 0) return false;
  b.log = s.column_text(2);
  return ::cmt::cubin_dropped(b);
}

Store::UnusedCubins Store::unused_cubins(bool drop) {
  // Compile failures have no cubin, and keep their row: the next tune would fail the same way.
  constexpr std::string_view k_unused =
      "ok = 1 AND length(cubin) > 0 AND key NOT IN (SELECT binary_key FROM winners)";
  std::optional<WriteScope> scope;   // counted and dropped in one transaction: no winner comes between
  if (drop) scope.emplace(m_db);
  Statement count = m_db.prepare(
      fmt::format("SELECT count(*), coalesce(sum(length(cubin)), 0) FROM binaries WHERE {}", k_unused));
  count.step();
  const UnusedCubins unused{count.column_int(0), count.column_int(1)};
  if (drop) {
    Statement update = m_db.prepare(fmt::format("UPDATE binaries SET cubin = X'', log = ? || log WHERE {}", k_unused));
    update.bind(1, std::string(k_dropped_cubin_log));
    update.run();
    scope->commit();
  }
  return unused;
}

void Store::put_binary(const BinaryRecord& binary) {
  Statement s = m_db.prepare(fmt::format("INSERT OR REPLACE INTO binaries ({}, created_at) VALUES ({}, ?)",
                                         k_binary_columns, placeholders(k_binary_columns)));
  Binder b(s);
  b(binary.key)(binary.template_name)(binary.params)(binary.arch)(binary.nvrtc_version)(binary.options);
  b(binary.source_hash).boolean(binary.ok)(binary.log)(pack_cubin(binary.cubin))(binary.lowered_name);
  b(binary.registers)(binary.spill_stores)(binary.spill_loads)(binary.compile_seconds).boolean(binary.batched);
  b.boolean(binary.takes_batch_count)(utc_now());
  s.run();
}

std::map<std::string, std::string> Store::binary_sources() {
  Statement s = m_db.prepare("SELECT key, source_hash FROM binaries");
  std::map<std::string, std::string> out;
  while (s.step()) out.emplace(s.column_text(0), s.column_text(1));
  return out;
}

std::map<std::string, double> Store::compile_seconds() {
  Statement s = m_db.prepare("SELECT key, compile_seconds FROM binaries");
  std::map<std::string, double> out;
  while (s.step()) out.emplace(s.column_text(0), s.column_double(1));
  return out;
}

int64_t Store::count_binaries() {
  Statement s = m_db.prepare("SELECT count(*) FROM binaries");
  s.step();
  return s.column_int(0);
}

void Store::put_source(const SourceRecord& source) {
  WriteScope scope(m_db);
  Statement insert = m_db.prepare(
      "INSERT OR IGNORE INTO sources (hash, template_name, main_name, main_text) VALUES (?, ?, ?, ?)");
  Binder{insert}(source.hash)(source.template_name)(source.main_name)(source.main_text);
  insert.run();
  // The hash names the content, so a stored bundle is already complete: keep it as it is.
  if (m_db.changes() == 0) return;
  Statement header =
      m_db.prepare("INSERT INTO source_headers (source_hash, position, name, text) VALUES (?, ?, ?, ?)");
  for (size_t i = 0; i < source.headers.size(); ++i) {
    header.reset();
    Binder{header}(source.hash)(static_cast<int64_t>(i))(source.headers[i].first)(source.headers[i].second);
    header.run();
  }
  scope.commit();
}

std::optional<SourceRecord> Store::find_source(const std::string& hash) {
  Statement s = m_db.prepare("SELECT hash, template_name, main_name, main_text FROM sources WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  Reader r(s);
  SourceRecord source;
  source.hash = r.text();
  source.template_name = r.text();
  source.main_name = r.text();
  source.main_text = r.text();
  Statement headers = m_db.prepare("SELECT name, text FROM source_headers WHERE source_hash = ? ORDER BY position");
  headers.bind(1, hash);
  while (headers.step()) source.headers.emplace_back(headers.column_text(0), headers.column_text(1));
  return source;
}

bool Store::matches_its_hash(const SourceRecord& source) {
  return source_bundle_hash(SourceBundle{source.main_name, source.main_text, source.headers}) == source.hash;
}

std::vector<SourceRecord> Store::mismatched_sources() {
  std::vector<std::string> hashes;
  Statement s = m_db.prepare("SELECT hash FROM sources ORDER BY hash");
  while (s.step()) hashes.push_back(s.column_text(0));
  std::vector<SourceRecord> out;
  for (const std::string& hash : hashes)
    if (auto source = find_source(hash); source && !matches_its_hash(*source)) out.push_back(std::move(*source));
  return out;
}

int64_t Store::upsert_device(const DeviceRecord& device) {
  WriteScope scope(m_db);
  const std::string now = utc_now();
  // first_seen is only written by the INSERT; an existing row keeps its own.
  Statement upsert = m_db.prepare(fmt::format(
      "INSERT INTO devices ({}) VALUES ({}) ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, "
      "cc_major = excluded.cc_major, cc_minor = excluded.cc_minor, sm_count = excluded.sm_count, "
      "clock_khz = excluded.clock_khz, memory_clock_khz = excluded.memory_clock_khz, "
      "memory_bus_bits = excluded.memory_bus_bits, memory_bytes = excluded.memory_bytes, "
      "l2_bytes = excluded.l2_bytes, driver_version = excluded.driver_version, "
      "runtime_version = excluded.runtime_version, nvrtc_version = excluded.nvrtc_version, "
      "last_seen = excluded.last_seen",
      k_device_columns, placeholders(k_device_columns)));
  Binder b(upsert);
  b(device.uuid)(device.name)(device.cc_major)(device.cc_minor)(device.sm_count)(device.clock_khz);
  b(device.memory_clock_khz)(device.memory_bus_bits)(device.memory_bytes)(device.l2_bytes);
  b(device.driver_version)(device.runtime_version)(device.nvrtc_version)(now)(now);
  upsert.run();
  // last_insert_rowid is not set by the UPDATE branch, so look the id up by uuid.
  Statement id = m_db.prepare("SELECT id FROM devices WHERE uuid = ?");
  id.bind(1, device.uuid);
  if (!id.step())
    throw InfraError("SQLite", "SELECT id FROM devices WHERE uuid = ?", "device vanished after upsert", __FILE__,
                     __LINE__);
  const int64_t device_id = id.column_int(0);
  scope.commit();
  return device_id;
}

std::vector<DeviceRecord> Store::devices() {
  Statement s = m_db.prepare(fmt::format("SELECT id, {} FROM devices ORDER BY id", k_device_columns));
  std::vector<DeviceRecord> out;
  while (s.step()) out.push_back(read_device(s));
  return out;
}

std::optional<DeviceRecord> Store::find_device(int64_t id) {
  Statement s = m_db.prepare(fmt::format("SELECT id, {} FROM devices WHERE id = ?", k_device_columns));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_device(s);
}

int64_t Store::begin_run(const RunRecord& run) {
  Statement s = m_db.prepare(
      fmt::format("INSERT INTO runs ({}) VALUES ({})", k_run_columns, placeholders(k_run_columns)));
  Binder b(s);
  b(run.command_line)(run.preset_path)(run.preset_hash)(run.device_id)(utc_now());
  s.bind_null(6);   // ended_at: still running
  s.bind(7, "running");
  s.run();
  return m_db.last_insert_rowid();
}

void Store::end_run(int64_t run_id, const std::string& status) {
  Statement s = m_db.prepare("UPDATE runs SET ended_at = ?, status = ? WHERE id = ?");
  Binder{s}(utc_now())(status)(run_id);
  s.run();
  if (m_db.changes() == 0)
    throw InfraError("SQLite", "UPDATE runs SET ended_at", fmt::format("no run with id {}", run_id), __FILE__,
                     __LINE__);
}

std::optional<RunRecord> Store::find_run(int64_t run_id) {
  Statement s = m_db.prepare(fmt::format("SELECT id, {} FROM runs WHERE id = ?", k_run_columns));
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::optional<TrialRecord> Store::find_trial(const std::string& trial_key) {
  Statement s = m_db.prepare(fmt::format("SELECT id, {} FROM trials WHERE trial_key = ?", k_trial_columns));
  s.bind(1, trial_key);
  if (!s.step()) return std::nullopt;
  return read_trial(s);
}

std::optional<TrialRecord> Store::find_trial(int64_t id) {
  Statement s = m_db.prepare(fmt::format("SELECT id, {} FROM trials WHERE id = ?", k_trial_columns));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_trial(s);
}

namespace {
/// "trial_key = ?, run_id = ?, ...": the SET list of an UPDATE of every trial column.
std::string trial_assignments() {
  std::string out;
  for (std::string_view rest = k_trial_columns; !rest.empty();) {
    const size_t comma = rest.find(',');
    std::string_view column = rest.substr(0, comma);
    while (!column.empty() && column.front() == ' ') column.remove_prefix(1);
    out += fmt::format("{}{} = ?", out.empty() ? "" : ", ", column);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return out;
}

/// An abandoned or skipped measurement says only that the kernel was slower than one run's bar.
bool says_only_slower(const TrialRecord& t) { return t.outcome == Outcome::abandoned || t.outcome == Outcome::skipped; }
}  // namespace

TrialRecord Store::insert_trial(const TrialRecord& trial) {
  WriteScope scope(m_db);
  TrialRecord stored_as = trial;
  const std::optional<TrialRecord> existing = find_trial(trial.trial_key);
  if (!existing) {
    Statement insert = m_db.prepare(
        fmt::format("INSERT INTO trials ({}) VALUES ({})", k_trial_columns, placeholders(k_trial_columns)));
    bind_trial(insert, trial, trial.created_at.empty() ? utc_now() : trial.created_at);
    insert.run();
    stored_as.id = m_db.last_insert_rowid();
  } else if (passed(*existing) && says_only_slower(trial)) {
    stored_as = *existing;   // the stored time is the better-informed measurement
  } else {
    // In place: the id stays, so the winners and re-times that name it (another process's too)
    // stay valid. A measurement that does not pass drops the winners chosen from the old one.
    static const std::string update = fmt::format("UPDATE trials SET {} WHERE id = ?", trial_assignments());
    Statement s = m_db.prepare(update);
    bind_trial(s, trial, trial.created_at.empty() ? utc_now() : trial.created_at);
    s.bind(static_cast<int>(std::count(k_trial_columns.begin(), k_trial_columns.end(), ',')) + 2, existing->id);
    s.run();
    stored_as.id = existing->id;
    if (!passed(trial)) {
      Statement drop = m_db.prepare("DELETE FROM winners WHERE trial_id = ?");
      drop.bind(1, existing->id);
      drop.run();
    }
  }
  scope.commit();
  return stored_as;
}

void Store::set_retime(int64_t trial_id, double retime_median_ms, std::optional<double> ratio_to_cublas) {
  Statement s = m_db.prepare("UPDATE trials SET retime_median_ms = ?, ratio_to_cublas = ? WHERE id = ?");
  Binder{s}(retime_median_ms)(ratio_to_cublas)(trial_id);
  s.run();
  if (m_db.changes() == 0)
    throw InfraError("SQLite", "UPDATE trials SET retime_median_ms", fmt::format("no trial with id {}", trial_id),
                     __FILE__, __LINE__);
}

std::vector<TrialRecord> Store::trials(int64_t device_id, const std::optional<Problem>& problem) {
  std::string sql = fmt::format("SELECT id, {} FROM trials WHERE device_id = ?", k_trial_columns);
  if (problem) sql += fmt::format(" AND {}", k_problem_match);
  sql += " ORDER BY id";
  Statement s = m_db.prepare(sql);
  Binder b(s);
  b(device_id);
  if (problem) b.problem(*problem);
  std::vector<TrialRecord> out;
  while (s.step()) out.push_back(read_trial(s));
  return out;
}

std::vector<Problem> Store::tuned_problems(int64_t device_id) {
  Statement s = m_db.prepare(fmt::format("SELECT DISTINCT {0} FROM trials WHERE device_id = ? ORDER BY {0}",
                                         k_problem_columns));
  s.bind(1, device_id);
  std::vector<Problem> out;
  while (s.step()) out.push_back(Reader(s).problem());
  return out;
}

void Store::put_baseline(const BaselineRecord& baseline) {
  // REPLACE is safe here: nothing references a baseline row.
  Statement s = m_db.prepare(fmt::format("INSERT OR REPLACE INTO baselines ({}) VALUES ({})", k_baseline_columns,
                                         placeholders(k_baseline_columns)));
  Binder b(s);
  b(baseline.device_id).problem(baseline.problem);
  b(baseline.lda)(baseline.ldb)(baseline.ldc)(baseline.median_ms)(baseline.min_ms)(baseline.cv);
  b(baseline.samples)(baseline.gflops)(baseline.run_id);
  b(baseline.created_at.empty() ? utc_now() : baseline.created_at);
  s.run();
}

std::optional<BaselineRecord> Store::find_baseline(int64_t device_id, const Problem& problem) {
  Statement s = m_db.prepare(fmt::format(
      "SELECT {} FROM baselines WHERE device_id = ? AND {}", k_baseline_columns, k_problem_match));
  Binder{s}(device_id).problem(problem);
  if (!s.step()) return std::nullopt;
  return read_baseline(s);
}

std::vector<BaselineRecord> Store::baselines() {
  Statement s = m_db.prepare(
      fmt::format("SELECT {} FROM baselines ORDER BY device_id, {}", k_baseline_columns, k_problem_columns));
  std::vector<BaselineRecord> out;
  while (s.step()) out.push_back(read_baseline(s));
  return out;
}

void Store::put_winner(const WinnerRecord& winner) {
  // REPLACE is safe here: nothing references a winner row.
  Statement s = m_db.prepare(fmt::format("INSERT OR REPLACE INTO winners ({}) VALUES ({})", k_winner_columns,
                                         placeholders(k_winner_columns)));
  Binder b(s);
  b(winner.device_id).problem(winner.problem)(winner.scope)(winner.trial_id);
  b(winner.template_name)(winner.params)(winner.name_expression)(winner.median_ms)(winner.gflops);
  b(winner.ratio_to_cublas).requirements(winner.requirements).shape(winner.shape)(winner.binary_key);
  s.run();
}

void Store::clear_winners(int64_t device_id, const Problem& problem) {
  Statement s = m_db.prepare(fmt::format("DELETE FROM winners WHERE device_id = ? AND {}", k_problem_match));
  Binder{s}(device_id).problem(problem);
  s.run();
}

void Store::replace_winners(int64_t device_id, const Problem& problem, const std::vector<WinnerRecord>& winners) {
  WriteScope scope(m_db);
  clear_winners(device_id, problem);
  for (const auto& w : winners) put_winner(w);
  scope.commit();
}

std::vector<WinnerRecord> Store::winners(const std::optional<int64_t>& device_id,
                                         const std::optional<Problem>& problem) {
  std::string sql = fmt::format("SELECT {} FROM winners WHERE 1", k_winner_columns);
  if (device_id) sql += " AND device_id = ?";
  if (problem) sql += fmt::format(" AND {}", k_problem_match);
  sql += fmt::format(" ORDER BY device_id, {}, scope", k_problem_columns);
  Statement s = m_db.prepare(sql);
  Binder b(s);
  if (device_id) b(*device_id);
  if (problem) b.problem(*problem);
  std::vector<WinnerRecord> out;
  while (s.step()) out.push_back(read_winner(s));
  return out;
}

namespace {
/// The layout, batch, strides and element type of a problem that has any, so that databases from
/// before they existed (row-major NN, batch 1, f32) keep their hashes.
void hash_problem_extras(Hasher& h, const Problem& p) {
  if (p.trans_a || p.trans_b || p.batch != 1 || p.dtype != DType::f32) h.field("problem").field(p.to_string());
}
}  // namespace

std::string Store::content_hash() {
  // Rows are identified by content (device uuid, problem, scope), never by row ids or
  // timestamps, so two databases holding the same results hash the same. Each section starts
  // with a tag; every field is length-delimited by Hasher, so boundaries are unambiguous.
  Hasher h;
  h.field("cm-tune content v1");

  h.field("devices");
  Statement devices = m_db.prepare(fmt::format("SELECT id, {} FROM devices ORDER BY uuid", k_device_columns));
  while (devices.step()) {
    const DeviceRecord d = read_device(devices);
    h.field("device").field(d.uuid).field(d.name).field(int64_t{d.cc_major}).field(int64_t{d.cc_minor});
    h.field(int64_t{d.sm_count}).field(int64_t{d.clock_khz}).field(int64_t{d.memory_clock_khz});
    h.field(int64_t{d.memory_bus_bits}).field(d.memory_bytes).field(d.l2_bytes);
    h.field(int64_t{d.driver_version}).field(int64_t{d.runtime_version}).field(d.nvrtc_version);
  }

  h.field("winners");
  // Winner columns qualified with "w." (devices has columns of the same names).
  std::string winner_columns = "w.";
  for (const char c : k_winner_columns) winner_columns += c == ' ' ? std::string(" w.") : std::string(1, c);
  Statement winners = m_db.prepare(fmt::format(
      "SELECT d.uuid, {} FROM winners w JOIN devices d ON d.id = w.device_id ORDER BY d.uuid, w.m, w.n, w.k, w.layout, "
      "w.batch, w.stride_a, w.stride_b, w.stride_c, w.dtype, w.scope",
      winner_columns));
  while (winners.step()) {
    const std::string uuid = winners.column_text(0);
    const WinnerRecord w = read_winner(winners, 1);
    h.field("winner").field(uuid).field(w.problem.m).field(w.problem.n).field(w.problem.k);
    hash_problem_extras(h, w.problem);
    h.field(w.scope);
    h.field(w.template_name).field(w.params).field(w.name_expression);
    hash_real(h, w.median_ms);
    hash_real(h, w.gflops);
    hash_real(h, w.ratio_to_cublas);
    h.field(w.requirements.align_bytes).field(w.requirements.ld_multiple);
    h.field(w.shape.threads).field(w.shape.tile_m).field(w.shape.tile_n).field(w.shape.dynamic_smem);
    h.field(w.shape.grid_z).field(w.binary_key);
    // Only where a kernel computes several problems per block, so that older databases keep their hashes.
    if (w.shape.problems_per_block != 1) h.field("problems_per_block").field(w.shape.problems_per_block);
    if (w.shape.tensor_maps != 0) h.field("tensor_maps").field(w.shape.tensor_maps);
  }

  h.field("baselines");
  Statement baselines = m_db.prepare(
      "SELECT d.uuid, b.m, b.n, b.k, b.layout, b.batch, b.stride_a, b.stride_b, b.stride_c, b.dtype, b.lda, b.ldb, "
      "b.ldc, b.median_ms, b.min_ms, b.cv, b.samples, b.gflops FROM baselines b JOIN devices d ON d.id = b.device_id "
      "ORDER BY d.uuid, b.m, b.n, b.k, b.layout, b.batch, b.stride_a, b.stride_b, b.stride_c, b.dtype");
  while (baselines.step()) {
    Reader r(baselines);
    h.field("baseline").field(r.text());
    const Problem p = r.problem();
    h.field(p.m).field(p.n).field(p.k);
    hash_problem_extras(h, p);
    for (int i = 0; i < 3; ++i) h.field(r.integer());   // lda, ldb, ldc
    hash_real(h, r.real());                             // median_ms
    hash_real(h, r.real());                             // min_ms
    hash_real(h, r.real());                             // cv
    h.field(r.integer());                               // samples
    hash_real(h, r.real());                             // gflops
  }
  return h.hex();
}

}  // namespace cmt
