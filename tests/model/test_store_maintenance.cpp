// Looking after a database (issue 18, `cm-tune db check | info | vacuum`): each check passes on a
// sound database and fails, naming the problem, on each kind of damage; vacuum drops only the cubins
// no winner uses, keeps everything else, and changes nothing that export writes.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "export/header_writer.hpp"
#include "space/template_desc.hpp"
#include "store/maintenance.hpp"
#include "store/store.hpp"
#include "test_store_processes.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

constexpr int64_t k_cubin_bytes = 64 * 1024;
const Problem k_tuned{1024, 1024, 1024};
const Problem k_other{2048, 2048, 2048};

/// A tuned database: one winner ("fast" on k_tuned, its cubin stored), the same kernel built for
/// another arch and measured on k_other (its trial feeds the kernel's cost model in export), a
/// kernel that never won, and a compile failure. Keys of the binaries no winner uses: "sm80" and
/// "slow".
struct Tuned {
  explicit Tuned(const fs::path& file) : store(file) {
    run = store.begin_run(RunRecord{});
    DeviceRecord d;
    d.uuid = "GPU-maintenance";
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    d.sm_count = 132;
    device = store.upsert_device(d);
    source = test::add_synthetic_winner(store, run, device, "fast", k_tuned);
    winner_binary = hash_hex("binary-fast");
    store.db().prepare("UPDATE binaries SET cubin = zeroblob(?) WHERE key = ?").bind(1, k_cubin_bytes).bind(2, winner_binary).run();
    add_binary("sm80", source, "fast", true);
    add_trial("fast-2048", "sm80", "fast", k_other, 8.0);
    add_binary("slow", source, "slow", true);
    add_trial("slow-1024", "slow", "slow", k_tuned, 5.0);
    add_binary("broken", source, "broken", false);
  }

  void add_binary(const std::string& key, const std::string& source_hash, const std::string& tmpl, bool ok) {
    BinaryRecord b;
    b.key = key;
    b.template_name = tmpl;
    b.params = "V=1";
    b.arch = key == "sm80" ? "sm_80" : "sm_90";
    b.source_hash = source_hash;
    b.ok = ok;
    b.log = ok ? "ptxas info: Used 64 registers" : "error: expected a ';'";
    if (ok) {   // noise: stored compressed, it keeps about its size (the winner's is stored uncompressed)
      std::mt19937 random(static_cast<unsigned>(key.size()));
      for (int64_t i = 0; i < k_cubin_bytes; ++i) b.cubin.push_back(static_cast<char>(random() & 0xff));
    }
    b.lowered_name = "_Z" + tmpl;
    store.put_binary(b);
  }

  void add_trial(const std::string& key, const std::string& binary, const std::string& tmpl, const Problem& p, double ms) {
    TrialRecord t;
    t.trial_key = key;
    t.run_id = run;
    t.device_id = device;
    t.template_name = tmpl;
    t.params = "V=1";
    t.name_expression = fmt::format("cmt_sgemm_{}<1>", tmpl);
    t.binary_key = binary;
    t.problem = p;
    t.lda = p.k;
    t.ldb = t.ldc = p.n;
    t.median_ms = ms;
    t.gflops = p.flops() / (ms * 1e6);
    t.registers = 64;
    t.shape = {128, 64, 64, 0};
    t.requirements = Requirements{4, 1};
    store.insert_trial(t);
  }

  Store store;
  int64_t run = 0, device = 0;
  std::string source, winner_binary;
};

const CheckResult& find_check(const std::vector<CheckResult>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

/// The checks that failed, as "name: detail".
std::vector<std::string> failures(Store& store) {
  std::vector<std::string> out;
  for (const auto& c : check_database(store))
    if (!c.ok) out.push_back(c.name + ": " + c.detail);
  return out;
}

std::string header_of(Store& store) {
  static const std::vector<TemplateDesc> templates = load_templates({default_templates_dir()});
  for (const auto& t : templates)
    if (t.name == "blocktile2d") return export_header(store, {}, t);
  throw std::runtime_error("no blocktile2d template");
}

TEST(DbCheck, SoundDatabasePassesEveryCheck) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  const std::vector<CheckResult> checks = check_database(db.store);
  std::vector<std::string> names;
  for (const auto& c : checks) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"integrity", "schema", "orphans", "winners", "winner binaries", "cubins",
                                             "sources"}));
  EXPECT_EQ(failures(db.store), std::vector<std::string>{});
  EXPECT_EQ(find_check(checks, "schema").detail,
            fmt::format("version {}, the latest this cm-tune knows", latest_schema_version()));
  EXPECT_EQ(find_check(checks, "winners").detail, "1 winner names a passing trial of its problem");
  EXPECT_EQ(find_check(checks, "winner binaries").detail, "the 1 binary of winners is compiled, with its cubin and source");
  EXPECT_EQ(find_check(checks, "cubins").detail,
            "3 cubins read back (2 compressed, 1 stored uncompressed by an earlier cm-tune)");
  EXPECT_EQ(find_check(checks, "sources").detail, "1 source bundle matches its hash");
}

