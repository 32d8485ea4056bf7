#include "store/maintenance.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <optional>
#include <system_error>

#include "core/error.hpp"
#include "store/cubin_codec.hpp"
#include "store/lock_holder.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

constexpr size_t k_problems_in_detail = 3;   // a failed check names this many of its problems

int64_t query_count(Database& db, std::string_view sql) {
  Statement s = db.prepare(sql);
  return s.step() ? s.column_int(0) : 0;
}

/// The check's result: passed with ok_detail when problems is empty, else failed naming the first few.
CheckResult verdict(std::string name, const std::vector<std::string>& problems, std::string ok_detail) {
  if (problems.empty()) return {std::move(name), true, std::move(ok_detail)};
  std::string detail;
  for (size_t i = 0; i < problems.size() && i < k_problems_in_detail; ++i) detail += (i ? "; " : "") + problems[i];
  if (problems.size() > k_problems_in_detail) detail += fmt::format("; and {} more", problems.size() - k_problems_in_detail);
  return {std::move(name), false, std::move(detail)};
}

CheckResult check_integrity(Database& db) {
  constexpr int k_limit = 100;   // SQLite's own default
  return verdict("integrity", integrity_problems(db, false, k_limit), "ok");
}

CheckResult check_schema(Store& store) {
  const int version = store.schema_version();
  const int latest = latest_schema_version();
  if (version < latest)
    return {"schema", false,
            fmt::format("version {}, older than this cm-tune's {}; run cm-tune db migrate", version, latest)};
  return {"schema", true, fmt::format("version {}, the latest this cm-tune knows", version)};
}

CheckResult check_orphans(Database& db) {
  // Rows whose foreign key names a missing row: trials of a missing run or device, winners of a
  // missing trial, headers of a missing source, ...
  Statement s = db.prepare("SELECT \"table\", parent, count(*) FROM pragma_foreign_key_check GROUP BY 1, 2 ORDER BY 1, 2");
  std::vector<std::string> problems;
  while (s.step()) {
    const int64_t rows = s.column_int(2);
    problems.push_back(fmt::format("{} row{} of {} name{} a missing row of {}", rows, rows == 1 ? "" : "s",
                                   s.column_text(0), rows == 1 ? "s" : "", s.column_text(1)));
  }
  return verdict("orphans", problems, "every row names existing rows");
}

CheckResult check_winners(Database& db) {
  Statement s = db.prepare(
      "SELECT w.scope, w.m, w.n, w.k, w.device_id, w.trial_id, w.template_name, t.id, t.outcome, "
      "t.median_ms IS NOT NULL, t.device_id = w.device_id AND t.m = w.m AND t.n = w.n AND t.k = w.k, "
      "t.template_name = w.template_name AND t.params = w.params AND t.name_expression = w.name_expression "
      "AND t.binary_key = w.binary_key, t.template_name, t.params "
      "FROM winners w LEFT JOIN trials t ON t.id = w.trial_id ORDER BY w.device_id, w.m, w.n, w.k, w.scope");
  std::vector<std::string> problems;
  int64_t winners = 0;
  while (s.step()) {
    ++winners;
    const std::string scope = s.column_text(0);
    const std::string winner = fmt::format("winner {} of {}x{}x{} on device {}", scope, s.column_int(1),
                                           s.column_int(2), s.column_int(3), s.column_int(4));
    const int64_t trial = s.column_int(5);
    const std::string template_name = s.column_text(6);
    if (scope.rfind("template:", 0) == 0 && scope.substr(9) != template_name)
      problems.push_back(fmt::format("{} is of template {}", winner, template_name));
    if (s.is_null(7))
      problems.push_back(fmt::format("{} names trial {}, which does not exist", winner, trial));
    else if (s.column_text(8) != "ok" || s.column_int(9) == 0)
      problems.push_back(fmt::format("{} names trial {}, which did not pass ({})", winner, trial, s.column_text(8)));
    else if (s.column_int(10) == 0)
      problems.push_back(fmt::format("{} names trial {}, of another device or problem", winner, trial));
    else if (s.column_int(11) == 0)
      problems.push_back(fmt::format("{} names trial {}, of another kernel ({}[{}])", winner, trial, s.column_text(12),
                                     s.column_text(13)));
  }
  return verdict("winners", problems,
                 winners == 1 ? "1 winner names a passing trial of its problem"
                              : fmt::format("{} winners name a passing trial of their problem", winners));
}

