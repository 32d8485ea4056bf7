// The Store against real SQLite files: round-trips of every record, replace semantics, hashing.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <regex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "migration_check.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

using namespace std::string_literals;
using cmt::BaselineRecord;
using cmt::BinaryRecord;
using cmt::DeviceRecord;
using cmt::Outcome;
using cmt::Problem;
using cmt::RunRecord;
using cmt::SourceRecord;
using cmt::Store;
using cmt::TrialRecord;
using cmt::WinnerRecord;

bool is_iso_utc(const std::string& text) {
  static const std::regex k_iso(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  return std::regex_match(text, k_iso);
}

DeviceRecord make_device(const std::string& uuid, const std::string& name = "NVIDIA H100 80GB HBM3") {
  DeviceRecord d;
  d.uuid = uuid;
  d.name = name;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.memory_bytes = 85'520'809'984;
  d.l2_bytes = 52'428'800;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  d.nvrtc_version = "13.0";
  return d;
}

/// A trial with every field set to a distinct, non-default value.
TrialRecord make_trial(const std::string& key, int64_t device_id, int64_t run_id, const Problem& problem) {
  TrialRecord t;
  t.trial_key = key;
  t.run_id = run_id;
  t.device_id = device_id;
  t.template_name = "blocktile2d";
  t.params = "BM=128,BN=64,BK=8,TM=8,TN=8";
  t.name_expression = "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>";
  t.binary_key = "bin-" + key;
  t.problem = problem;
  t.lda = problem.k + 4;
  t.ldb = problem.n + 8;
  t.ldc = problem.n + 12;
  t.outcome = Outcome::ok;
  t.reason = "";
  t.log = "ptxas info: Used 128 registers\n";
  t.max_abs_error = 1.0 / 3.0;
  t.max_error_ratio = 0.125;
  t.median_ms = 0.1;
  t.min_ms = 0.0987654321;
  t.cv = 0.0123;
  t.samples = 31;
  t.gflops = 34359.738368;
  t.ratio_to_cublas = 0.87;
  t.retime_median_ms = 0.10001;
  t.registers = 128;
  t.smem_bytes = 49152;
  t.shape.threads = 255;
  t.shape.tile_m = 128;
  t.shape.tile_n = 64;
  t.shape.dynamic_smem = 16384;
  t.shape.grid_z = 3;
  t.requirements.align_bytes = 16;
  t.requirements.ld_multiple = 4;
  t.created_at = "2025-01-31T12:34:56Z";
  return t;
}

void expect_same_trial(const TrialRecord& a, const TrialRecord& b) {
  EXPECT_EQ(a.trial_key, b.trial_key);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.device_id, b.device_id);
  EXPECT_EQ(a.template_name, b.template_name);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.name_expression, b.name_expression);
  EXPECT_EQ(a.binary_key, b.binary_key);
  EXPECT_EQ(a.problem, b.problem);
  EXPECT_EQ(a.lda, b.lda);
  EXPECT_EQ(a.ldb, b.ldb);
  EXPECT_EQ(a.ldc, b.ldc);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.max_abs_error, b.max_abs_error);
  EXPECT_EQ(a.max_error_ratio, b.max_error_ratio);
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.min_ms, b.min_ms);
  EXPECT_EQ(a.cv, b.cv);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.gflops, b.gflops);
  EXPECT_EQ(a.ratio_to_cublas, b.ratio_to_cublas);
  EXPECT_EQ(a.retime_median_ms, b.retime_median_ms);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.smem_bytes, b.smem_bytes);
  EXPECT_EQ(a.shape.threads, b.shape.threads);
  EXPECT_EQ(a.shape.tile_m, b.shape.tile_m);
  EXPECT_EQ(a.shape.tile_n, b.shape.tile_n);
  EXPECT_EQ(a.shape.dynamic_smem, b.shape.dynamic_smem);
  EXPECT_EQ(a.shape.grid_z, b.shape.grid_z);
  EXPECT_EQ(a.requirements.align_bytes, b.requirements.align_bytes);
  EXPECT_EQ(a.requirements.ld_multiple, b.requirements.ld_multiple);
  EXPECT_EQ(a.created_at, b.created_at);
}

WinnerRecord make_winner(int64_t device_id, const Problem& problem, const std::string& scope, int64_t trial_id) {
  WinnerRecord w;
  w.device_id = device_id;
  w.problem = problem;
  w.scope = scope;
  w.trial_id = trial_id;
  w.template_name = "blocktile2d";
  w.params = "BM=128,BN=64,BK=8,TM=8,TN=8";
  w.name_expression = "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>";
  w.median_ms = 0.25;
  w.gflops = 17179.869184;
  w.ratio_to_cublas = 0.93;
  w.requirements.align_bytes = 16;
  w.requirements.ld_multiple = 4;
  w.shape.threads = 256;
  w.shape.tile_m = 128;
  w.shape.tile_n = 64;
  w.shape.dynamic_smem = 12288;
  w.shape.grid_z = 2;
  w.binary_key = "bin-" + scope;
  return w;
}