TEST(DbCheck, OrphanRowsAreNamedByTable) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  db.store.db().exec("PRAGMA foreign_keys = OFF; DELETE FROM runs; "
                     "INSERT INTO source_headers VALUES ('gone', 0, 'a.cuh', 'x')");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{"orphans: 1 row of source_headers names a missing row of "
                                                         "sources; 3 rows of trials name a missing row of runs"});
}

TEST(DbCheck, WinnerOfAFailedTrialOrAnotherKernelFails) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  db.store.db().exec("UPDATE trials SET outcome = 'wrong' WHERE trial_key = 'trial-fast'");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{"winners: winner overall of 1024x1024x1024 on device 1 names "
                                                         "trial 1, which did not pass (wrong)"});
  db.store.db().exec("UPDATE trials SET outcome = 'ok' WHERE trial_key = 'trial-fast'");
  db.store.db().exec("UPDATE winners SET params = 'V=2'");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{"winners: winner overall of 1024x1024x1024 on device 1 names "
                                                         "trial 1, of another kernel (fast[V=1])"});
  db.store.db().exec("UPDATE winners SET params = 'V=1', m = 512");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{"winners: winner overall of 512x1024x1024 on device 1 names "
                                                         "trial 1, of another device or problem"});
}

TEST(DbCheck, WinnerBinaryMissingOrWithoutItsSourceFails) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  db.store.db().exec("DELETE FROM sources");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{fmt::format(
                                    "winner binaries: the binary of fast[V=1] (1 winner): its source {} is not in the "
                                    "database",
                                    db.source)});
  db.store.db().exec("DELETE FROM binaries WHERE key = '" + db.winner_binary + "'");
  EXPECT_EQ(failures(db.store), std::vector<std::string>{fmt::format(
                                    "winner binaries: the binary of fast[V=1] (1 winner) is not in the compile cache "
                                    "(key {})",
                                    db.winner_binary)});
}

TEST(DbCheck, EditedSourceFails) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  db.store.db().exec("UPDATE source_headers SET text = text || ' '");
  EXPECT_EQ(failures(db.store),
            std::vector<std::string>{fmt::format("sources: source {} (template fast) does not match its hash", db.source)});
}

TEST(DbCheck, OlderSchemaFailsTheSchemaCheckOnly) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  { Tuned db(file); }
  test::downgrade_schema(file, 1);
  Store store(file, OpenMode::read, OlderSchema::accept);
  EXPECT_EQ(failures(store), std::vector<std::string>{fmt::format(
                                 "schema: version 1, older than this cm-tune's {}; run cm-tune db migrate",
                                 latest_schema_version())});
}

TEST(DbCheck, DamagedFileFailsIntegrity) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  {
    Tuned db(file);
    db.store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Garbage over the cells of an index's page: SQLite still opens the file, the index is damaged.
  int64_t root = 0, page = 0;
  {
    Database raw(file, OpenMode::read);
    Statement s = raw.prepare(
        "SELECT (SELECT rootpage FROM sqlite_master WHERE name = 'trials_device_problem'), "
        "(SELECT page_size FROM pragma_page_size)");
    ASSERT_TRUE(s.step());
    root = s.column_int(0);
    page = s.column_int(1);
  }
  std::string bytes = test::read_file(file);
  ASSERT_GE(static_cast<int64_t>(bytes.size()), root * page);
  for (int64_t i = (root - 1) * page + page / 2; i < root * page; ++i) bytes[static_cast<size_t>(i)] = '\x5a';
  test::write_file(file, bytes);
  Store store(file, OpenMode::read);
  const std::vector<CheckResult> checks = check_database(store);
  EXPECT_FALSE(find_check(checks, "integrity").ok);
  EXPECT_FALSE(find_check(checks, "integrity").detail.empty());
}