CheckResult check_winner_binaries(Store& store) {
  Database& db = store.db();
  Statement s = db.prepare(
      "SELECT w.binary_key, min(w.template_name), min(w.params), count(*), b.key IS NOT NULL, b.ok, b.source_hash, "
      "(SELECT count(*) FROM sources WHERE hash = b.source_hash) "
      "FROM winners w LEFT JOIN binaries b ON b.key = w.binary_key GROUP BY w.binary_key ORDER BY 2, 3");
  std::vector<std::string> problems;
  int64_t binaries = 0;
  while (s.step()) {
    ++binaries;
    const std::string key = s.column_text(0);
    const int64_t winners = s.column_int(3);
    const std::string binary = fmt::format("the binary of {}[{}] ({} winner{})", s.column_text(1), s.column_text(2),
                                           winners, winners == 1 ? "" : "s");
    if (s.column_int(4) == 0)
      problems.push_back(fmt::format("{} is not in the compile cache (key {})", binary, key));
    else if (s.column_int(5) == 0)
      problems.push_back(fmt::format("{} is a compile failure", binary));
    else if (store.cubin_dropped(key))
      problems.push_back(fmt::format("{} has no cubin (dropped)", binary));
    else if (s.column_int(7) == 0)
      problems.push_back(fmt::format("{}: its source {} is not in the database", binary, s.column_text(6)));
  }
  return verdict("winner binaries", problems,
                 binaries == 1 ? "the 1 binary of winners is compiled, with its cubin and source"
                               : fmt::format("the {} binaries of winners are compiled, with their cubins and sources",
                                             binaries));
}

CheckResult check_cubins(Database& db) {
  // Every stored cubin, not only the winners': a tune would stop at a damaged one it reuses.
  Statement s = db.prepare(
      "SELECT key, template_name, params, cubin FROM binaries WHERE ok = 1 AND length(cubin) > 0 "
      "ORDER BY template_name, params");
  std::vector<std::string> problems;
  int64_t packed = 0, plain = 0;
  while (s.step()) {
    const std::vector<char> stored = s.column_blob(3);
    if (!is_packed_cubin({stored.data(), stored.size()})) {
      ++plain;   // written before cubins were compressed: read as it is
      continue;
    }
    ++packed;
    try {
      unpack_cubin(stored);
    } catch (const CubinCodecError& e) {
      problems.push_back(
          fmt::format("the cubin of {}[{}] (binary {}) is damaged: {}", s.column_text(1), s.column_text(2), s.column_text(0), e.what()));
    }
  }
  return verdict("cubins", problems,
                 fmt::format("{} read back ({} compressed, {} stored uncompressed by an earlier cm-tune)",
                             packed + plain == 1 ? "1 cubin" : fmt::format("{} cubins", packed + plain), packed, plain));
}

CheckResult check_sources(Store& store) {
  const int64_t sources = query_count(store.db(), "SELECT count(*) FROM sources");
  std::vector<std::string> problems;
  // export refuses such a source too: it would paste a text other than the one measured.
  for (const SourceRecord& source : store.mismatched_sources())
    problems.push_back(fmt::format("source {} (template {}) does not match its hash", source.hash, source.template_name));
  return verdict("sources", problems,
                 sources == 1 ? "1 source bundle matches its hash"
                              : fmt::format("{} source bundles match their hashes", sources));
}

}  // namespace

namespace {

/// The checks of db check, in the order they run and print.
std::vector<std::pair<std::string, std::function<CheckResult()>>> database_checks(Store* store) {
  return {
      {"integrity", [=] { return check_integrity(store->db()); }},
      {"schema", [=] { return check_schema(*store); }},
      {"orphans", [=] { return check_orphans(store->db()); }},
      {"winners", [=] { return check_winners(store->db()); }},
      {"winner binaries", [=] { return check_winner_binaries(*store); }},
      {"cubins", [=] { return check_cubins(store->db()); }},
      {"sources", [=] { return check_sources(*store); }},
  };
}

}  // namespace

std::vector<CheckResult> check_database(Store& store) {
  std::vector<CheckResult> out;
  for (const auto& [name, check] : database_checks(&store)) {
    // A damaged file can fail a check's query itself: that check fails, the others still run.
    try {
      out.push_back(check());
    } catch (const InfraError& e) {
      out.push_back({name, false, fmt::format("SQLite: {}", e.library_message())});
    } catch (const DamagedDatabaseError& e) {
      out.push_back({name, false, e.what_is_wrong()});
    }
  }
  return out;
}

std::vector<CheckResult> check_database(const fs::path& file) {
  std::optional<DamagedDatabaseError> damage;
  try {
    // An older schema is what the schema check reports, not a reason to refuse.
    Store store(file, OpenMode::read, OlderSchema::accept);
    return check_database(store);
  } catch (const DamagedDatabaseError& e) {
    damage = e;
  }
  // Too damaged to open as a cm-tune database (the schema or the header cannot be read): the
  // integrity check says what SQLite finds, the others cannot run.
  Database db(file, OpenMode::read);
  CheckResult integrity;
  try {
    integrity = check_integrity(db);
  } catch (const DamagedDatabaseError& e) {   // the pragma itself cannot be prepared
    integrity = {"integrity", false, e.what_is_wrong()};
  }
  if (integrity.ok) integrity = {"integrity", false, damage->what_is_wrong()};
  std::vector<CheckResult> out{integrity};
  for (const auto& [name, check] : database_checks(nullptr))
    if (name != integrity.name)
      out.push_back(
          {name, false, fmt::format("not checked: the database cannot be opened ({})", damage->what_is_wrong())});
  return out;
}