void expect_same_winner(const WinnerRecord& a, const WinnerRecord& b) {
  EXPECT_EQ(a.device_id, b.device_id);
  EXPECT_EQ(a.problem, b.problem);
  EXPECT_EQ(a.scope, b.scope);
  EXPECT_EQ(a.trial_id, b.trial_id);
  EXPECT_EQ(a.template_name, b.template_name);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.name_expression, b.name_expression);
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.gflops, b.gflops);
  EXPECT_EQ(a.ratio_to_cublas, b.ratio_to_cublas);
  EXPECT_EQ(a.requirements.align_bytes, b.requirements.align_bytes);
  EXPECT_EQ(a.requirements.ld_multiple, b.requirements.ld_multiple);
  EXPECT_EQ(a.shape.threads, b.shape.threads);
  EXPECT_EQ(a.shape.tile_m, b.shape.tile_m);
  EXPECT_EQ(a.shape.tile_n, b.shape.tile_n);
  EXPECT_EQ(a.shape.dynamic_smem, b.shape.dynamic_smem);
  EXPECT_EQ(a.shape.grid_z, b.shape.grid_z);
  EXPECT_EQ(a.binary_key, b.binary_key);
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }
  /// Closes the store (if open) and opens the same file again.
  void reopen() {
    m_store.reset();
    m_store = std::make_unique<Store>(m_file);
  }
  Store& store() { return *m_store; }
  /// A device and a run to hang trials, baselines and winners on.
  void add_device_and_run() {
    m_device = store().upsert_device(make_device("GPU-0000-aaaa"));
    RunRecord run;
    run.command_line = "cm-tune tune --preset x.toml";
    run.device_id = m_device;
    m_run = store().begin_run(run);
  }

  cmt::test::TempDir m_dir;
  fs::path m_file = m_dir / "cm-tune.db";
  std::unique_ptr<Store> m_store;
  int64_t m_device = 0;
  int64_t m_run = 0;
};

TEST_F(StoreTest, BinaryRoundTripKeepsEveryByte) {
  BinaryRecord b;
  b.key = "key-1";
  b.template_name = "naive";
  b.params = "BS=16";
  b.arch = "sm_90";
  b.nvrtc_version = "13.0";
  b.options = "--std=c++17 -arch=sm_90";
  b.source_hash = "abc123";
  b.ok = true;
  b.log = "warning\0with a NUL"s;
  b.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\0', '\xff', '\x01', '\0'};
  b.lowered_name = "_Z5naiveILi16EEvv";
  b.registers = 40;
  b.spill_stores = 8;
  b.spill_loads = 12;
  b.compile_seconds = 0.4375;
  store().put_binary(b);
  EXPECT_EQ(store().count_binaries(), 1);

  reopen();
  const auto found = store().find_binary("key-1");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->key, b.key);
  EXPECT_EQ(found->template_name, b.template_name);
  EXPECT_EQ(found->params, b.params);
  EXPECT_EQ(found->arch, b.arch);
  EXPECT_EQ(found->nvrtc_version, b.nvrtc_version);
  EXPECT_EQ(found->options, b.options);
  EXPECT_EQ(found->source_hash, b.source_hash);
  EXPECT_TRUE(found->ok);
  EXPECT_EQ(found->log, b.log);
  EXPECT_EQ(found->log.size(), 18u);
  EXPECT_EQ(found->cubin, b.cubin);
  EXPECT_EQ(found->lowered_name, b.lowered_name);
  EXPECT_EQ(found->registers, 40);
  EXPECT_EQ(found->spill_stores, 8);
  EXPECT_EQ(found->spill_loads, 12);
  EXPECT_EQ(found->compile_seconds, 0.4375);
  EXPECT_FALSE(store().find_binary("key-2"));
}

TEST_F(StoreTest, FailedBinaryHasEmptyCubinAndReplaces) {
  BinaryRecord b;
  b.key = "key-1";
  b.ok = true;
  b.cubin = {'a', 'b'};
  store().put_binary(b);
  b.ok = false;
  b.cubin.clear();
  b.log = "error: expected ';'";
  b.registers = -1;
  store().put_binary(b);   // same key: replaces
  EXPECT_EQ(store().count_binaries(), 1);
  const auto found = store().find_binary("key-1");
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->ok);
  EXPECT_TRUE(found->cubin.empty());
  EXPECT_EQ(found->log, "error: expected ';'");
  EXPECT_EQ(found->registers, -1);
}

TEST_F(StoreTest, SourceRoundTripIncludingHeaders) {
  SourceRecord s;
  s.hash = "src-hash";
  s.template_name = "blocktile2d";
  s.main_name = "blocktile2d.cu";
  s.main_text = "#include \"common.cuh\"\n__global__ void k() {}\0tail\xc3\xa9\xff"s;
  s.headers = {{"a/common.cuh", "#pragma once\n\0\x01"s}, {"b.cuh", ""}, {"z.cuh", "// z\n"}};
  store().put_source(s);

  SourceRecord empty;
  empty.hash = "no-headers";
  empty.template_name = "naive";
  empty.main_name = "naive.cu";
  empty.main_text = "";
  store().put_source(empty);

  reopen();
  const auto found = store().find_source("src-hash");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->hash, s.hash);
  EXPECT_EQ(found->template_name, s.template_name);
  EXPECT_EQ(found->main_name, s.main_name);
  EXPECT_EQ(found->main_text, s.main_text);
  EXPECT_EQ(found->headers, s.headers);

  const auto found_empty = store().find_source("no-headers");
  ASSERT_TRUE(found_empty);
  EXPECT_EQ(found_empty->main_text, "");
  EXPECT_TRUE(found_empty->headers.empty());
  EXPECT_FALSE(store().find_source("missing"));
}

