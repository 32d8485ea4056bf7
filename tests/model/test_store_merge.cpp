// Merging databases (store/merge.hpp, `cm-tune db merge`): identical, overlapping and disjoint
// inputs, a database merged with itself and with a copy of itself, inputs of two devices, another
// schema, inputs that must stay unchanged, idempotence, the order of the arguments, and where each
// merged row came from; and the migration that adds the provenance tables. Real SQLite files built
// through the Store API as a tune fills them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "core/source_bundle.hpp"
#include "migration_check.hpp"
#include "record/problem_state.hpp"
#include "store/merge.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::merge_tests {
namespace {

int64_t count(Database& db, const std::string& sql) {
  Statement s = db.prepare(sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_int(0);
}

const Problem k_p1 = Problem::make(256, 256, 256);
const Problem k_p2 = Problem::make(512, 512, 512);
const Problem k_p3 = Problem::make(1024, 512, 64, false, true);

/// A database as a tune leaves it, built through the Store API: one device, one run per tune(), the
/// kernels' source and binaries, a trial per kernel and problem, the best trial re-timed, a cuBLAS
/// baseline per problem, and the winners the one ranking chooses.
class Tuned {
 public:
  Tuned(const fs::path& file, const std::string& uuid) : m_store(file), m_uuid(uuid) {
    DeviceRecord d;
    d.uuid = uuid;
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    d.sm_count = 132;
    d.nvrtc_version = "13.0";
    m_device = m_store.upsert_device(d);
    const SourceBundle bundle{"k.cuh", "template <int V> __global__ void cmt_sgemm_k() {}\n",
                              {{"common.cuh", "// common\n"}}};
    m_source = source_bundle_hash(bundle);
    m_store.put_source(SourceRecord{m_source, "k", bundle.main_name, bundle.main_text, bundle.headers});
  }

  /// A run (command line `label`, its rows created at `at`) measuring kernels V=1..4 on each
  /// problem, their times scaled by `scale`, against a cuBLAS baseline of `baseline_ms`.
  void tune(const std::string& label, const std::string& at, const std::vector<Problem>& problems, double scale = 1.0,
            double baseline_ms = 1.0) {
    RunRecord run;
    run.command_line = "cm-tune tune " + label;
    run.device_id = m_device;
    const int64_t run_id = m_store.begin_run(run);
    for (const Problem& p : problems) {
      BaselineRecord b;
      b.device_id = m_device;
      b.problem = p;
      b.lda = p.k, b.ldb = b.ldc = p.n;
      b.median_ms = b.min_ms = baseline_ms;
      b.samples = 10;
      b.gflops = p.flops() / baseline_ms / 1e6;
      b.run_id = run_id;
      b.created_at = at;
      m_store.put_baseline(b);
      for (int v = 1; v <= 4; ++v) m_store.insert_trial(trial(run_id, p, v, scale, at));
      ProblemState state(m_store, m_device, p);
      const auto ranked = state.trials();
      const TrialRecord* best = nullptr;
      for (const TrialRecord& t : ranked)
        if (!best || *t.median_ms < *best->median_ms) best = &t;
      state.record_retime(m_store, best->id, *best->median_ms * 1.01, baseline_ms / (*best->median_ms * 1.01));
      state.store_winners(m_store);
    }
    m_store.end_run(run_id, "done");
  }

  Store& store() { return m_store; }
  int64_t device() const { return m_device; }

 private:
  TrialRecord trial(int64_t run_id, const Problem& p, int v, double scale, const std::string& at) {
    const std::string params = fmt::format("V={}", v);
    BinaryRecord b;
    b.key = hash_hex("binary-k-" + params);
    b.template_name = "k";
    b.params = params;
    b.arch = "sm_90";
    b.nvrtc_version = "13.0";
    b.source_hash = m_source;
    b.ok = true;
    b.cubin = {'\x7f', 'E', 'L', 'F', static_cast<char>(v)};
    b.lowered_name = "_Z1k";
    m_store.put_binary(b);
    TrialRecord t;
    t.trial_key = fmt::format("{}/{}/{}", m_uuid, b.key, p.to_string());
    t.run_id = run_id;
    t.device_id = m_device;
    t.template_name = "k";
    t.params = params;
    t.name_expression = fmt::format("cmt_sgemm_k<{}>", v);
    t.binary_key = b.key;
    t.problem = p;
    t.lda = p.k, t.ldb = t.ldc = p.n;
    t.outcome = Outcome::ok;
    // Distinct times per kernel and problem; even kernels need aligned inputs (not portable).
    t.median_ms = scale * (1.0 + static_cast<double>((v * 7919 + p.m * 31 + p.n * 17 + p.k) % 97) / 100.0);
    t.min_ms = *t.median_ms * 0.99;
    t.samples = 10;
    t.gflops = p.flops() / *t.median_ms / 1e6;
    t.registers = 64;
    t.shape = {128, 64, 64, 0};
    t.requirements = v % 2 == 0 ? Requirements{16, 4} : Requirements{};
    t.created_at = at;
    return t;
  }

  Store m_store;
  std::string m_uuid;
  int64_t m_device = 0;
  std::string m_source;
};

MergeResult merge(const fs::path& out, const std::vector<fs::path>& inputs) {
  return merge_databases(out, inputs, [](Store& store, int64_t device_id, const Problem& problem) {
    ProblemState(store, device_id, problem).store_winners(store);
  });
}

std::string content_hash(const fs::path& file) { return Store(file, OpenMode::read).content_hash(); }

/// Every trial by content: device, key, times, creation; sorted.
std::set<std::string> trial_rows(const fs::path& file) {
  Store store(file, OpenMode::read);
  Statement s = store.db().prepare(
      "SELECT d.uuid || ' ' || t.trial_key || ' ' || quote(t.median_ms) || ' ' || quote(t.retime_median_ms) || ' ' || "
      "t.created_at FROM trials t JOIN devices d ON d.id = t.device_id");
  std::set<std::string> out;
  while (s.step()) out.insert(s.column_text(0));
  return out;
}

/// Every winner: device, problem, scope, the key of its trial, its time.
std::set<std::string> winner_rows(const fs::path& file) {
  Store store(file, OpenMode::read);
  std::set<std::string> out;
  for (const DeviceRecord& d : store.devices())
    for (const WinnerRecord& w : store.winners(d.id))
      out.insert(fmt::format("{} {} {} {} {} {}", d.uuid, w.problem.to_string(), w.scope,
                             store.find_trial(w.trial_id)->trial_key, w.median_ms, w.ratio_to_cublas));
  return out;
}

/// The trial keys in id order (the order ranking ties follow).
std::vector<std::string> trial_order(const fs::path& file) {
  Store store(file, OpenMode::read);
  Statement s = store.db().prepare("SELECT trial_key FROM trials ORDER BY id");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.column_text(0));
  return out;
}

/// The file's bytes, hashed; "" when it does not exist.
std::string file_hash(const fs::path& file) { return fs::exists(file) ? hash_hex(test::read_file(file)) : ""; }

TEST(Merge, IdenticalInputsMergeToTheSameContent) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1, k_p2});
  }
  fs::copy_file(dir / "a.db", dir / "copy.db");
  const MergeResult r = merge(dir / "out.db", {dir / "a.db", dir / "copy.db"});
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.trials_added, 8);
  EXPECT_EQ(r.trials_duplicate, 8);
  EXPECT_EQ(r.trials_replaced + r.trials_superseded, 0);
  EXPECT_EQ(r.runs_added, 1);
  EXPECT_EQ(r.binaries_added, 4);
  EXPECT_EQ(r.sources_added, 1);
  EXPECT_EQ(r.baselines_added, 2);
  EXPECT_EQ(r.baselines_superseded, 0);
  EXPECT_EQ(r.winners_recomputed, 2);
  EXPECT_EQ(r.devices, 1);
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_FALSE(r.inputs[0].nothing_new) << "equal content: taken in the order given";
  EXPECT_TRUE(r.inputs[1].nothing_new);
  EXPECT_EQ(r.inputs[1].merged_before_path, (dir / "a.db").string()) << "its content hash was merged just now";
  EXPECT_EQ(r.content_hash, content_hash(dir / "a.db"));
  EXPECT_EQ(trial_rows(dir / "out.db"), trial_rows(dir / "a.db"));
  EXPECT_EQ(winner_rows(dir / "out.db"), winner_rows(dir / "a.db"));
  EXPECT_EQ(trial_order(dir / "out.db"), trial_order(dir / "a.db"));
  Store out(dir / "out.db", OpenMode::read);
  EXPECT_EQ(out.schema_version(), latest_schema_version());
  EXPECT_EQ(count(out.db(), "SELECT count(*) FROM merge_inputs"), 1) << "the copy added nothing";
}

