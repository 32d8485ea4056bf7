// Looking after a database: its checks, a summary of what it holds, and freeing the space of
// cubins no winner uses (`cm-tune db check | info | vacuum`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace cmt {

/// One check of check_database: its name, whether it passed, and one line of detail.
struct CheckResult {
  std::string name;
  bool ok = true;
  std::string detail;
};

/// Every check, in this order: "integrity" (PRAGMA integrity_check), "schema" (the version against
/// this binary's latest), "orphans" (rows naming a missing row: PRAGMA foreign_key_check),
/// "winners" (each names a passing trial of its own device and problem, of the same kernel),
/// "winner binaries" (each winner's binary is compiled, its cubin kept, its source stored), "cubins"
/// (each stored cubin decompresses; rows stored uncompressed by an earlier cm-tune are counted) and
/// "sources" (each source bundle still hashes to its hash). Only reads.
std::vector<CheckResult> check_database(Store& store);
/// check_database of the file, opened to read (an older schema accepted). A file too damaged to
/// open fails "integrity" with what SQLite finds, and every other check as not checked; other
/// DatabaseErrors (missing, empty, not a database) are thrown.
std::vector<CheckResult> check_database(const std::filesystem::path& file);

/// What a database holds, for `db info`.
struct DatabaseInfo {
  struct Device {
    DeviceRecord record;
    int64_t problems = 0;       // distinct problems with trials
    int64_t trials = 0;
    int64_t winners = 0;
  };
  int64_t file_bytes = 0;       // the database file and its -wal file
  int schema_version = 0;
  std::vector<Device> devices;
  int64_t problems = 0;         // distinct (device, problem) pairs with trials
  std::map<std::string, int64_t> trials_by_outcome;
  int64_t trials = 0;
  int64_t winners = 0;
  int64_t runs = 0;
  int64_t cubins = 0;           // compiled binaries with their cubin
  int64_t cubin_bytes = 0;       // as stored (compressed)
  int64_t cubin_raw_bytes = 0;   // decompressed: the cubins themselves
  int64_t failed_compiles = 0;  // cached compile failures
  int64_t dropped_cubins = 0;   // binaries whose cubin `db vacuum` dropped
  int64_t sources = 0;
};

DatabaseInfo database_info(Store& store);

/// The database file and its -wal file, in bytes (0 for ":memory:").
int64_t database_bytes(const Store& store);

/// What vacuum_database did, or with dry_run would do.
struct VacuumResult {
  int64_t cubins = 0;           // cubins no winner uses: dropped
  int64_t cubin_bytes = 0;
  int64_t kept = 0;             // cubins winners use: kept
  int64_t bytes_before = 0;     // database_bytes before and after
  int64_t bytes_after = 0;
};

/// Drops the cubins that no winner uses (Store::unused_cubins; a later tune that needs one compiles
/// it again), then rebuilds the file (VACUUM) to give the space back. Nothing else is dropped:
/// trials, runs, sources and compile failures stay. With dry_run only counts (the store may then be
/// read-only). DatabaseError while another process has the database open: a tune could be about to
/// use a cubin.
VacuumResult vacuum_database(Store& store, bool dry_run);

}  // namespace cmt