TEST_F(StoreTest, PutSourceKeepsTheFirstBundleOfAHash) {
  SourceRecord s;
  s.hash = "h";
  s.template_name = "t";
  s.main_name = "t.cu";
  s.main_text = "first";
  s.headers = {{"x.cuh", "one"}};
  store().put_source(s);
  s.main_text = "second";
  s.headers = {{"x.cuh", "two"}, {"y.cuh", "three"}};
  store().put_source(s);
  const auto found = store().find_source("h");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->main_text, "first");
  ASSERT_EQ(found->headers.size(), 1u);
  EXPECT_EQ(found->headers[0].second, "one");
}

TEST_F(StoreTest, UpsertDeviceReturnsSameIdForSameUuid) {
  const int64_t a = store().upsert_device(make_device("GPU-a"));
  const int64_t b = store().upsert_device(make_device("GPU-b", "NVIDIA H200"));
  EXPECT_NE(a, b);

  DeviceRecord changed = make_device("GPU-a", "renamed");
  changed.driver_version = 13010;
  changed.nvrtc_version = "13.1";
  EXPECT_EQ(store().upsert_device(changed), a);

  reopen();
  EXPECT_EQ(store().upsert_device(changed), a);
  const auto devices = store().devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].id, a);
  EXPECT_EQ(devices[1].id, b);
  EXPECT_EQ(devices[1].name, "NVIDIA H200");

  const auto found = store().find_device(a);
  ASSERT_TRUE(found);
  const DeviceRecord expected = changed;
  EXPECT_EQ(found->uuid, expected.uuid);
  EXPECT_EQ(found->name, "renamed");
  EXPECT_EQ(found->cc_major, expected.cc_major);
  EXPECT_EQ(found->cc_minor, expected.cc_minor);
  EXPECT_EQ(found->sm_count, expected.sm_count);
  EXPECT_EQ(found->clock_khz, expected.clock_khz);
  EXPECT_EQ(found->memory_clock_khz, expected.memory_clock_khz);
  EXPECT_EQ(found->memory_bus_bits, expected.memory_bus_bits);
  EXPECT_EQ(found->memory_bytes, expected.memory_bytes);
  EXPECT_EQ(found->l2_bytes, expected.l2_bytes);
  EXPECT_EQ(found->driver_version, 13010);
  EXPECT_EQ(found->runtime_version, expected.runtime_version);
  EXPECT_EQ(found->nvrtc_version, "13.1");
  EXPECT_TRUE(is_iso_utc(found->first_seen)) << found->first_seen;
  EXPECT_TRUE(is_iso_utc(found->last_seen)) << found->last_seen;
  EXPECT_LE(found->first_seen, found->last_seen);
  EXPECT_FALSE(store().find_device(a + b + 100));
}

TEST_F(StoreTest, DeviceNeedsAUuid) { EXPECT_THROW(store().upsert_device(make_device("")), cmt::InfraError); }

TEST_F(StoreTest, RunLifecycle) {
  const int64_t device = store().upsert_device(make_device("GPU-run"));
  RunRecord run;
  run.command_line = "cm-tune tune --preset presets/square.toml";
  run.preset_path = "presets/square.toml";
  run.preset_hash = "p-hash";
  run.device_id = device;
  run.status = "ignored: begin_run sets running";
  const int64_t id = store().begin_run(run);

  auto found = store().find_run(id);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->command_line, run.command_line);
  EXPECT_EQ(found->preset_path, run.preset_path);
  EXPECT_EQ(found->preset_hash, run.preset_hash);
  EXPECT_EQ(found->device_id, device);
  EXPECT_TRUE(is_iso_utc(found->started_at)) << found->started_at;
  EXPECT_EQ(found->ended_at, "");
  EXPECT_EQ(found->status, "running");

  store().end_run(id, "interrupted");
  reopen();
  found = store().find_run(id);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, "interrupted");
  EXPECT_TRUE(is_iso_utc(found->ended_at)) << found->ended_at;
  EXPECT_LE(found->started_at, found->ended_at);

  RunRecord no_device;
  no_device.command_line = "cm-tune compile";
  const int64_t other = store().begin_run(no_device);
  EXPECT_NE(other, id);
  EXPECT_EQ(store().find_run(other)->device_id, std::nullopt);

  EXPECT_THROW(store().end_run(other + 100, "done"), cmt::InfraError);
  EXPECT_THROW(store().end_run(other, "not-a-status"), cmt::InfraError);   // CHECK constraint
  EXPECT_FALSE(store().find_run(other + 100));
}

TEST_F(StoreTest, TrialRoundTripEveryField) {
  add_device_and_run();
  const TrialRecord trial = make_trial("trial-full", m_device, m_run, Problem{1024, 512, 256});
  const int64_t id = store().insert_trial(trial).id;
  EXPECT_GT(id, 0);
  reopen();
  const auto found = store().find_trial("trial-full");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  expect_same_trial(*found, trial);
}

