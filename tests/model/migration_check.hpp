// Migration round trips: a tuned database rewritten to an older schema by test::downgrade_schema (the
// exact reverse of the migrations) and opened again, which migrates it back. Shared by the tests of
// each migration; each checks what its own migration added on the rows this returns.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt::test {

/// The trials of the database's first device, before the downgrade and after the migration back.
struct MigratedTrials {
  std::vector<TrialRecord> before, after;
};

/// Rewrites `file` to schema `version`, checks that `table` has no column `column` there (or, for a
/// migration that removes a column, `removed`, that it has it there and not after) and that the file
/// says `version`, then opens it with Store and checks that it is at the latest schema, hashes the
/// same, and holds the same trials (keys and problems, in order). Fatal failures return early: call
/// it inside ASSERT_NO_FATAL_FAILURE.
inline void expect_migration_keeps_trials(const std::filesystem::path& file, int version, const std::string& table,
                                          const std::string& column, MigratedTrials& out, bool removed = false) {
  const auto has_column = [&](Database& db) {
    Statement s = db.prepare(fmt::format("SELECT count(*) FROM pragma_table_info('{}') WHERE name = ?", table));
    s.bind(1, std::string_view(column));
    EXPECT_TRUE(s.step());
    return s.column_int(0) != 0;
  };
  std::string hash_before;
  {
    Store store(file);
    hash_before = store.content_hash();
    out.before = store.trials(store.devices().at(0).id);
  }
  ASSERT_FALSE(out.before.empty());
  downgrade_schema(file, version);
  {
    Database db(file);
    ASSERT_EQ(has_column(db), removed) << "the downgraded file " << (removed ? "has" : "has no") << " " << table << "."
                                       << column << " column";
    Statement v = db.prepare("PRAGMA user_version");
    ASSERT_TRUE(v.step());
    ASSERT_EQ(v.column_int(0), version);
  }
  Store store(file);
  if (removed) EXPECT_FALSE(has_column(store.db())) << "the migration removes " << table << "." << column;
  EXPECT_EQ(store.schema_version(), latest_schema_version());
  EXPECT_EQ(store.content_hash(), hash_before) << "the same results hash the same after the migration";
  out.after = store.trials(store.devices().at(0).id);
  ASSERT_EQ(out.after.size(), out.before.size());
  for (size_t i = 0; i < out.after.size(); ++i) {
    EXPECT_EQ(out.after[i].trial_key, out.before[i].trial_key);
    EXPECT_EQ(out.after[i].problem, out.before[i].problem);
  }
}

}  // namespace cmt::test
