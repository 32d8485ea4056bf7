// MeasurerPool (measure/measurer_pool.hpp) with measurers that need no GPU: jobs run once each, on
// the caller's thread with one member and spread over the members with several; a member whose
// process keeps failing is taken out once the others run its jobs cleanly, and one that fails on
// jobs that fail everywhere is not; an error from a member's machinery takes it out where others
// remain and reaches the caller where none does; cancel drops what has not started.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "measure/measurer_pool.hpp"

namespace cmt {
namespace {

/// A measurer whose process "fails" (faults() rises) on every job when faulty, or on the jobs
/// marked bad; records which jobs ran on it.
class FakeMeasurer final : public Measurer {
 public:
  explicit FakeMeasurer(bool faulty = false, bool throws = false) : m_faulty(faulty), m_throws(throws) {}
  Measurement measure(const KernelUnderTest&, const Problem&, const MeasureLimits&) override { return {}; }
  SampleStats measure_cublas(const Problem&) override { return {}; }
  std::vector<RetimeResult> retime(const std::vector<KernelUnderTest>&, const Problem&, double) override { return {}; }
  bool context_lost() const override { return false; }
  int64_t faults() const override { return m_faults; }
  /// What a job does on this measurer: sleeps a little, fails where it should.
  void work(uint64_t id, bool bad) {
    if (m_throws) throw std::runtime_error("the measuring process cannot start");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    {
      std::lock_guard lock(m_mutex);
      m_ran.push_back(id);
    }
    if (m_faulty || bad) ++m_faults;
  }
  std::vector<uint64_t> ran() const {
    std::lock_guard lock(m_mutex);
    return m_ran;
  }

 private:
  bool m_faulty, m_throws;
  std::atomic<int64_t> m_faults{0};
  mutable std::mutex m_mutex;
  std::vector<uint64_t> m_ran;
};

/// Submits jobs 0..count-1 (bad ones fail on every member), drains next(), returns the ids in the
/// order next() gave them; `on` records the measurer each job's last run used.
std::vector<uint64_t> run_jobs(MeasurerPool& pool, uint64_t count, const std::set<uint64_t>& bad,
                               std::map<uint64_t, Measurer*>* on = nullptr) {
  std::mutex mutex;
  for (uint64_t id = 0; id < count; ++id)
    pool.submit(id, [id, &bad, on, &mutex](Measurer& m) {
      static_cast<FakeMeasurer&>(m).work(id, bad.count(id) > 0);
      if (on) {
        std::lock_guard lock(mutex);
        (*on)[id] = &m;
      }
    });
  std::vector<uint64_t> out;
  while (const auto id = pool.next()) out.push_back(*id);
  return out;
}

TEST(MeasurerPool, OneMemberRunsEveryJobOnTheCallersThreadInOrder) {
  FakeMeasurer m;
  MeasurerPool pool({{&m, "GPU 0"}});
  EXPECT_TRUE(pool.has_idle());
  const auto ids = run_jobs(pool, 5, {2});   // a failing job is the kernel's fault: reported as it is
  EXPECT_EQ(ids, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(m.ran(), ids);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_FALSE(pool.next().has_value());
  EXPECT_TRUE(pool.take_warnings().empty());
}

TEST(MeasurerPool, SeveralMembersShareTheJobsAndRunEachOnce) {
  FakeMeasurer a, b, c;
  MeasurerPool pool({{&a, "GPU 0"}, {&b, "GPU 1"}, {&c, "GPU 2"}});
  const auto ids = run_jobs(pool, 60, {});
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), 60u);
  EXPECT_EQ(a.ran().size() + b.ran().size() + c.ran().size(), 60u);
  for (const auto* m : {&a, &b, &c}) EXPECT_GT(m->ran().size(), 0u);
  const auto finished = pool.finished();
  EXPECT_EQ(finished[0] + finished[1] + finished[2], 60);
  EXPECT_EQ(pool.active(), 3u);
}

TEST(MeasurerPool, AMemberThatKeepsFailingIsTakenOutAndTheOthersRunItsJobs) {
  FakeMeasurer good, failing(true);
  MeasurerPool pool({{&good, "GPU 0"}, {&failing, "GPU 1 (GPU-x)"}});
  std::map<uint64_t, Measurer*> on;
  const auto ids = run_jobs(pool, 40, {}, &on);
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), 40u);
  for (const auto& [id, m] : on) EXPECT_EQ(m, &good) << "job " << id << " counts from the failing GPU";
  EXPECT_EQ(pool.active(), 1u);
  const auto warnings = pool.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("GPU 1 (GPU-x): its measuring process failed on 3 candidates in a row", 0), 0u)
      << warnings[0];
}

TEST(MeasurerPool, JobsThatFailEverywhereTakeNoMemberOut) {
  FakeMeasurer a, b;
  MeasurerPool pool({{&a, "GPU 0"}, {&b, "GPU 1"}});
  std::set<uint64_t> bad;
  for (uint64_t id = 0; id < 30; ++id)
    if (id % 3 != 2) bad.insert(id);   // long runs of failing kernels on both GPUs
  const auto ids = run_jobs(pool, 30, bad);
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), 30u);
  EXPECT_EQ(pool.active(), 2u);
  EXPECT_TRUE(pool.take_warnings().empty());
}

TEST(MeasurerPool, AnErrorTakesAMemberOutWhereOthersRemainAndReachesTheCallerWhereNoneDoes) {
  {
    FakeMeasurer good, broken(false, true);
    MeasurerPool pool({{&good, "GPU 0"}, {&broken, "GPU 1"}});
    const auto ids = run_jobs(pool, 10, {});
    EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), 10u);
    EXPECT_EQ(good.ran().size(), 10u);
    const auto warnings = pool.take_warnings();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("GPU 1: the measuring process cannot start; it is taken out"), std::string::npos)
        << warnings[0];
  }
  {
    FakeMeasurer broken(false, true);
    MeasurerPool pool({{&broken, "GPU 0"}});
    pool.submit(1, [](Measurer& m) { static_cast<FakeMeasurer&>(m).work(1, false); });
    EXPECT_THROW(pool.next(), std::runtime_error);
  }
}

TEST(MeasurerPool, RunWaitsForItsJobAndCancelDropsWhatHasNotStarted) {
  FakeMeasurer a, b;
  MeasurerPool pool({{&a, "GPU 0"}, {&b, "GPU 1"}});
  bool ran = false;
  pool.run([&](Measurer&) { ran = true; });
  EXPECT_TRUE(ran);
  std::atomic<int> started{0};
  for (uint64_t id = 0; id < 50; ++id)
    pool.submit(id, [&started](Measurer&) {
      ++started;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(7));
  const auto cancelled = pool.cancel();
  EXPECT_FALSE(cancelled.empty());
  std::set<uint64_t> back;
  while (const auto id = pool.next()) back.insert(*id);
  EXPECT_EQ(back.size() + cancelled.size(), 50u);
  for (const uint64_t id : cancelled) EXPECT_FALSE(back.count(id)) << id;
  EXPECT_EQ(static_cast<size_t>(started.load()), back.size());
}

}  // namespace
}  // namespace cmt