TEST_F(StoreTest, TrialOptionalsMapToNull) {
  add_device_and_run();
  TrialRecord trial = make_trial("trial-failed", m_device, m_run, Problem{64, 64, 64});
  trial.outcome = Outcome::compile_error;
  trial.reason = "error: identifier \"foo\" is undefined";
  trial.max_abs_error.reset();
  trial.max_error_ratio.reset();
  trial.median_ms.reset();
  trial.min_ms.reset();
  trial.cv.reset();
  trial.samples.reset();
  trial.gflops.reset();
  trial.ratio_to_cublas.reset();
  trial.retime_median_ms.reset();
  trial.registers = -1;
  trial.smem_bytes = -1;
  trial.created_at = "";   // the store fills it in
  store().insert_trial(trial);

  // NULL in the database, not 0.
  cmt::Statement s = store().db().prepare(
      "SELECT count(*) FROM trials WHERE median_ms IS NULL AND samples IS NULL AND gflops IS NULL "
      "AND max_abs_error IS NULL AND retime_median_ms IS NULL");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int(0), 1);

  const auto found = store().find_trial("trial-failed");
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->median_ms.has_value());
  EXPECT_FALSE(found->samples.has_value());
  EXPECT_FALSE(found->retime_median_ms.has_value());
  EXPECT_TRUE(is_iso_utc(found->created_at)) << found->created_at;
  trial.created_at = found->created_at;
  expect_same_trial(*found, trial);
}

TEST_F(StoreTest, EveryOutcomeIsStorable) {
  add_device_and_run();
  const std::vector<Outcome> outcomes{Outcome::ok,      Outcome::compile_error, Outcome::launch_error,
                                      Outcome::wrong,   Outcome::abandoned,     Outcome::skipped,
                                      Outcome::crashed, Outcome::timeout};
  for (const Outcome outcome : outcomes) {
    TrialRecord t = make_trial("o-" + std::string(cmt::to_string(outcome)), m_device, m_run, Problem{8, 8, 8});
    t.outcome = outcome;
    store().insert_trial(t);
  }
  for (const Outcome outcome : outcomes) {
    const auto found = store().find_trial("o-" + std::string(cmt::to_string(outcome)));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->outcome, outcome);
  }
  // The CHECK constraint rejects anything else.
  EXPECT_THROW(store().db().exec("UPDATE trials SET outcome = 'fast' WHERE trial_key = 'o-ok'"), cmt::InfraError);
}

TEST_F(StoreTest, ReMeasuringAKeyUpdatesItInPlaceAndDropsWinnersOfAFailure) {
  add_device_and_run();
  const Problem problem{256, 256, 256};
  const int64_t first = store().insert_trial(make_trial("same-key", m_device, m_run, problem)).id;
  const int64_t other = store().insert_trial(make_trial("other-key", m_device, m_run, problem)).id;
  store().put_winner(make_winner(m_device, problem, "overall", first));
  store().put_winner(make_winner(m_device, problem, "portable", other));

  TrialRecord faster = make_trial("same-key", m_device, m_run, problem);
  faster.median_ms = 0.05;
  EXPECT_EQ(store().insert_trial(faster).id, first) << "the id stays";
  EXPECT_EQ(store().find_trial("same-key")->median_ms, 0.05);
  EXPECT_EQ(store().winners(m_device, problem).size(), 2u) << "a passing re-measurement keeps the winners";

  TrialRecord retuned = make_trial("same-key", m_device, m_run, problem);
  retuned.outcome = Outcome::wrong;
  retuned.median_ms.reset();
  const TrialRecord stored = store().insert_trial(retuned);
  EXPECT_EQ(stored.id, first);
  EXPECT_EQ(stored.outcome, Outcome::wrong);
  const auto found = store().find_trial("same-key");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, first);
  EXPECT_EQ(found->outcome, Outcome::wrong);
  EXPECT_EQ(store().trials(m_device).size(), 2u);

  // The winner derived from the failed measurement is gone; the other one stays.
  const auto winners = store().winners(m_device, problem);
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].scope, "portable");
  EXPECT_EQ(winners[0].trial_id, other);
}

TEST_F(StoreTest, APassingTrialIsKeptOverAnAbandonedOrSkippedOne) {
  add_device_and_run();
  const Problem problem{8, 8, 8};
  TrialRecord timed = make_trial("k", m_device, m_run, problem);
  timed.median_ms = 0.25;
  const int64_t id = store().insert_trial(timed).id;
  store().put_winner(make_winner(m_device, problem, "overall", id));
  for (const Outcome slower : {Outcome::abandoned, Outcome::skipped}) {
    TrialRecord late = make_trial("k", m_device, m_run, problem);
    late.outcome = slower;
    late.median_ms.reset();
    const TrialRecord stored = store().insert_trial(late);
    EXPECT_EQ(stored.id, id);
    EXPECT_EQ(stored.outcome, Outcome::ok) << "the row as stored comes back";
    EXPECT_EQ(stored.median_ms, 0.25);
    EXPECT_EQ(store().find_trial("k")->outcome, Outcome::ok);
  }
  EXPECT_EQ(store().winners(m_device, problem).size(), 1u);
}

TEST_F(StoreTest, TrialsNeedAnExistingDeviceAndRun) {
  add_device_and_run();
  EXPECT_THROW(store().insert_trial(make_trial("bad-device", m_device + 100, m_run, Problem{8, 8, 8})),
               cmt::InfraError);
  EXPECT_THROW(store().insert_trial(make_trial("bad-run", m_device, m_run + 100, Problem{8, 8, 8})),
               cmt::InfraError);
  EXPECT_FALSE(store().find_trial("bad-device"));
  EXPECT_FALSE(store().find_trial("bad-run"));
}

