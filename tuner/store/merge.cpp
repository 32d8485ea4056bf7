#include "store/merge.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <set>
#include <sqlite3.h>
#include <sys/stat.h>
#include <system_error>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/files.hpp"
#include "store/sqlite.hpp"

namespace fs = std::filesystem;

namespace cmt {

namespace {

// Rows are copied column by column as SQLite stores them (Statement::bind_column), with the columns
// read from the schema: a column a later migration adds is merged without a change here. Inputs and
// OUT have the same schema version, so the same columns.

/// A table's columns, in their order.
std::vector<std::string> columns_of(Database& db, std::string_view table) {
  Statement s = db.prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid");
  s.bind(1, table);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.column_text(0));
  if (out.empty())
    throw InfraError("SQLite", "pragma_table_info", fmt::format("no table {}", table), __FILE__, __LINE__);
  return out;
}

std::vector<std::string> columns_without(std::vector<std::string> columns,
                                         std::initializer_list<std::string_view> drop) {
  columns.erase(
      std::remove_if(columns.begin(), columns.end(),
                     [&](const std::string& c) { return std::find(drop.begin(), drop.end(), c) != drop.end(); }),
      columns.end());
  return columns;
}

size_t column_index(const std::vector<std::string>& columns, std::string_view name) {
  return static_cast<size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
}

/// "a, b, c", each with `prefix` ("r.").
std::string column_list(const std::vector<std::string>& columns, std::string_view prefix = "") {
  std::string out;
  for (const auto& c : columns) out += fmt::format("{}{}{}", out.empty() ? "" : ", ", prefix, c);
  return out;
}

std::string value_slots(size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += i ? ", ?" : "?";
  return out;
}

/// An expression of a row's values as one text, quote(a) || '|' || quote(b) ...: two rows hold the
/// same values exactly when their texts are equal (quote spells a REAL exactly and quotes a text),
/// and the texts order rows the same way in every database.
std::string content_of(const std::vector<std::string>& columns, std::string_view prefix = "") {
  std::string out;
  for (const auto& c : columns) out += fmt::format("{}quote({}{})", out.empty() ? "" : " || '|' || ", prefix, c);
  return out;
}

/// The columns that key a problem, in store.cpp's order, and a WHERE clause matching them (names of
/// their own: a unity build compiles this file with store.cpp).
constexpr std::string_view k_merge_problem_columns = "m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype";
constexpr int k_merge_problem_column_count = 9;
constexpr std::string_view k_merge_problem_match =
    "m = ? AND n = ? AND k = ? AND layout = ? AND batch = ? AND stride_a = ? AND stride_b = ? AND stride_c = ? AND "
    "dtype = ?";

/// The problem in the k_merge_problem_columns of `s` from column `first`.
Problem problem_at(const Statement& s, int first) {
  Problem p;
  p.m = s.column_int(first);
  p.n = s.column_int(first + 1);
  p.k = s.column_int(first + 2);
  const auto ops = parse_layout(s.column_text(first + 3));
  const auto dtype = parse_dtype(s.column_text(first + 8));
  if (!ops || !dtype)
    throw InfraError(
        "SQLite", "reading a problem",
        fmt::format("unknown layout '{}' or element type '{}'", s.column_text(first + 3), s.column_text(first + 8)),
        __FILE__, __LINE__);
  std::tie(p.trans_a, p.trans_b) = *ops;
  p.batch = s.column_int(first + 4);
  p.stride_a = s.column_int(first + 5);
  p.stride_b = s.column_int(first + 6);
  p.stride_c = s.column_int(first + 7);
  p.dtype = *dtype;
  return p;
}

/// One file's identity: the same device and inode is the same file, whatever path names it.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
};