TEST(Merge, OverlappingInputsKeepTheNewestMeasurementOfEachKeyAndEveryBaseline) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1, k_p2});
    // b measured p2 again a day later, 5% slower against a slower cuBLAS, and p3.
    Tuned b(dir / "b.db", "GPU-a");
    b.tune("b", "2026-01-02T00:00:00Z", {k_p2, k_p3}, 1.05, 1.1);
    // What one database holds that measured p1 as a did and p2 and p3 as b did.
    Tuned both(dir / "both.db", "GPU-a");
    both.tune("a", "2026-01-01T00:00:00Z", {k_p1});
    both.tune("b", "2026-01-02T00:00:00Z", {k_p2, k_p3}, 1.05, 1.1);
  }
  const MergeResult r = merge(dir / "ab.db", {dir / "a.db", dir / "b.db"});
  EXPECT_EQ(r.trials_added + r.trials_replaced + r.trials_superseded, 16);
  EXPECT_EQ(r.trials_replaced + r.trials_superseded, 4) << "p2's four keys, measured twice";
  EXPECT_EQ(r.runs_added, 2);
  EXPECT_EQ(r.binaries_added, 4);
  EXPECT_EQ(r.baselines_added, 3);
  EXPECT_EQ(r.baselines_superseded, 1) << "a's baseline of p2";
  EXPECT_EQ(r.content_hash, content_hash(dir / "both.db"));
  EXPECT_EQ(winner_rows(dir / "ab.db"), winner_rows(dir / "both.db"));
  EXPECT_EQ(trial_rows(dir / "ab.db"), trial_rows(dir / "both.db"));
  {
    Store out(dir / "ab.db", OpenMode::read);
    EXPECT_EQ(count(out.db(), "SELECT count(*) FROM trials"), 12);
    // Every baseline is kept: b's of p2 (newer) where tune reads it, a's beside it.
    ASSERT_TRUE(out.find_baseline(out.devices().at(0).id, k_p2));
    EXPECT_EQ(out.find_baseline(out.devices().at(0).id, k_p2)->median_ms, 1.1);
    EXPECT_EQ(count(out.db(), "SELECT count(*) FROM superseded_baselines WHERE m = 512 AND median_ms = 1.0"), 1);
  }

  // The other order gives the same database.
  const MergeResult swapped = merge(dir / "ba.db", {dir / "b.db", dir / "a.db"});
  EXPECT_EQ(swapped.content_hash, r.content_hash);
  EXPECT_EQ(trial_rows(dir / "ba.db"), trial_rows(dir / "ab.db"));
  EXPECT_EQ(trial_order(dir / "ba.db"), trial_order(dir / "ab.db"));
  Store ba(dir / "ba.db", OpenMode::read);
  EXPECT_EQ(count(ba.db(), "SELECT count(*) FROM superseded_baselines"), 1);
}