TEST_F(StoreTest, TrialsFilterByProblemAndTunedProblemsAreSorted) {
  add_device_and_run();
  const int64_t other_device = store().upsert_device(make_device("GPU-other"));
  const Problem big{4096, 4096, 4096};
  const Problem small{128, 256, 64};
  const Problem tall{4096, 128, 64};
  const int64_t t1 = store().insert_trial(make_trial("t1", m_device, m_run, big)).id;
  const int64_t t2 = store().insert_trial(make_trial("t2", m_device, m_run, small)).id;
  const int64_t t3 = store().insert_trial(make_trial("t3", m_device, m_run, big)).id;
  store().insert_trial(make_trial("t4", m_device, m_run, tall));
  store().insert_trial(make_trial("t5", other_device, m_run, Problem{1, 2, 3}));

  const auto all = store().trials(m_device);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].id, t1);
  EXPECT_EQ(all[1].id, t2);

  const auto of_big = store().trials(m_device, big);
  ASSERT_EQ(of_big.size(), 2u);
  EXPECT_EQ(of_big[0].id, t1);
  EXPECT_EQ(of_big[1].id, t3);
  EXPECT_TRUE(store().trials(m_device, Problem{1, 2, 3}).empty());

  EXPECT_EQ(store().tuned_problems(m_device), (std::vector<Problem>{small, tall, big}));
  EXPECT_EQ(store().tuned_problems(other_device), (std::vector<Problem>{Problem{1, 2, 3}}));
  EXPECT_TRUE(store().tuned_problems(other_device + 100).empty());
}

TEST_F(StoreTest, SetRetimeUpdatesOneTrial) {
  add_device_and_run();
  const int64_t id = store().insert_trial(make_trial("r", m_device, m_run, Problem{8, 8, 8})).id;
  store().set_retime(id, 0.75, 1.25);
  const auto found = store().find_trial("r");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->retime_median_ms, 0.75);
  EXPECT_EQ(found->ratio_to_cublas, 1.25);
  EXPECT_EQ(found->median_ms, 0.1) << "the original measurement is kept";
  EXPECT_THROW(store().set_retime(id + 100, 1.0, 1.0), cmt::InfraError);
}

TEST_F(StoreTest, BaselineRoundTripAndReplace) {
  add_device_and_run();
  const Problem problem{2048, 1024, 512};
  BaselineRecord b;
  b.device_id = m_device;
  b.problem = problem;
  b.lda = 516;
  b.ldb = 1028;
  b.ldc = 1032;
  b.median_ms = 0.3141592653589793;
  b.min_ms = 0.3;
  b.cv = 0.01;
  b.samples = 50;
  b.gflops = 6836.02;
  b.run_id = m_run;
  b.created_at = "2025-02-01T00:00:00Z";
  store().put_baseline(b);
  reopen();

  auto found = store().find_baseline(m_device, problem);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->device_id, b.device_id);
  EXPECT_EQ(found->problem, b.problem);
  EXPECT_EQ(found->lda, b.lda);
  EXPECT_EQ(found->ldb, b.ldb);
  EXPECT_EQ(found->ldc, b.ldc);
  EXPECT_EQ(found->median_ms, b.median_ms);
  EXPECT_EQ(found->min_ms, b.min_ms);
  EXPECT_EQ(found->cv, b.cv);
  EXPECT_EQ(found->samples, b.samples);
  EXPECT_EQ(found->gflops, b.gflops);
  EXPECT_EQ(found->run_id, b.run_id);
  EXPECT_EQ(found->created_at, b.created_at);
  EXPECT_FALSE(store().find_baseline(m_device, Problem{2048, 1024, 513}));

  b.median_ms = 0.29;
  b.created_at = "";
  store().put_baseline(b);
  found = store().find_baseline(m_device, problem);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->median_ms, 0.29);
  EXPECT_TRUE(is_iso_utc(found->created_at)) << found->created_at;
  cmt::Statement count = store().db().prepare("SELECT count(*) FROM baselines");
  ASSERT_TRUE(count.step());
  EXPECT_EQ(count.column_int(0), 1);
}

TEST_F(StoreTest, WinnersRoundTripReplaceFilterAndClear) {
  add_device_and_run();
  const int64_t other_device = store().upsert_device(make_device("GPU-other"));
  const Problem p1{512, 512, 512};
  const Problem p2{1024, 1024, 1024};
  const int64_t t1 = store().insert_trial(make_trial("w1", m_device, m_run, p1)).id;
  const int64_t t2 = store().insert_trial(make_trial("w2", m_device, m_run, p1)).id;
  const int64_t t3 = store().insert_trial(make_trial("w3", m_device, m_run, p2)).id;
  const int64_t t4 = store().insert_trial(make_trial("w4", other_device, m_run, p1)).id;

  WinnerRecord overall = make_winner(m_device, p1, "overall", t1);
  WinnerRecord portable = make_winner(m_device, p1, "portable", t2);
  portable.requirements = cmt::Requirements{};
  store().put_winner(portable);
  store().put_winner(overall);
  store().put_winner(make_winner(m_device, p2, "overall", t3));
  store().put_winner(make_winner(other_device, p1, "blocktile2d", t4));
  reopen();

  auto of_p1 = store().winners(m_device, p1);
  ASSERT_EQ(of_p1.size(), 2u);
  expect_same_winner(of_p1[0], overall);   // sorted by scope
  expect_same_winner(of_p1[1], portable);
  EXPECT_EQ(store().winners().size(), 4u);
  EXPECT_EQ(store().winners(m_device).size(), 3u);
  EXPECT_EQ(store().winners(std::nullopt, p1).size(), 3u);

  // Same device x problem x scope replaces.
  WinnerRecord better = make_winner(m_device, p1, "overall", t2);
  better.median_ms = 0.2;
  better.shape.tile_m = 64;
  store().put_winner(better);
  of_p1 = store().winners(m_device, p1);
  ASSERT_EQ(of_p1.size(), 2u);
  expect_same_winner(of_p1[0], better);

  store().clear_winners(m_device, p1);
  EXPECT_TRUE(store().winners(m_device, p1).empty());
  EXPECT_EQ(store().winners(m_device, p2).size(), 1u);
  EXPECT_EQ(store().winners(other_device, p1).size(), 1u);
}

