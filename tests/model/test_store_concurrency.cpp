// Several processes on one database (issue 18, "Databases"): creating a new file at the same time
// never fails, a lock is waited for up to the lock timeout and the error names who holds it, and
// /proc/locks tells the holder. Real processes and threads with their own connections; no mocks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "store/lock_holder.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_store_processes.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace cmt {
namespace {

constexpr int k_openers = 8;
constexpr int k_rounds = 20;

/// Sets CMTUNE_LOCK_TIMEOUT for a test and restores it.
class LockTimeout {
 public:
  explicit LockTimeout(const char* seconds) {
    if (const char* old = std::getenv("CMTUNE_LOCK_TIMEOUT")) m_old = old;
    setenv("CMTUNE_LOCK_TIMEOUT", seconds, 1);
  }
  ~LockTimeout() {
    if (m_old)
      setenv("CMTUNE_LOCK_TIMEOUT", m_old->c_str(), 1);
    else
      unsetenv("CMTUNE_LOCK_TIMEOUT");
  }

 private:
  std::optional<std::string> m_old;
};

/// Opens the store as tune does and records a device: the whole setup of a new file, then a write.
void open_and_write(const fs::path& file, int opener) {
  Store store(file);
  DeviceRecord d;
  d.uuid = "GPU-" + std::to_string(opener);
  d.name = "Test GPU";
  store.upsert_device(d);
}

void expect_complete(const fs::path& file) {
  Store store(file, OpenMode::read);
  EXPECT_EQ(store.schema_version(), latest_schema_version());
  EXPECT_EQ(store.devices().size(), static_cast<size_t>(k_openers)) << file;
}

TEST(StoreConcurrency, ProcessesCreatingOneNewFileAllSucceed) {
  test::TempDir dir;
  for (int round = 0; round < k_rounds; ++round) {
    const fs::path file = dir / ("new-" + std::to_string(round) + ".db");
    std::vector<pid_t> children;
    for (int i = 0; i < k_openers; ++i) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        int code = 0;
        try {
          open_and_write(file, i);
        } catch (const std::exception& e) {
          fprintf(stderr, "opener %d: %s\n", i, e.what());
          code = 1;
        }
        ::_exit(code);
      }
      children.push_back(pid);
    }
    for (const pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": an opener failed";
    }
    expect_complete(file);
  }
}