TEST(Merge, DisjointInputsAreUnited) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1});
    Tuned b(dir / "b.db", "GPU-a");
    b.tune("b", "2026-01-01T00:00:00Z", {k_p2, k_p3});
    Tuned both(dir / "both.db", "GPU-a");
    both.tune("a", "2026-01-01T00:00:00Z", {k_p1});
    both.tune("b", "2026-01-01T00:00:00Z", {k_p2, k_p3});
  }
  const MergeResult r = merge(dir / "out.db", {dir / "b.db", dir / "a.db"});
  EXPECT_EQ(r.trials_added, 12);
  EXPECT_EQ(r.trials_duplicate + r.trials_replaced + r.trials_superseded, 0);
  EXPECT_EQ(r.runs_added, 2);
  EXPECT_EQ(r.binaries_added, 4) << "the same four kernels: one copy each";
  EXPECT_EQ(r.sources_added, 1);
  EXPECT_EQ(r.winners_recomputed, 3);
  EXPECT_FALSE(r.inputs[0].nothing_new || r.inputs[1].nothing_new);
  EXPECT_EQ(r.content_hash, content_hash(dir / "both.db"));
  EXPECT_EQ(trial_rows(dir / "out.db"), trial_rows(dir / "both.db"));
  EXPECT_EQ(winner_rows(dir / "out.db"), winner_rows(dir / "both.db"));
}