TEST_F(StoreTest, ContentHashIsStableAndFollowsWinners) {
  add_device_and_run();
  const Problem problem{512, 256, 128};
  const int64_t trial = store().insert_trial(make_trial("h", m_device, m_run, problem)).id;
  store().put_winner(make_winner(m_device, problem, "overall", trial));
  BaselineRecord b;
  b.device_id = m_device;
  b.problem = problem;
  b.median_ms = 0.5;
  b.run_id = m_run;
  store().put_baseline(b);

  const std::string hash = store().content_hash();
  EXPECT_EQ(hash.size(), 32u);
  EXPECT_EQ(store().content_hash(), hash);
  reopen();
  EXPECT_EQ(store().content_hash(), hash);

  // Timestamps and data export does not read leave it alone.
  store().upsert_device(make_device("GPU-0000-aaaa"));
  store().insert_trial(make_trial("unrelated", m_device, m_run, Problem{8, 8, 8}));
  EXPECT_EQ(store().content_hash(), hash);

  // Every winner field export uses takes part: each single change gives a new hash.
  const std::vector<std::pair<std::string, std::function<void(WinnerRecord&)>>> changes{
      {"params", [](WinnerRecord& w) { w.params += ",X=1"; }},
      {"name_expression", [](WinnerRecord& w) { w.name_expression += " "; }},
      {"gflops", [](WinnerRecord& w) { w.gflops += 1e-9; }},
      {"ratio_to_cublas", [](WinnerRecord& w) { w.ratio_to_cublas = 1.5; }},
      {"align_bytes", [](WinnerRecord& w) { w.requirements.align_bytes = 8; }},
      {"ld_multiple", [](WinnerRecord& w) { w.requirements.ld_multiple = 2; }},
      {"threads", [](WinnerRecord& w) { w.shape.threads = 128; }},
      {"tile_m", [](WinnerRecord& w) { w.shape.tile_m = 32; }},
      {"tile_n", [](WinnerRecord& w) { w.shape.tile_n = 32; }},
      {"dynamic_smem", [](WinnerRecord& w) { w.shape.dynamic_smem = 0; }},
      {"problems_per_block", [](WinnerRecord& w) { w.shape.problems_per_block = 4; }},
      {"binary_key", [](WinnerRecord& w) { w.binary_key = "other-binary"; }},
      {"median_ms", [](WinnerRecord& w) { w.median_ms = 0.2500001; }},
  };
  std::set<std::string> seen{hash};
  for (const auto& [field, change] : changes) {
    WinnerRecord changed = make_winner(m_device, problem, "overall", trial);
    change(changed);
    store().put_winner(changed);
    EXPECT_TRUE(seen.insert(store().content_hash()).second) << "changing " << field << " kept an old hash";
  }
  const std::string after_winner = store().content_hash();
  EXPECT_NE(after_winner, hash);

  b.gflops = 1.0;
  store().put_baseline(b);
  EXPECT_NE(store().content_hash(), after_winner);

  // Putting the original content back restores the original hash.
  store().put_winner(make_winner(m_device, problem, "overall", trial));
  b.gflops = 0;
  store().put_baseline(b);
  EXPECT_EQ(store().content_hash(), hash);
}

TEST(StoreFile, SameContentHashesTheSameWhateverTheRowIds) {
  cmt::test::TempDir dir;
  Store a(dir / "a.db");
  Store b(dir / "b.db");
  // Both files end up with the same devices, winner and content, but inserted in another order
  // (and b has an extra trial), so device ids and trial ids differ between them.
  const auto fill = [](Store& store, bool extra_first) {
    if (extra_first) store.upsert_device(make_device("GPU-extra"));
    const int64_t device = store.upsert_device(make_device("GPU-main"));
    if (!extra_first) store.upsert_device(make_device("GPU-extra"));
    RunRecord run;
    const int64_t run_id = store.begin_run(run);
    if (extra_first) store.insert_trial(make_trial("padding", device, run_id, Problem{1, 1, 1}));
    const Problem problem{64, 64, 64};
    const int64_t trial = store.insert_trial(make_trial("x", device, run_id, problem)).id;
    store.put_winner(make_winner(device, problem, "overall", trial));
  };
  fill(a, false);
  fill(b, true);
  EXPECT_NE(a.winners()[0].trial_id, b.winners()[0].trial_id);
  EXPECT_NE(a.winners()[0].device_id, b.winners()[0].device_id);
  EXPECT_EQ(a.content_hash(), b.content_hash());
}