std::optional<FileIdentity> identity_of(const fs::path& file) {
  struct stat st{};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

/// Refuses inputs that do not exist, the same file twice, and OUT as an input or a side file of one.
void refuse_bad_files(const fs::path& out, const std::vector<fs::path>& inputs) {
  std::vector<FileIdentity> ids;
  for (const fs::path& in : inputs) {
    struct stat st{};
    if (::stat(in.c_str(), &st) != 0) {
      if (errno == ENOENT) throw UsageError(fmt::format("merge input {} does not exist", in.string()));
      throw UsageError(fmt::format("cannot read merge input {}: {}", in.string(), std::strerror(errno)));
    }
    ids.push_back({st.st_dev, st.st_ino});
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = i + 1; j < inputs.size(); ++j)
      if (ids[i] == ids[j])
        throw UsageError(inputs[i] == inputs[j]
                             ? fmt::format("merge input {} is given twice; give each database once", inputs[i].string())
                             : fmt::format("merge inputs {} and {} are the same file; give each database once",
                                           inputs[i].string(), inputs[j].string()));
  const auto out_id = identity_of(out);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (out_id && *out_id == ids[i])
      throw UsageError(
          fmt::format("the output {} is also given as an input{}; an existing OUT is merged into as an "
                      "input already, and no input is ever written",
                      out.string(), out == inputs[i] ? "" : fmt::format(" ({})", inputs[i].string())));
    if (const auto kind = database_file_kind(out, inputs[i]); kind && kind->side_file)
      throw UsageError(fmt::format("the output {} is {}; name another output file", out.string(), kind->what));
  }
}