TEST(Merge, InputsOfTwoDevicesKeepEachDevicesWinners) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1, k_p2});
    Tuned b(dir / "b.db", "GPU-b");   // another H100: the same problems, other times
    b.tune("b", "2026-01-01T00:00:00Z", {k_p1, k_p2}, 0.9, 0.95);
  }
  const MergeResult r = merge(dir / "out.db", {dir / "a.db", dir / "b.db"});
  EXPECT_EQ(r.devices, 2);
  EXPECT_EQ(r.devices_added, 2);
  EXPECT_EQ(r.trials_added, 16) << "trial keys name the device";
  EXPECT_EQ(r.baselines_added, 4);
  EXPECT_EQ(r.winners_recomputed, 4);
  std::set<std::string> expected = winner_rows(dir / "a.db");
  for (const auto& w : winner_rows(dir / "b.db")) expected.insert(w);
  EXPECT_EQ(winner_rows(dir / "out.db"), expected);
  std::set<std::string> trials = trial_rows(dir / "a.db");
  for (const auto& t : trial_rows(dir / "b.db")) trials.insert(t);
  EXPECT_EQ(trial_rows(dir / "out.db"), trials);
}

TEST(Merge, TheSameFileTwiceIsRefusedAndNothingIsCreated) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  fs::create_symlink(dir / "a.db", dir / "link.db");
  fs::create_hard_link(dir / "a.db", dir / "hard.db");
  const std::string a = (dir / "a.db").string();
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "a.db", dir / "a.db"}); }),
            fmt::format("merge input {} is given twice; give each database once", a));
  const std::string link = (dir / "link.db").string(), hard = (dir / "hard.db").string();
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "a.db", dir / "link.db"}); }),
            fmt::format("merge inputs {} and {} are the same file; give each database once", a, link));
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "hard.db", dir / "a.db"}); }),
            fmt::format("merge inputs {} and {} are the same file; give each database once", hard, a));
  EXPECT_FALSE(fs::exists(dir / "out.db"));
  // A database merged into itself: OUT given as an input, by its name or another.
  const std::string hash = file_hash(dir / "a.db");
  EXPECT_EQ(test::usage_error([&] { merge(dir / "a.db", {dir / "a.db"}); }),
            fmt::format("the output {} is also given as an input; an existing OUT is merged into as an input already, "
                        "and no input is ever written",
                        a));
  const std::string via_link = test::usage_error([&] { merge(dir / "link.db", {dir / "hard.db"}); });
  EXPECT_NE(via_link.find("is also given as an input (" + hard + ")"), std::string::npos) << via_link;
  const std::string side = test::usage_error([&] { merge(dir / "a.db-wal", {dir / "a.db"}); });
  EXPECT_NE(side.find("is the -wal file of the database"), std::string::npos) << side;
  EXPECT_EQ(file_hash(dir / "a.db"), hash);
  EXPECT_EQ(test::entries(dir.path()), (std::vector<std::string>{"a.db", "hard.db", "link.db"}));
}

TEST(Merge, ACopyOfOutChangesNothing) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1, k_p2}); }
  fs::copy_file(dir / "a.db", dir / "copy.db");
  const std::string bytes = file_hash(dir / "a.db");
  const std::string hash = content_hash(dir / "a.db");
  const MergeResult r = merge(dir / "a.db", {dir / "copy.db"});
  EXPECT_FALSE(r.created);
  EXPECT_FALSE(r.changed);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_TRUE(r.inputs[0].nothing_new);
  EXPECT_EQ(r.inputs[0].merged_before_path, "") << "never merged: a copy";
  EXPECT_EQ(r.trials_duplicate, 8);
  EXPECT_EQ(r.winners_recomputed, 0);
  EXPECT_EQ(r.content_hash, hash);
  EXPECT_EQ(file_hash(dir / "a.db"), bytes) << "not a byte written";
  EXPECT_EQ(test::entries(dir.path()), (std::vector<std::string>{"a.db", "copy.db"}));
}