TEST(StoreFile, TrialsPersistAcrossReopen) {
  cmt::test::TempDir dir;
  const fs::path file = dir / "persist" / "cm-tune.db";
  std::vector<TrialRecord> written;
  {
    Store store(file);
    const int64_t device = store.upsert_device(make_device("GPU-persist"));
    RunRecord run;
    run.device_id = device;
    const int64_t run_id = store.begin_run(run);
    for (int i = 0; i < 5; ++i) {
      TrialRecord t = make_trial("persist-" + std::to_string(i), device, run_id, Problem{128 * (i + 1), 64, 32});
      t.median_ms = 0.01 * (i + 1);
      t.id = store.insert_trial(t).id;
      written.push_back(t);
    }
    store.end_run(run_id, "done");
  }
  EXPECT_TRUE(fs::exists(file));

  Store store(file);
  for (const TrialRecord& t : written) {
    const auto found = store.find_trial(t.trial_key);
    ASSERT_TRUE(found) << t.trial_key;
    EXPECT_EQ(found->id, t.id);
    expect_same_trial(*found, t);
  }
  EXPECT_FALSE(store.find_trial("persist-9"));
}

TEST(StoreFile, Version1DatabaseGainsGridZAndKeepsItsRows) {
  // A database written before migration 2 (no grid_z columns) opens with every row intact and z = 1.
  cmt::test::TempDir dir;
  const fs::path file = dir / "v1.db";
  TrialRecord trial;
  WinnerRecord winner;
  {
    Store store(file);
    const int64_t device = store.upsert_device(make_device("GPU-v1"));
    RunRecord run;
    run.device_id = device;
    const int64_t run_id = store.begin_run(run);
    trial = make_trial("v1-trial", device, run_id, Problem{256, 256, 256});
    trial.id = store.insert_trial(trial).id;
    winner = make_winner(device, trial.problem, "overall", trial.id);
    store.put_winner(winner);
  }
  cmt::test::downgrade_schema(file, 1);
  Store store(file);
  EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
  const auto found = store.find_trial("v1-trial");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->shape.grid_z, 1);
  trial.shape.grid_z = 1;
  expect_same_trial(*found, trial);
  const auto winners = store.winners(found->device_id, trial.problem);
  ASSERT_EQ(winners.size(), 1u);
  winner.shape.grid_z = 1;
  expect_same_winner(winners[0], winner);
}

TEST(StoreFile, ADatabaseWithoutThePrecisionClassKeepsItsRowsAndThenTakesTf32x3) {
  // Migration 7 rebuilt trials, baselines and winners to admit the tf32x3 class, and gave trials
  // the FP32 SIMT reference's error: every row and id stays, the new column is NULL on old rows,
  // and the class can then be stored and read back with it.
  cmt::test::TempDir dir;
  const fs::path file = dir / "v6.db";
  cmt::test::tuned_database(file, "GPU-v6");
  cmt::test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(cmt::test::expect_migration_keeps_trials(file, 6, "trials", "simt_error_ratio", m));
  ASSERT_EQ(m.after.size(), m.before.size());
  for (size_t i = 0; i < m.after.size(); ++i) {
    EXPECT_EQ(m.after[i].id, m.before[i].id);
    EXPECT_FALSE(m.after[i].simt_error_ratio.has_value());
  }
  Store store(file);
  const int64_t device = store.upsert_device(make_device("GPU-v6"));
  const int64_t run = store.begin_run(RunRecord{});
  Problem p{512, 512, 512};
  p.dtype = cmt::DType::tf32x3;
  TrialRecord t = make_trial("tf32x3-trial", device, run, p);
  t.max_error_ratio = 0.01;
  t.simt_error_ratio = 0.03;
  t.id = store.insert_trial(t).id;
  EXPECT_GT(t.id, m.after.back().id);
  const auto found = store.find_trial("tf32x3-trial");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->problem.dtype, cmt::DType::tf32x3);
  EXPECT_EQ(found->simt_error_ratio, 0.03);
  EXPECT_EQ(store.trials(device, p).size(), 1u);
  Problem f32 = p;
  f32.dtype = cmt::DType::f32;
  EXPECT_TRUE(store.trials(device, f32).empty()) << "the class is part of the problem's key";
}

TEST(StoreFile, ADatabaseWithThreadsTwiceKeepsEachTrialsThreadsOnce) {
  // Before migration 6 a trial stored its threads per block twice (threads, shape_threads); the
  // launch shape's column stays, named threads, with every row's value.
  cmt::test::TempDir dir;
  const fs::path file = dir / "v5.db";
  cmt::test::tuned_database(file, "GPU-v5");
  cmt::test::MigratedTrials m;
  ASSERT_NO_FATAL_FAILURE(
      cmt::test::expect_migration_keeps_trials(file, 5, "trials", "shape_threads", m, /*removed=*/true));
  for (size_t i = 0; i < m.after.size(); ++i) {
    EXPECT_GT(m.after[i].shape.threads, 0);
    EXPECT_EQ(m.after[i].shape.threads, m.before[i].shape.threads);
  }
}

TEST(StoreFile, CommittedTrialsAreVisibleToAnotherConnection) {
  cmt::test::TempDir dir;
  const fs::path file = dir / "shared.db";
  Store writer(file);
  Store reader(file);
  const int64_t device = writer.upsert_device(make_device("GPU-shared"));
  const int64_t run = writer.begin_run(RunRecord{});
  writer.insert_trial(make_trial("seen", device, run, Problem{8, 8, 8}));
  // Each insert commits on its own: the other connection sees it without any explicit commit.
  const auto found = reader.find_trial("seen");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->device_id, device);
}