TEST(DbInfo, CountsWhatIsStored) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  const DatabaseInfo info = database_info(db.store);
  EXPECT_EQ(info.schema_version, latest_schema_version());
  ASSERT_EQ(info.devices.size(), 1u);
  EXPECT_EQ(info.devices[0].record.uuid, "GPU-maintenance");
  EXPECT_EQ(info.devices[0].problems, 2);
  EXPECT_EQ(info.devices[0].trials, 3);
  EXPECT_EQ(info.devices[0].winners, 1);
  EXPECT_EQ(info.problems, 2);
  EXPECT_EQ(info.trials, 3);
  EXPECT_EQ(info.trials_by_outcome, (std::map<std::string, int64_t>{{"ok", 3}}));
  EXPECT_EQ(info.winners, 1);
  EXPECT_EQ(info.runs, 1);
  EXPECT_EQ(info.cubins, 3);
  EXPECT_EQ(info.cubin_raw_bytes, 3 * k_cubin_bytes);
  EXPECT_GE(info.cubin_bytes, 3 * k_cubin_bytes);   // noise does not compress: a zstd frame's overhead
  EXPECT_LT(info.cubin_bytes, 3 * k_cubin_bytes + 256);
  EXPECT_EQ(info.failed_compiles, 1);
  EXPECT_EQ(info.dropped_cubins, 0);
  EXPECT_EQ(info.sources, 1);
  EXPECT_GT(info.file_bytes, 3 * k_cubin_bytes);
}

TEST(DbVacuum, DryRunCountsAndChangesNothing) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  { Tuned db(file); }
  const std::string before = test::read_file(file);
  Store store(file, OpenMode::read);
  const VacuumResult r = vacuum_database(store, true);
  EXPECT_EQ(r.cubins, 2);
  EXPECT_GE(r.cubin_bytes, 2 * k_cubin_bytes);   // as stored
  EXPECT_LT(r.cubin_bytes, 2 * k_cubin_bytes + 256);
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.bytes_after, r.bytes_before);
  EXPECT_EQ(test::read_file(file), before);
}

TEST(DbVacuum, DropsOnlyCubinsNoWinnerUsesAndExportIsUnchanged) {
  test::TempDir dir;
  Tuned db(dir / "t.db");
  Store& store = db.store;
  const std::string header = header_of(store);
  const std::string content = store.content_hash();
  const auto sources = store.binary_sources();

  const VacuumResult r = vacuum_database(store, false);
  EXPECT_EQ(r.cubins, 2);
  EXPECT_GE(r.cubin_bytes, 2 * k_cubin_bytes);   // as stored
  EXPECT_LT(r.cubin_bytes, 2 * k_cubin_bytes + 256);
  EXPECT_EQ(r.kept, 1);
  EXPECT_LT(r.bytes_after, r.bytes_before - k_cubin_bytes) << "the space was not given back";

  // Dropped cubins read as compile-cache misses; the winner's and the compile failure stay.
  EXPECT_FALSE(store.find_binary("sm80"));
  EXPECT_FALSE(store.find_binary("slow"));
  ASSERT_TRUE(store.find_binary(db.winner_binary));
  EXPECT_EQ(store.find_binary(db.winner_binary)->cubin.size(), static_cast<size_t>(k_cubin_bytes));
  ASSERT_TRUE(store.find_binary("broken"));
  EXPECT_FALSE(store.find_binary("broken")->ok);
  // Every row stays: trials, the tuning history, and the binaries' sources, through which export
  // fits each kernel's cost model on trials of other builds of it.
  EXPECT_EQ(store.binary_sources(), sources);
  EXPECT_EQ(store.trials(db.device).size(), 3u);
  EXPECT_EQ(store.content_hash(), content);
  EXPECT_EQ(header_of(store), header);
  EXPECT_EQ(failures(store), std::vector<std::string>{});
  const DatabaseInfo info = database_info(store);
  EXPECT_EQ(info.cubins, 1);
  EXPECT_EQ(info.dropped_cubins, 2);

  // Nothing is left to drop; a compile of a dropped binary stores it again.
  EXPECT_EQ(vacuum_database(store, false).cubins, 0);
  db.add_binary("slow", db.source, "slow", true);
  ASSERT_TRUE(store.find_binary("slow"));
  EXPECT_EQ(store.find_binary("slow")->cubin.size(), static_cast<size_t>(k_cubin_bytes));

  // Had vacuum deleted the rows, export would have changed: the kernel's model loses a point.
  store.db().exec("DELETE FROM binaries WHERE key = 'sm80'");
  EXPECT_NE(header_of(store), header);
}

TEST(DbVacuum, RefusesWhileAnotherProcessHasTheDatabaseOpen) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  { Tuned db(file); }
  test::DatabaseHolder holder(file, test::DatabaseHolder::Hold::open);
  Store store(file, OpenMode::write);
  const std::string message = test::usage_error([&] { vacuum_database(store, false); });
  EXPECT_EQ(message.rfind(fmt::format("database {} is open in process {} (cmt_model_tests", file.string(), holder.pid()), 0),
            0u)
      << message;
  EXPECT_NE(message.find("; run cm-tune db vacuum when it has finished"), std::string::npos) << message;
  EXPECT_EQ(vacuum_database(store, true).cubins, 2) << "a dry run only reads";
  holder.wait();
  EXPECT_EQ(vacuum_database(store, false).cubins, 2);
}

}  // namespace
}  // namespace cmt