TEST(Merge, AnotherSchemaIsRefusedAndLeftAsItIs) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  fs::copy_file(dir / "a.db", dir / "old.db");
  test::downgrade_schema(dir / "old.db", 8);
  const std::string old_bytes = file_hash(dir / "old.db");
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "a.db", dir / "old.db"}); }),
            fmt::format("merge input {} has schema version 8, older than this cm-tune's {}; merge never migrates an "
                        "input: copy it, run cm-tune db migrate --db COPY and merge the copy",
                        (dir / "old.db").string(), latest_schema_version()));
  EXPECT_EQ(file_hash(dir / "old.db"), old_bytes);
  EXPECT_FALSE(fs::exists(dir / "out.db"));

  fs::copy_file(dir / "a.db", dir / "new.db");
  Database(dir / "new.db").exec(fmt::format("PRAGMA user_version = {}", latest_schema_version() + 1));
  const std::string newer = test::usage_error([&] { merge(dir / "out.db", {dir / "new.db"}); });
  EXPECT_NE(newer.find("newer than this cm-tune"), std::string::npos) << newer;
  EXPECT_FALSE(fs::exists(dir / "out.db"));

  // An older OUT: merge migrates nothing.
  const std::string older_out = test::usage_error([&] { merge(dir / "old.db", {dir / "a.db"}); });
  EXPECT_NE(older_out.find("run cm-tune db migrate --db " + (dir / "old.db").string() + " first"), std::string::npos)
      << older_out;
  EXPECT_EQ(file_hash(dir / "old.db"), old_bytes);
}

TEST(Merge, MissingAndForeignInputsAreRefused) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "a.db", dir / "none.db"}); }),
            fmt::format("merge input {} does not exist", (dir / "none.db").string()));
  test::write_file(dir / "text.db", "not a database\n");
  EXPECT_NE(test::usage_error([&] { merge(dir / "out.db", {dir / "text.db"}); }).find("is not a cm-tune database"),
            std::string::npos);
  test::write_file(dir / "empty.db", "");
  EXPECT_NE(test::usage_error([&] { merge(dir / "out.db", {dir / "empty.db"}); }).find("is empty"), std::string::npos);
  Database(dir / "other.db").exec("CREATE TABLE notes (text TEXT)");
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "other.db"}); }),
            (dir / "other.db").string() + " is not a cm-tune database");
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {}); }), "db merge needs at least one input database");
  // A trial naming a run its database does not hold (db check's orphans): refused when met.
  fs::copy_file(dir / "a.db", dir / "orphan.db");
  Database(dir / "orphan.db").exec("PRAGMA foreign_keys = OFF; UPDATE trials SET run_id = 99 WHERE id = 1");
  EXPECT_EQ(test::usage_error([&] { merge(dir / "out.db", {dir / "orphan.db"}); }),
            fmt::format("merge input {0}: a row of trials names run 99, which it does not hold; cm-tune db check --db "
                        "{0} lists such rows",
                        (dir / "orphan.db").string()));
  EXPECT_FALSE(fs::exists(dir / "out.db"));
}

TEST(Merge, AnEmptyOutFileIsSetUpAsANewDatabase) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  test::write_file(dir / "out.db", "");   // as mktemp leaves it
  const MergeResult r = merge(dir / "out.db", {dir / "a.db"});
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.trials_added, 4);
  EXPECT_EQ(r.content_hash, content_hash(dir / "a.db"));
}