TEST(StoreFile, InsertInsideACallerTransactionRollsBackWithIt) {
  cmt::test::TempDir dir;
  Store store(dir / "tx.db");
  const int64_t device = store.upsert_device(make_device("GPU-tx"));
  const int64_t run = store.begin_run(RunRecord{});
  {
    cmt::Transaction transaction(store.db());
    store.insert_trial(make_trial("rolled-back", device, run, Problem{8, 8, 8}));
    store.put_source(SourceRecord{"src", "t", "t.cu", "text", {{"h.cuh", "h"}}});
    EXPECT_TRUE(store.find_trial("rolled-back"));
  }   // no commit
  EXPECT_FALSE(store.find_trial("rolled-back"));
  EXPECT_FALSE(store.find_source("src"));
}

TEST(StoreFile, InMemoryDatabaseWorks) {
  Store store(":memory:");
  EXPECT_EQ(store.schema_version(), cmt::latest_schema_version());
  EXPECT_GT(store.upsert_device(make_device("GPU-mem")), 0);
}

TEST(StoreSqlite, ErrorsNameTheCallAndTheLibraryMessage) {
  cmt::test::TempDir dir;
  cmt::Database db(dir / "errors.db");
  try {
    db.prepare("SELECT * FROM missing_table");
    FAIL() << "prepare did not throw";
  } catch (const cmt::InfraError& e) {
    EXPECT_EQ(e.library(), "SQLite");
    EXPECT_EQ(e.call(), "sqlite3_prepare_v2(SELECT * FROM missing_table)");
    EXPECT_EQ(e.library_message(), "no such table: missing_table");
    EXPECT_NE(std::string(e.what()).find("sqlite.cpp:"), std::string::npos) << e.what();
  }
  // Two statements in one prepare would silently drop the second.
  EXPECT_THROW(db.prepare("SELECT 1; SELECT 2"), cmt::InfraError);
  EXPECT_NO_THROW(db.prepare("SELECT 1; -- trailing comment"));

  db.exec("CREATE TABLE t (x INTEGER NOT NULL UNIQUE)");
  cmt::Statement insert = db.prepare("INSERT INTO t VALUES (?)");
  insert.bind(1, int64_t{1}).run();
  insert.reset();
  insert.bind(1, int64_t{1});
  EXPECT_THROW(insert.run(), cmt::InfraError);
  // After a failed step the statement can be used again.
  insert.reset();
  insert.bind(1, int64_t{2}).run();

  cmt::Statement select = db.prepare("SELECT x FROM t ORDER BY x");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_int(0), 1);
  EXPECT_THROW(select.column_int(1), cmt::InfraError);   // no such column
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_int(0), 2);
  EXPECT_FALSE(select.step());
}

TEST(StoreSqlite, EmptyStringsAndBlobsAreNotNull) {
  cmt::Database db(":memory:");
  db.exec("CREATE TABLE t (s TEXT, b BLOB)");
  db.prepare("INSERT INTO t VALUES (?, ?)").bind(1, std::string_view{}).bind(2, std::vector<char>{}).run();
  cmt::Statement s = db.prepare("SELECT s IS NULL, b IS NULL, typeof(s), typeof(b), s, b FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int(0), 0);
  EXPECT_EQ(s.column_int(1), 0);
  EXPECT_EQ(s.column_text(2), "text");
  EXPECT_EQ(s.column_text(3), "blob");
  EXPECT_EQ(s.column_text(4), "");
  EXPECT_TRUE(s.column_blob(5).empty());
}

TEST(StoreSqlite, BindColumnCopiesAValueAsItIsStoredBetweenDatabases) {
  cmt::Database from(":memory:");
  cmt::Database to(":memory:");
  from.exec("CREATE TABLE t (v)");
  to.exec("CREATE TABLE t (v)");
  const double third = 1.0 / 3.0;
  cmt::Statement insert = from.prepare("INSERT INTO t VALUES (?)");
  insert.bind(1, int64_t{-7}).run();
  insert.bind(1, third).run();
  insert.bind(1, std::string_view("a\0b", 3)).run();
  insert.bind(1, std::vector<char>{'\x7f', 'E', '\0'}).run();
  insert.bind_null(1).run();
  cmt::Statement rows = from.prepare("SELECT v FROM t ORDER BY rowid");
  cmt::Statement copy = to.prepare("INSERT INTO t VALUES (?)");
  while (rows.step()) copy.bind_column(1, rows, 0).run();
  EXPECT_THROW(copy.bind_column(1, rows, 0), cmt::InfraError) << "no current row";
  cmt::Statement got = to.prepare("SELECT typeof(v), v FROM t ORDER BY rowid");
  const std::vector<std::string> types = {"integer", "real", "text", "blob", "null"};
  for (const auto& type : types) {
    ASSERT_TRUE(got.step());
    EXPECT_EQ(got.column_text(0), type);
  }
  got.reset();
  ASSERT_TRUE(got.step());
  EXPECT_EQ(got.column_int(1), -7);
  ASSERT_TRUE(got.step());
  EXPECT_EQ(got.column_double(1), third) << "every bit of a REAL";
  ASSERT_TRUE(got.step());
  EXPECT_EQ(got.column_text(1), std::string("a\0b", 3));
  ASSERT_TRUE(got.step());
  EXPECT_EQ(got.column_blob(1), (std::vector<char>{'\x7f', 'E', '\0'}));
}

TEST(StoreSqlite, TransactionRollsBackUnlessCommitted) {
  cmt::test::TempDir dir;
  cmt::Database db(dir / "tx.db");
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    cmt::Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (1)");
  }
  {
    cmt::Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (2)");
    transaction.commit();
  }
  cmt::Statement s = db.prepare("SELECT group_concat(x) FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_text(0), "2");
}

}  // namespace