int64_t database_bytes(const Store& store) {
  std::error_code ec;
  int64_t bytes = 0;
  for (const fs::path& file : {store.file(), fs::path(store.file().string() + "-wal")}) {
    const auto size = fs::file_size(file, ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  return bytes;
}

DatabaseInfo database_info(Store& store) {
  Database& db = store.db();
  DatabaseInfo info;
  info.file_bytes = database_bytes(store);
  info.schema_version = store.schema_version();
  for (DeviceRecord& d : store.devices()) {
    DatabaseInfo::Device device;
    Statement s = db.prepare(
        "SELECT (SELECT count(*) FROM (SELECT DISTINCT m, n, k FROM trials WHERE device_id = ?1)), "
        "(SELECT count(*) FROM trials WHERE device_id = ?1), (SELECT count(*) FROM winners WHERE device_id = ?1)");
    s.bind(1, d.id);
    s.step();
    device.problems = s.column_int(0);
    device.trials = s.column_int(1);
    device.winners = s.column_int(2);
    device.record = std::move(d);
    info.devices.push_back(std::move(device));
  }
  info.problems = query_count(db, "SELECT count(*) FROM (SELECT DISTINCT device_id, m, n, k FROM trials)");
  Statement outcomes = db.prepare("SELECT outcome, count(*) FROM trials GROUP BY outcome ORDER BY outcome");
  while (outcomes.step()) {
    info.trials_by_outcome[outcomes.column_text(0)] = outcomes.column_int(1);
    info.trials += outcomes.column_int(1);
  }
  info.winners = query_count(db, "SELECT count(*) FROM winners");
  info.runs = query_count(db, "SELECT count(*) FROM runs");
  Statement binaries = db.prepare(
      "SELECT coalesce(sum(ok = 1 AND length(cubin) > 0), 0), coalesce(sum(length(cubin)), 0), "
      "coalesce(sum(ok = 0), 0), coalesce(sum(ok = 1 AND length(cubin) = 0), 0) FROM binaries");
  binaries.step();
  info.cubins = binaries.column_int(0);
  info.cubin_bytes = binaries.column_int(1);
  info.failed_compiles = binaries.column_int(2);
  info.dropped_cubins = binaries.column_int(3);
  // A zstd frame states its size in its first bytes (ZSTD_FRAMEHEADERSIZE_MAX is 18).
  Statement sizes = db.prepare("SELECT substr(cubin, 1, 18), length(cubin) FROM binaries WHERE ok = 1 AND length(cubin) > 0");
  while (sizes.step()) {
    const std::vector<char> prefix = sizes.column_blob(0);
    const int64_t stored = sizes.column_int(1);
    const int64_t raw = unpacked_cubin_size({prefix.data(), prefix.size()}, stored);
    info.cubin_raw_bytes += raw < 0 ? stored : raw;   // damaged: db check names it
  }
  info.sources = query_count(db, "SELECT count(*) FROM sources");
  return info;
}

VacuumResult vacuum_database(Store& store, bool dry_run) {
  if (!dry_run) {
    // A tune that has the database open may be about to re-time a kernel whose cubin this drops.
    const std::vector<int> others = processes_using(store.file());
    if (!others.empty())
      throw DatabaseError(fmt::format("database {} is open in {}{}; run cm-tune db vacuum when {} finished",
                                      store.file().string(), describe_process(others.front()),
                                      others.size() > 1 ? fmt::format(" and {} more", others.size() - 1) : "",
                                      others.size() > 1 ? "they have" : "it has"),
                          0);
  }
  VacuumResult r;
  r.bytes_before = database_bytes(store);
  r.kept = query_count(store.db(),
                 "SELECT count(*) FROM binaries WHERE ok = 1 AND length(cubin) > 0 AND key IN (SELECT binary_key FROM winners)");
  const Store::UnusedCubins unused = store.unused_cubins(!dry_run);
  r.cubins = unused.count;
  r.cubin_bytes = unused.bytes;
  r.bytes_after = r.bytes_before;
  if (dry_run) return r;
  store.db().exec("VACUUM");
  // In WAL mode VACUUM writes the rebuilt file into the -wal; the checkpoint copies it back and
  // truncates the -wal, so the space is given back now rather than at the next checkpoint.
  store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  r.bytes_after = database_bytes(store);
  return r;
}

}  // namespace cmt