TEST(Merge, InputsAreNeverWrittenEvenWithCommitsInTheirWal) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  {
    // A copy taken while a tune had commits in the -wal file: the database and its -wal.
    Tuned live(dir / "live.db", "GPU-a");
    live.tune("live", "2026-01-01T00:00:00Z", {k_p2});
    ASSERT_GT(fs::file_size(dir / "live.db-wal"), 0u);
    fs::create_directory(dir / "copied");
    fs::copy_file(dir / "live.db", dir / "copied/w.db");
    fs::copy_file(dir / "live.db-wal", dir / "copied/w.db-wal");
  }
  const std::map<std::string, std::string> before = {{"a.db", file_hash(dir / "a.db")},
                                                     {"w.db", file_hash(dir / "copied/w.db")},
                                                     {"w.db-wal", file_hash(dir / "copied/w.db-wal")}};
  const MergeResult r = merge(dir / "out.db", {dir / "a.db", dir / "copied/w.db"});
  EXPECT_EQ(r.trials_added, 8) << "the -wal's commits were read";
  EXPECT_EQ(file_hash(dir / "a.db"), before.at("a.db"));
  EXPECT_EQ(file_hash(dir / "copied/w.db"), before.at("w.db")) << "the -wal was not folded into the file";
  EXPECT_EQ(file_hash(dir / "copied/w.db-wal"), before.at("w.db-wal"));
  for (const auto& e : test::entries(dir.path())) EXPECT_EQ(e.find("a.db-"), std::string::npos) << e << " left behind";
}

TEST(Merge, MergingTheSameInputsAgainChangesNothing) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1, k_p2});
    Tuned b(dir / "b.db", "GPU-a");
    b.tune("b", "2026-01-02T00:00:00Z", {k_p2, k_p3}, 1.05, 1.1);
  }
  const MergeResult first = merge(dir / "out.db", {dir / "a.db", dir / "b.db"});
  const std::string bytes = file_hash(dir / "out.db");
  const auto trials = trial_rows(dir / "out.db");
  for (const auto& order : {std::vector<fs::path>{dir / "a.db", dir / "b.db"}, {dir / "b.db", dir / "a.db"}}) {
    const MergeResult again = merge(dir / "out.db", order);
    EXPECT_FALSE(again.changed);
    EXPECT_EQ(again.content_hash, first.content_hash);
    EXPECT_EQ(again.runs_added + again.trials_added + again.trials_replaced + again.baselines_added +
                  again.baselines_superseded + again.binaries_added + again.sources_added + again.winners_recomputed,
              0);
    for (const MergedInput& in : again.inputs) {
      EXPECT_TRUE(in.nothing_new) << in.path;
      EXPECT_EQ(in.merged_before_path, in.path);
    }
    EXPECT_EQ(file_hash(dir / "out.db"), bytes);
    EXPECT_EQ(trial_rows(dir / "out.db"), trials);
  }
  // Merged one at a time into another OUT: the same content.
  merge(dir / "one.db", {dir / "b.db"});
  EXPECT_EQ(merge(dir / "one.db", {dir / "a.db"}).content_hash, first.content_hash);
  EXPECT_EQ(trial_rows(dir / "one.db"), trials);
}

TEST(Merge, EachRowsOriginIsFoundThroughItsRun) {
  test::TempDir dir;
  {
    Tuned a(dir / "a.db", "GPU-a");
    a.tune("a", "2026-01-01T00:00:00Z", {k_p1});
    Tuned b(dir / "b.db", "GPU-a");
    b.tune("b", "2026-01-01T00:00:00Z", {k_p2});
  }
  const std::string a_hash = content_hash(dir / "a.db");
  {
    // a.db as a relative path: run from the folder, and back.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path());
    try {
      merge("out.db", {"a.db", dir / "b.db"});
    } catch (...) {
      fs::current_path(cwd);
      throw;
    }
    fs::current_path(cwd);
  }
  Store out(dir / "out.db", OpenMode::read);
  Statement s = out.db().prepare(
      "SELECT DISTINCT t.m, i.path, i.absolute_path, i.content_hash, r.command_line FROM trials t "
      "JOIN runs r ON r.id = t.run_id JOIN merge_inputs i ON i.id = r.merge_input_id ORDER BY t.m");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int(0), 256);
  EXPECT_EQ(s.column_text(1), "a.db") << "as given";
  EXPECT_EQ(s.column_text(2), (fs::absolute(dir.path()) / "a.db").lexically_normal().string());
  EXPECT_EQ(s.column_text(3), a_hash);
  EXPECT_EQ(s.column_text(4), "cm-tune tune a");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int(0), 512);
  EXPECT_EQ(s.column_text(1), (dir / "b.db").string());
  EXPECT_FALSE(s.step());
  EXPECT_EQ(count(out.db(), "SELECT count(*) FROM baselines b JOIN runs r ON r.id = b.run_id "
                           "WHERE r.merge_input_id IS NULL"),
            0);
  EXPECT_EQ(count(out.db(), "SELECT count(*) FROM merge_inputs WHERE merged_at LIKE '____-__-__T__:__:__Z'"), 2);
}