TEST(StoreConcurrency, ThreadsCreatingOneNewFileAllSucceed) {
  test::TempDir dir;
  for (int round = 0; round < k_rounds; ++round) {
    const fs::path file = dir / ("new-" + std::to_string(round) + ".db");
    std::vector<std::string> failures(k_openers);
    std::vector<std::thread> threads;
    for (int i = 0; i < k_openers; ++i)
      threads.emplace_back([&, i] {
        try {
          open_and_write(file, i);
        } catch (const std::exception& e) {
          failures[static_cast<size_t>(i)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (const auto& f : failures) EXPECT_EQ(f, "") << "round " << round;
    expect_complete(file);
  }
}

TEST(StoreConcurrency, WriterGivesUpAfterTheLockTimeoutNamingTheHolder) {
  test::TempDir dir;
  const fs::path file = dir / "locked.db";
  Store(file).upsert_device(DeviceRecord{0, "GPU-1"});
  const LockTimeout timeout("1.5");
  // Forked before this process opens the file: a child must not inherit SQLite's state of it.
  test::DatabaseHolder holder(file, test::DatabaseHolder::Hold::write_lock);
  Store store(file, OpenMode::write);
  const auto start = steady_clock::now();
  try {
    Transaction transaction(store.db());
    FAIL() << "the write lock was granted while another process held it";
  } catch (const DatabaseError& e) {
    const auto waited = steady_clock::now() - start;
    EXPECT_TRUE(e.busy());
    EXPECT_TRUE(e.timed_out());
    const std::string expected_start =
        "database " + file.string() + " is locked by process " + std::to_string(holder.pid()) + " (cmt_model_tests";
    EXPECT_EQ(std::string(e.what()).rfind(expected_start, 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("; gave up after 1.5 s (CMTUNE_LOCK_TIMEOUT sets how long to wait)"),
              std::string::npos)
        << e.what();
    EXPECT_GE(waited, milliseconds(1500));
    EXPECT_LT(waited, milliseconds(5000));
  }
  EXPECT_EQ(holder.wait(), 0);
  // Released: the same store writes now.
  EXPECT_NO_THROW(store.upsert_device(DeviceRecord{0, "GPU-2"}));
}

TEST(StoreConcurrency, WriterWaitsForALockReleasedBeforeTheTimeout) {
  test::TempDir dir;
  const fs::path file = dir / "busy.db";
  Store(file).upsert_device(DeviceRecord{0, "GPU-1"});
  const LockTimeout timeout("60");
  test::DatabaseHolder holder(file, test::DatabaseHolder::Hold::write_lock);
  Store store(file, OpenMode::write);
  // The write runs on a thread and must not return before the holder lets go. Whether it has
  // started waiting when the lock is released does not matter (no time is assumed): it cannot
  // write before, and it must write after.
  std::atomic<bool> released{false};
  bool wrote_after_release = false;
  std::string error;
  std::thread writer([&] {
    try {
      store.upsert_device(DeviceRecord{0, "GPU-2"});
      wrote_after_release = released;
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(milliseconds(300));   // most runs: the write is waiting by now
  released = true;
  EXPECT_EQ(holder.wait(), 0);
  writer.join();
  ASSERT_EQ(error, "");
  EXPECT_TRUE(wrote_after_release) << "the write did not wait for the holder";
  EXPECT_EQ(store.devices().size(), 2u);
}

TEST(StoreConcurrency, ZeroTimeoutFailsAtOnce) {
  test::TempDir dir;
  const fs::path file = dir / "now.db";
  Store(file).upsert_device(DeviceRecord{0, "GPU-1"});
  const LockTimeout timeout("0");
  test::DatabaseHolder holder(file, test::DatabaseHolder::Hold::write_lock);
  Store store(file, OpenMode::write);
  const auto start = steady_clock::now();
  const std::string message = test::usage_error([&] { Transaction transaction(store.db()); });
  EXPECT_NE(message.find("gave up after 0 s"), std::string::npos) << message;
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
}

TEST(StoreConcurrency, HolderInThisProcessIsNamedAsSuch) {
  test::TempDir dir;
  const fs::path file = dir / "self.db";
  Store first(file);
  Transaction holding(first.db());
  const LockTimeout timeout("0.2");
  Store second(file, OpenMode::write);
  EXPECT_EQ(test::usage_error([&] { Transaction transaction(second.db()); }),
            "database " + file.string() +
                " is locked by another connection in this process; gave up after 0.2 s (CMTUNE_LOCK_TIMEOUT sets how "
                "long to wait)");
}

TEST(StoreConcurrency, ReadersDoNotWaitForAWriter) {
  test::TempDir dir;
  const fs::path file = dir / "wal.db";
  Store(file).upsert_device(DeviceRecord{0, "GPU-1"});
  const LockTimeout timeout("0");
  test::DatabaseHolder holder(file, test::DatabaseHolder::Hold::write_lock);
  Store reader(file, OpenMode::read);
  EXPECT_EQ(reader.devices().size(), 1u);
}

TEST(LockHolder, WalWriterIsFoundWithItsCommandLine) {
  test::TempDir dir;
  const fs::path file = dir / "wal.db";
  Store(file).upsert_device(DeviceRecord{0, "GPU-1"});
  {
    test::DatabaseHolder open(file, test::DatabaseHolder::Hold::open);
    EXPECT_FALSE(find_lock_holder(file)) << "an open connection holds nothing a writer waits for";
    EXPECT_EQ(processes_using(file), std::vector<int>{open.pid()});
  }
  test::DatabaseHolder writer(file, test::DatabaseHolder::Hold::write_lock);
  const auto holder = find_lock_holder(file);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, writer.pid());
  EXPECT_TRUE(holder->writer);
  const std::string described = describe_process(writer.pid());
  EXPECT_EQ(described.rfind("process " + std::to_string(writer.pid()) + " (cmt_model_tests", 0), 0u) << described;
  EXPECT_LE(described.size(), 100u + 30u) << "the command line is shortened";
  writer.wait();
  EXPECT_FALSE(find_lock_holder(file));
  EXPECT_EQ(processes_using(file), std::vector<int>{});
}

TEST(LockHolder, RollbackJournalWriterIsFound) {
  test::TempDir dir;
  const fs::path file = dir / "journal.db";
  Database(file).exec("CREATE TABLE t (x)");   // never switched to WAL: the locks are in the file
  test::DatabaseHolder writer(file, test::DatabaseHolder::Hold::write_lock);
  const auto holder = find_lock_holder(file);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, writer.pid());
  EXPECT_TRUE(holder->writer);
}

TEST(LockHolder, ProcessWithoutCommandLineIsNamedByItsId) {
  EXPECT_EQ(describe_process(0), "another process");
  EXPECT_EQ(describe_process(999999999), "process 999999999");
}

}  // namespace
}  // namespace cmt
