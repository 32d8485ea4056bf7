// Merging databases (store/merge.hpp, `cm-tune db merge`): the tables that record where merged
// rows came from, and the migration that adds them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "migration_check.hpp"
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
