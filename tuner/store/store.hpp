// The cm-tune database: schema migrations and typed access to every table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/records.hpp"
#include "store/sqlite.hpp"

namespace cmt {

/// One migration script, db/migrations/NNNN_name.sql, embedded at build time.
struct Migration {
  int version;
  std::string name;
  std::string sql;
};

/// PRAGMA application_id of every cm-tune database: 'CMTU'.
constexpr int32_t k_application_id = 0x434D5455;

/// What identifies a cm-tune database: its application_id, schema version and object count.
struct DatabaseIdentity {
  int64_t application_id = 0;
  int64_t version = 0;
  int64_t objects = 0;   // tables, indexes, ...
  /// A file with nothing in it yet: new, or being set up by another process this moment.
  bool empty() const { return application_id == 0 && version == 0 && objects == 0; }
};
/// The identity, read in one statement, so in one snapshot: another process may be creating the
/// schema meanwhile, and separate reads could see its tables without its application_id.
DatabaseIdentity read_identity(Database& db);

/// All migrations compiled into this binary, ascending by version.
const std::vector<Migration>& builtin_migrations();
/// Highest schema version this binary knows.
int latest_schema_version();
/// Applies the missing migrations in order and sets PRAGMA user_version, all in one transaction, so
/// a process killed half-way leaves the database as it found it.
/// Throws UsageError when the database is newer than this binary or is not a cm-tune database.
void migrate(Database& db, const std::vector<Migration>& migrations);

/// What PRAGMA integrity_check (with quick, quick_check) finds wrong, one line each and at most
/// `limit`; empty for a sound file. Where SQLite stops at damage it cannot read past before it
/// names a problem, its error is the line ("SQLite: database disk image is malformed").
std::vector<std::string> integrity_problems(Database& db, bool quick, int limit);

/// What a Store opened to read does with a schema older than this binary's: refuse it (the typed
/// calls expect the latest schema, and a read never migrates), or accept it (`db check` reports it).
enum class OlderSchema { refuse, accept };

/// The default database path: $CMTUNE_DB, else ${XDG_CACHE_HOME:-$HOME/.cache}/cm-tune/cm-tune.db.
std::filesystem::path default_database_path();

class Store {
 public:
  /// Opens the file as `mode` says (DatabaseError for a file that cannot be used so). create and
  /// write refuse a damaged file (PRAGMA quick_check, DamagedDatabaseError) before they write,
  /// enable WAL and foreign keys and migrate to the latest schema; only create sets up an empty
  /// file. read writes nothing, and refuses an empty file and, unless `older` accepts it, a schema
  /// older than this binary's; damage it meets is a DamagedDatabaseError too.
  explicit Store(const std::filesystem::path& file, OpenMode mode = OpenMode::create,
                 OlderSchema older = OlderSchema::refuse);

  /// The SQLite layer underneath, for tests, migrations and the checks of store/maintenance.hpp;
  /// the tool's code uses the typed calls.
  Database& db() { return m_db; }
  const std::filesystem::path& file() const { return m_db.file(); }
  int schema_version();

  // Compile cache. A binary whose cubin `db vacuum` dropped keeps its row (export maps trials to
  // their source bundles through it) but is no longer found: the next compile replaces it. Cubins
  // are stored as zstd frames (store/cubin_codec.hpp); the records hold them decompressed.
  /// The binary, its cubin decompressed (or read as it is from a row written before compression).
  /// DatabaseError, naming the binary, when its stored cubin does not decompress.
  std::optional<BinaryRecord> find_binary(const std::string& key);
  /// Whether `db vacuum` dropped the cubin of binary `key` (false for a key not stored). Reads only
  /// the columns of every schema version, so `db check` can ask it of an older database.
  bool cubin_dropped(const std::string& key);
  void put_binary(const BinaryRecord& binary);          // insert or replace; the cubin compressed
  int64_t count_binaries();
  /// Every cached binary's source bundle hash, by binary key (no cubins read).
  std::map<std::string, std::string> binary_sources();
  /// Every cached binary's compile time in seconds, by binary key (no cubins read).
  std::map<std::string, double> compile_seconds();
  /// The cubins of compiled binaries that no winner uses: how many and their bytes. With drop,
  /// they are dropped (their rows stay: see find_binary); trials are never touched.
  struct UnusedCubins {
    int64_t count = 0;
    int64_t bytes = 0;
  };
  UnusedCubins unused_cubins(bool drop);
  /// Template sources by bundle hash; put_source ignores a hash already stored.
  void put_source(const SourceRecord& source);
  std::optional<SourceRecord> find_source(const std::string& hash);
  /// Whether a stored source still hashes to the hash it is stored under (a file edited outside
  /// cm-tune may not, while SQLite still finds it sound).
  static bool matches_its_hash(const SourceRecord& source);
  /// Every stored source that no longer matches its hash, by hash.
  std::vector<SourceRecord> mismatched_sources();

  // Devices: insert by uuid or update the other columns; returns the id.
  int64_t upsert_device(const DeviceRecord& device);
  std::vector<DeviceRecord> devices();
  std::optional<DeviceRecord> find_device(int64_t id);

  // Runs.
  int64_t begin_run(const RunRecord& run);              // started_at set now, status "running"
  void end_run(int64_t run_id, const std::string& status);
  std::optional<RunRecord> find_run(int64_t run_id);

  // Trials.
  std::optional<TrialRecord> find_trial(const std::string& trial_key);
  std::optional<TrialRecord> find_trial(int64_t id);
  /// Records a measurement and returns the row as stored. A new trial_key gets a new id. A stored
  /// key is updated in place and keeps its id, so that what names it (winners, another process's
  /// re-time) stays valid; a replacement that does not pass drops the winners that named it. A
  /// stored passing measurement is kept over an abandoned or skipped one, which says only that
  /// the kernel was slower than one run's bar.
  TrialRecord insert_trial(const TrialRecord& trial);
  /// Records a trial's interleaved re-timing; ratio_to_cublas is NULL for a problem without a cuBLAS
  /// baseline (i32).
  void set_retime(int64_t trial_id, double retime_median_ms, std::optional<double> ratio_to_cublas);
  /// Trials of a device, optionally of one problem, ordered by id.
  std::vector<TrialRecord> trials(int64_t device_id, const std::optional<Problem>& problem = std::nullopt);
  std::vector<Problem> tuned_problems(int64_t device_id);

  // Baselines (one per device x problem; replaced).
  void put_baseline(const BaselineRecord& baseline);
  std::optional<BaselineRecord> find_baseline(int64_t device_id, const Problem& problem);
  /// Every baseline, ordered by device and problem.
  std::vector<BaselineRecord> baselines();

  // Winners (one per device x problem x scope; replaced).
  void put_winner(const WinnerRecord& winner);
  void clear_winners(int64_t device_id, const Problem& problem);
  /// clear_winners, then put_winner for each, in one transaction.
  void replace_winners(int64_t device_id, const Problem& problem, const std::vector<WinnerRecord>& winners);
  std::vector<WinnerRecord> winners(const std::optional<int64_t>& device_id = std::nullopt,
                                    const std::optional<Problem>& problem = std::nullopt);

  /// Hash of the content that export reads (devices, winners, baselines), for provenance.
  std::string content_hash();

 private:
  Database m_db;
};

}  // namespace cmt