TEST(Merge, ACubinIsKeptOverACopyWithoutIt) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  fs::copy_file(dir / "a.db", dir / "vacuumed.db");
  int64_t dropped = 0;
  {
    Store store(dir / "vacuumed.db", OpenMode::write);
    dropped = store.unused_cubins(true).count;
  }
  ASSERT_GT(dropped, 0);
  // Into the copy without them, and the other way round: every cubin is there afterwards.
  const MergeResult into_vacuumed = merge(dir / "vacuumed.db", {dir / "a.db"});
  EXPECT_EQ(into_vacuumed.binaries_restored, dropped);
  EXPECT_EQ(into_vacuumed.binaries_added, 0);
  fs::copy_file(dir / "a.db", dir / "vacuumed2.db");
  { Store(dir / "vacuumed2.db", OpenMode::write).unused_cubins(true); }
  const MergeResult both = merge(dir / "out.db", {dir / "vacuumed2.db", dir / "a.db"});
  // Equal content hashes: taken as given, the copy without the cubins first.
  EXPECT_EQ(both.binaries_added, 4);
  EXPECT_EQ(both.binaries_restored, dropped);
  for (const fs::path& file : {dir / "vacuumed.db", dir / "out.db"}) {
    Store store(file, OpenMode::read);
    EXPECT_EQ(store.count_binaries(), 4);
    for (const auto& [key, source] : store.binary_sources()) EXPECT_TRUE(store.find_binary(key)) << file << " " << key;
  }
}

TEST(Merge, AFailedMergeLeavesOutAsItWas) {
  test::TempDir dir;
  { Tuned(dir / "a.db", "GPU-a").tune("a", "2026-01-01T00:00:00Z", {k_p1}); }
  { Tuned(dir / "b.db", "GPU-a").tune("b", "2026-01-01T00:00:00Z", {k_p2}); }
  const auto failing = [](Store&, int64_t, const Problem&) { throw std::runtime_error("choosing failed"); };
  EXPECT_THROW(merge_databases(dir / "out.db", {dir / "a.db"}, failing), std::runtime_error);
  EXPECT_EQ(test::entries(dir.path()), (std::vector<std::string>{"a.db", "b.db"})) << "the new OUT is removed";
  const std::string bytes = file_hash(dir / "a.db");
  EXPECT_THROW(merge_databases(dir / "a.db", {dir / "b.db"}, failing), std::runtime_error);
  EXPECT_EQ(file_hash(dir / "a.db"), bytes) << "rolled back";
  EXPECT_EQ(trial_rows(dir / "a.db").size(), 4u);
}

TEST(MergeSchema, ADatabaseFromBeforeMergeKeepsItsRowsAndItsHash) {
  test::TempDir dir;
  const fs::path file = dir / "v8.db";
  test::tuned_database(file, "GPU-before-merge");
  test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(test::expect_migration_keeps_trials(file, 8, "runs", "merge_input_id", m));
  Store store(file);
  // Every run was measured into this database: none names a merge input.
  EXPECT_GT(count(store.db(), "SELECT count(*) FROM runs"), 0);
  EXPECT_EQ(count(store.db(), "SELECT count(*) FROM runs WHERE merge_input_id IS NOT NULL"), 0);
  EXPECT_EQ(count(store.db(), "SELECT count(*) FROM merge_inputs"), 0);
  EXPECT_EQ(count(store.db(), "SELECT count(*) FROM superseded_baselines"), 0);
}

}  // namespace
}  // namespace cmt::merge_tests