/// Opens an input to read. An input whose -wal file holds commits is read with them, and left so:
/// the connection does not fold the -wal into the file when it closes, as a reader otherwise would.
std::unique_ptr<Store> open_input(const fs::path& file) {
  std::error_code ec;
  const bool had_wal = fs::exists(file.string() + "-wal", ec);
  auto store = std::make_unique<Store>(file, OpenMode::read, OlderSchema::accept);
  if (had_wal) sqlite3_db_config(store->db().handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  const int version = store->schema_version();
  if (version < latest_schema_version())
    throw UsageError(
        fmt::format("merge input {} has schema version {}, older than this cm-tune's {}; merge never "
                    "migrates an input: copy it, run cm-tune db migrate --db COPY and merge the copy",
                    file.string(), version, latest_schema_version()));
  // A source whose text no longer matches its hash would give OUT trials of a kernel it cannot show.
  if (const auto damaged = store->mismatched_sources(); !damaged.empty())
    throw UsageError(fmt::format("merge input {} is damaged: the source {} (template {}) does not match its hash; "
                                 "cm-tune db check --db {} lists what else",
                                 file.string(), damaged.front().hash.substr(0, 16), damaged.front().template_name,
                                 file.string()));
  return store;
}

/// OUT's schema version, or nullopt while it holds nothing yet: a new file, or one that another
/// merge (or tune) is setting up this moment, which the Store then waits for.
std::optional<int> existing_schema_version(const fs::path& out) {
  Database db(out, OpenMode::read);
  const DatabaseIdentity id = read_identity(db);
  if (id.empty()) return std::nullopt;
  return static_cast<int>(id.version);
}

/// An input being merged: its store, what it brought, and its row ids mapped to OUT's.
struct Input {
  std::unique_ptr<Store> store;
  MergedInput report;
  int64_t merge_input_id = 0;          // its merge_inputs row in OUT
  int64_t changes = 0;                 // rows it added to OUT or changed there
  std::map<int64_t, int64_t> devices;  // its device ids -> OUT's
  std::map<int64_t, int64_t> runs;     // its run ids -> OUT's
  Database& db() { return store->db(); }
  /// OUT's id of the input's device or run `id`, which a row of `table` names. A row naming one the
  /// input does not hold (an orphan, which db check reports) is refused: it has no place in OUT.
  int64_t device(int64_t id, std::string_view table) const { return mapped(devices, id, "device", table); }
  int64_t run(int64_t id, std::string_view table) const { return mapped(runs, id, "run", table); }

 private:
  int64_t mapped(const std::map<int64_t, int64_t>& ids, int64_t id, std::string_view what,
                 std::string_view table) const {
    if (const auto found = ids.find(id); found != ids.end()) return found->second;
    throw UsageError(
        fmt::format("merge input {}: a row of {} names {} {}, which it does not hold; cm-tune db check "
                    "--db {} lists such rows",
                    report.path, table, what, id, report.path));
  }
};

class Merger {
 public:
  Merger(Store& out, std::vector<Input>& inputs, MergeResult& result) : m_db(out.db()), m_result(result) {
    for (Input& in : inputs) m_order.push_back(&in);
    // By content, not by the command line: the result does not depend on the arguments' order.
    std::stable_sort(m_order.begin(), m_order.end(),
                     [](const Input* a, const Input* b) { return a->report.content_hash < b->report.content_hash; });
  }

  /// Copies every input's rows (inside the caller's transaction); the problems whose trials or
  /// baseline changed, for their winners to be chosen again.
  std::set<std::pair<int64_t, Problem>> run() {
    record_inputs();
    devices();
    sources();
    binaries();
    runs();
    trials();
    baselines();
    forget_inputs_that_added_nothing();
    return m_touched;
  }

 private:
  void record_inputs() {
    Statement insert = m_db.prepare(
        "INSERT INTO merge_inputs (path, absolute_path, content_hash, merged_at) "
        "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))");
    for (Input* in : m_order) {
      insert.bind(1, in->report.path).bind(2, in->report.absolute_path).bind(3, in->report.content_hash);
      insert.run();
      in->merge_input_id = m_db.last_insert_rowid();
    }
  }

  void forget_inputs_that_added_nothing() {
    Statement remove = m_db.prepare("DELETE FROM merge_inputs WHERE id = ?");
    Statement before =
        m_db.prepare("SELECT merged_at, path FROM merge_inputs WHERE content_hash = ? ORDER BY id LIMIT 1");
    for (Input* in : m_order) {
      if (in->changes > 0) continue;
      remove.bind(1, in->merge_input_id).run();
      in->report.nothing_new = true;
      before.bind(1, in->report.content_hash);
      if (before.step()) {
        in->report.merged_before_at = before.column_text(0);
        in->report.merged_before_path = before.column_text(1);
      }
      before.reset();
    }
  }

  /// Devices by uuid: the description seen last wins (then the greater content), first_seen is the
  /// earliest.
  void devices() {
    const auto all = columns_without(columns_of(m_db, "devices"), {"id"});
    const auto content = columns_without(all, {"first_seen"});
    const auto updated = columns_without(all, {"first_seen"});
    // 0 id, 1 uuid, 2 last_seen, 3 first_seen, 4 content, 5... all
    const std::string select = fmt::format("SELECT id, uuid, last_seen, first_seen, {}, {} FROM devices ORDER BY id",
                                           content_of(content), column_list(all));
    constexpr int k_values = 5;
    Statement find = m_db.prepare(
        fmt::format("SELECT id, last_seen, first_seen, {} FROM devices WHERE uuid = ?", content_of(content)));
    Statement insert =
        m_db.prepare(fmt::format("INSERT INTO devices ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    std::string sets;
    for (const auto& c : updated) sets += fmt::format("{}{} = ?", sets.empty() ? "" : ", ", c);
    Statement update = m_db.prepare(fmt::format("UPDATE devices SET {} WHERE id = ?", sets));
    Statement first_seen = m_db.prepare("UPDATE devices SET first_seen = ? WHERE id = ?");
    for (Input* in : m_order) {
      Statement rows = in->db().prepare(select);
      while (rows.step()) {
        find.bind(1, rows.column_text(1));
        if (!find.step()) {
          find.reset();
          for (size_t j = 0; j < all.size(); ++j)
            insert.bind_column(static_cast<int>(j + 1), rows, k_values + static_cast<int>(j));
          insert.run();
          in->devices[rows.column_int(0)] = m_db.last_insert_rowid();
          ++m_result.devices_added;
          ++in->changes;
          continue;
        }
        const int64_t id = find.column_int(0);
        const auto ours = std::make_pair(find.column_text(1), find.column_text(3));
        const std::string our_first_seen = find.column_text(2);
        find.reset();
        in->devices[rows.column_int(0)] = id;
        const auto theirs = std::make_pair(rows.column_text(2), rows.column_text(4));
        if (theirs.second != ours.second && theirs > ours) {
          int index = 1;
          for (const auto& c : updated)
            update.bind_column(index++, rows, k_values + static_cast<int>(column_index(all, c)));
          update.bind(index, id).run();
          ++in->changes;
        }
        if (rows.column_text(3) < our_first_seen) {
          first_seen.bind(1, rows.column_text(3)).bind(2, id).run();
          ++in->changes;
        }
      }
    }
  }

  /// Sources by hash, each with its headers (the hash names the whole bundle).
  void sources() {
    const auto all = columns_of(m_db, "sources");
    const auto headers = columns_of(m_db, "source_headers");
    Statement insert = m_db.prepare(
        fmt::format("INSERT OR IGNORE INTO sources ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    Statement insert_header = m_db.prepare(
        fmt::format("INSERT INTO source_headers ({}) VALUES ({})", column_list(headers), value_slots(headers.size())));
    for (Input* in : m_order) {
      Statement rows = in->db().prepare(fmt::format("SELECT hash, {} FROM sources ORDER BY hash", column_list(all)));
      Statement header_rows = in->db().prepare(
          fmt::format("SELECT {} FROM source_headers WHERE source_hash = ? ORDER BY position", column_list(headers)));
      while (rows.step()) {
        for (size_t j = 0; j < all.size(); ++j)
          insert.bind_column(static_cast<int>(j + 1), rows, static_cast<int>(j + 1));
        insert.run();
        if (m_db.changes() == 0) continue;  // stored already, with its headers
        ++m_result.sources_added;
        ++in->changes;
        header_rows.bind(1, rows.column_text(0));
        while (header_rows.step()) {
          for (size_t j = 0; j < headers.size(); ++j)
            insert_header.bind_column(static_cast<int>(j + 1), header_rows, static_cast<int>(j));
          insert_header.run();
        }
        header_rows.reset();
      }
    }
  }

  /// Binaries by key: one copy each, a copy with its cubin over one without (a cubin db vacuum
  /// dropped, or a compile failure).
  void binaries() {
    const auto all = columns_of(m_db, "binaries");
    constexpr std::string_view k_has_cubin = "ok = 1 AND length(cubin) > 0";
    Statement find = m_db.prepare(fmt::format("SELECT {} FROM binaries WHERE key = ?", k_has_cubin));
    Statement insert = m_db.prepare(
        fmt::format("INSERT OR REPLACE INTO binaries ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    for (Input* in : m_order) {
      Statement rows =
          in->db().prepare(fmt::format("SELECT key, {}, {} FROM binaries ORDER BY key", k_has_cubin, column_list(all)));
      while (rows.step()) {
        find.bind(1, rows.column_text(0));
        const bool stored = find.step();
        const bool stored_has_cubin = stored && find.column_int(0) != 0;
        find.reset();
        if (stored && (stored_has_cubin || rows.column_int(1) == 0)) continue;
        for (size_t j = 0; j < all.size(); ++j)
          insert.bind_column(static_cast<int>(j + 1), rows, static_cast<int>(j + 2));
        insert.run();
        ++(stored ? m_result.binaries_restored : m_result.binaries_added);
        ++in->changes;
      }
    }
  }

  /// Runs by their content (device uuid, command line, preset, times, status): one already in OUT is
  /// the same run; any other is copied, naming its input.
  void runs() {
    const auto all = columns_without(columns_of(m_db, "runs"), {"id"});
    const auto content = columns_without(all, {"device_id", "merge_input_id"});
    // 0 id, 1 device uuid, 2 content, 3 device_id, 4... all
    const std::string select = fmt::format(
        "SELECT r.id, coalesce(d.uuid, ''), {}, r.device_id, {} FROM runs r LEFT JOIN devices d ON d.id = r.device_id "
        "ORDER BY r.id",
        content_of(content, "r."), column_list(all, "r."));
    constexpr int k_values = 4;
    std::map<std::string, int64_t> known;
    {
      Statement s = m_db.prepare(select);
      while (s.step()) known.emplace(s.column_text(1) + "\n" + s.column_text(2), s.column_int(0));
    }
    Statement insert =
        m_db.prepare(fmt::format("INSERT INTO runs ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    for (Input* in : m_order) {
      Statement rows = in->db().prepare(select);
      while (rows.step()) {
        const std::string key = rows.column_text(1) + "\n" + rows.column_text(2);
        if (const auto found = known.find(key); found != known.end()) {
          in->runs[rows.column_int(0)] = found->second;
          continue;
        }
        for (size_t j = 0; j < all.size(); ++j) {
          const int index = static_cast<int>(j + 1);
          if (all[j] == "device_id" && !rows.is_null(3))
            insert.bind(index, in->device(rows.column_int(3), "runs"));
          else if (all[j] == "merge_input_id")
            insert.bind(index, in->merge_input_id);
          else
            insert.bind_column(index, rows, k_values + static_cast<int>(j));
        }
        insert.run();
        const int64_t id = m_db.last_insert_rowid();
        in->runs[rows.column_int(0)] = id;
        known.emplace(key, id);
        ++in->report.runs;
        ++m_result.runs_added;
        ++in->changes;
      }
    }
  }

  /// Trials by trial_key, taken from all inputs in the order they were created (each input's in its
  /// own order), so ranking ties still go to the trial recorded first.
  void trials() {
    const auto all = columns_without(columns_of(m_db, "trials"), {"id"});
    const auto content = columns_without(all, {"run_id", "device_id"});
    const size_t run_column = column_index(all, "run_id"), device_column = column_index(all, "device_id");
    // 0 trial_key, 1 created_at, 2 re-timed, 3 content, 4... the problem, then all
    const std::string select =
        fmt::format("SELECT trial_key, created_at, retime_median_ms IS NOT NULL, {}, {}, {} FROM trials ORDER BY id",
                    content_of(content), k_merge_problem_columns, column_list(all));
    constexpr int k_problem = 4, k_values = k_problem + k_merge_problem_column_count;
    Statement find = m_db.prepare(
        fmt::format("SELECT id, created_at, retime_median_ms IS NOT NULL, {} FROM trials WHERE trial_key = ?",
                    content_of(content)));
    Statement remove = m_db.prepare("DELETE FROM trials WHERE id = ?");
    Statement insert =
        m_db.prepare(fmt::format("INSERT INTO trials ({}) VALUES ({})", column_list(all), value_slots(all.size())));

    struct Cursor {
      Input* input;
      Statement rows;
      bool live;
    };
    std::vector<Cursor> cursors;
    cursors.reserve(m_order.size());
    for (Input* in : m_order) {
      Statement rows = in->db().prepare(select);
      const bool live = rows.step();
      cursors.push_back({in, std::move(rows), live});
    }
    while (true) {
      // The earliest next trial; equal times go to the input first in content order.
      Cursor* next = nullptr;
      for (Cursor& c : cursors)
        if (c.live && (!next || c.rows.column_text(1) < next->rows.column_text(1))) next = &c;
      if (!next) break;
      Input& in = *next->input;
      const Statement& row = next->rows;
      const int64_t device = in.device(row.column_int(k_values + static_cast<int>(device_column)), "trials");
      const auto add = [&] {
        for (size_t j = 0; j < all.size(); ++j) {
          const int index = static_cast<int>(j + 1);
          if (j == run_column)
            insert.bind(index, in.run(row.column_int(k_values + static_cast<int>(j)), "trials"));
          else if (j == device_column)
            insert.bind(index, device);
          else
            insert.bind_column(index, row, k_values + static_cast<int>(j));
        }
        insert.run();
        m_touched.emplace(device, problem_at(row, k_problem));
        ++in.changes;
      };
      find.bind(1, row.column_text(0));
      if (!find.step()) {
        find.reset();
        add();
        ++in.report.trials_added;
      } else {
        // One measurement per key: the one created last, then a re-timed one, then the greater content.
        const auto ours = std::make_tuple(find.column_text(1), find.column_int(2), find.column_text(3));
        const int64_t our_id = find.column_int(0);
        find.reset();
        const auto theirs = std::make_tuple(row.column_text(1), row.column_int(2), row.column_text(3));
        if (std::get<2>(theirs) == std::get<2>(ours)) {
          ++in.report.trials_duplicate;
        } else if (theirs > ours) {
          remove.bind(1, our_id).run();  // its winners go with it (ON DELETE CASCADE); chosen again below
          add();
          ++in.report.trials_replaced;
        } else {
          ++in.report.trials_superseded;
        }
      }
      next->live = next->rows.step();
    }
    for (Input* in : m_order) {
      m_result.trials_added += in->report.trials_added;
      m_result.trials_duplicate += in->report.trials_duplicate;
      m_result.trials_replaced += in->report.trials_replaced;
      m_result.trials_superseded += in->report.trials_superseded;
    }
  }

  /// Baselines by device and problem: every measurement of every input (its baselines and its
  /// superseded_baselines) is kept once; the one created last (then the greater content) in
  /// baselines, the others in superseded_baselines.
  void baselines() {
    const auto all = columns_of(m_db, "baselines");
    const auto content = columns_without(all, {"device_id", "run_id"});
    const size_t run_column = column_index(all, "run_id"), device_column = column_index(all, "device_id");
    // 0 device_id, 1 created_at, 2 content, 3... the problem, then all
    constexpr int k_problem = 3, k_values = k_problem + k_merge_problem_column_count;
    Statement kept = m_db.prepare(fmt::format("SELECT rowid, created_at, {} FROM baselines WHERE device_id = ? AND {}",
                                              content_of(content), k_merge_problem_match));
    Statement superseded = m_db.prepare(
        fmt::format("SELECT count(*) FROM superseded_baselines WHERE device_id = ? AND {} = ?", content_of(content)));
    Statement remove = m_db.prepare("DELETE FROM baselines WHERE rowid = ?");
    Statement move = m_db.prepare(fmt::format(
        "INSERT INTO superseded_baselines ({0}) SELECT {0} FROM baselines WHERE rowid = ?", column_list(all)));
    Statement insert_kept =
        m_db.prepare(fmt::format("INSERT INTO baselines ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    Statement insert_superseded = m_db.prepare(
        fmt::format("INSERT INTO superseded_baselines ({}) VALUES ({})", column_list(all), value_slots(all.size())));
    const auto is_superseded = [&](int64_t device, const std::string& text) {
      superseded.bind(1, device).bind(2, text);
      superseded.step();
      const bool found = superseded.column_int(0) > 0;
      superseded.reset();
      return found;
    };
    for (Input* in : m_order)
      for (const char* table : {"baselines", "superseded_baselines"}) {
        Statement rows =
            in->db().prepare(fmt::format("SELECT device_id, created_at, {}, {}, {} FROM {} ORDER BY rowid",
                                         content_of(content), k_merge_problem_columns, column_list(all), table));
        while (rows.step()) {
          const int64_t device = in->device(rows.column_int(0), table);
          const auto copy = [&](Statement& insert) {
            for (size_t j = 0; j < all.size(); ++j) {
              const int index = static_cast<int>(j + 1);
              if (j == run_column)
                insert.bind(index, in->run(rows.column_int(k_values + static_cast<int>(j)), table));
              else if (j == device_column)
                insert.bind(index, device);
              else
                insert.bind_column(index, rows, k_values + static_cast<int>(j));
            }
            insert.run();
            ++in->changes;
          };
          kept.bind(1, device);
          for (int j = 0; j < k_merge_problem_column_count; ++j) kept.bind_column(2 + j, rows, k_problem + j);
          const auto theirs = std::make_pair(rows.column_text(1), rows.column_text(2));
          if (!kept.step()) {
            kept.reset();
            copy(insert_kept);
            ++m_result.baselines_added;
            m_touched.emplace(device, problem_at(rows, k_problem));
            continue;
          }
          const int64_t rowid = kept.column_int(0);
          const auto ours = std::make_pair(kept.column_text(1), kept.column_text(2));
          kept.reset();
          if (theirs.second == ours.second) continue;  // the same measurement
          if (theirs > ours) {
            if (!is_superseded(device, ours.second)) {
              move.bind(1, rowid).run();
              ++m_result.baselines_superseded;
            }
            remove.bind(1, rowid).run();
            copy(insert_kept);
            ++m_result.baselines_replaced;
            m_touched.emplace(device, problem_at(rows, k_problem));
          } else if (!is_superseded(device, theirs.second)) {
            copy(insert_superseded);
            ++m_result.baselines_superseded;
          }
        }
      }
  }

  Database& m_db;
  MergeResult& m_result;
  std::vector<Input*> m_order;                      // the inputs in the order they are merged
  std::set<std::pair<int64_t, Problem>> m_touched;  // (OUT's device id, problem) whose winners to choose
};

/// Removes a database file that a failed merge created, with SQLite's side files.
void remove_created(const fs::path& out) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(out.string() + suffix, ec);
}

}  // namespace

MergeResult merge_databases(const fs::path& out, const std::vector<fs::path>& inputs,
                            const ChooseWinners& choose_winners) {
  if (inputs.empty()) throw UsageError("db merge needs at least one input database");
  refuse_bad_files(out, inputs);
  std::vector<Input> opened(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Input& in = opened[i];
    in.store = open_input(inputs[i]);
    in.report.path = inputs[i].string();
    in.report.absolute_path = fs::absolute(inputs[i]).lexically_normal().string();
    in.report.content_hash = in.store->content_hash();
  }
  // An empty file (mktemp's) is set up as a new database would be; only what holds something is
  // merged into, and only a file merge created is removed when it fails.
  std::error_code ec;
  const bool exists = identity_of(out).has_value();
  const bool empty = exists && fs::is_regular_file(out, ec) && fs::file_size(out, ec) == 0 && !ec;
  std::optional<int> version;
  if (exists && !empty) {
    version = existing_schema_version(out);
    if (version && *version < latest_schema_version())
      throw UsageError(
          fmt::format("the output {} has schema version {}, older than this cm-tune's {}; merge migrates "
                      "nothing: run cm-tune db migrate --db {} first",
                      out.string(), *version, latest_schema_version(), out.string()));
  }

  MergeResult result;
  result.out = out;
  result.created = !exists || empty;
  bool opened_out = false;
  try {
    Store store(out, version ? OpenMode::write : OpenMode::create);
    opened_out = true;
    {
      Transaction transaction(store.db());
      Merger merger(store, opened, result);
      const auto touched = merger.run();
      for (const auto& [device, problem] : touched) choose_winners(store, device, problem);
      result.winners_recomputed = static_cast<int64_t>(touched.size());
      result.changed =
          result.created || std::any_of(opened.begin(), opened.end(), [](const Input& in) { return in.changes > 0; });
      // Nothing new: roll back, so that OUT is not even rewritten.
      if (result.changed) transaction.commit();
    }
    Statement devices = store.db().prepare("SELECT count(*) FROM devices");
    devices.step();
    result.devices = devices.column_int(0);
    result.content_hash = store.content_hash();
  } catch (...) {
    if (!exists && opened_out) remove_created(out);
    throw;
  }
  for (const Input& in : opened) result.inputs.push_back(in.report);
  return result;
}

}  // namespace cmt
