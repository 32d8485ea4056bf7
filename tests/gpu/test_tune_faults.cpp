// Fault isolation on a GPU: tune the fault fixture (tests/fixtures/faults: an illegal address, a
// trap, an endless loop, a misaligned vector load) mixed with good templates, through the real
// measuring process. The run completes, each fault is recorded with the right outcome and CUDA
// error, and a good candidate wins.
#include <gtest/gtest.h>

#include "space/preset.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

TEST(TuneFaults, FaultingCandidatesAreRecordedAndAGoodOneWins) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  test::write_file(dir / "faults.toml", R"(name = "faults"
description = "every fault mixed with good candidates"
[tune]
budget_ms = 5
min_samples = 5
retime_top = 2
retime_rounds = 5
[templates.faulty]
[templates.coalesced]
BLOCK = [16, 32]
)");
  const std::string db = (dir / "faults.db").string();
  const std::string command = test::cmtune_binary() + " --db " + db + " --templates " + default_templates_dir().string() +
                              " --templates " + CMTUNE_TEST_FIXTURES + "/faults tune --device 0 --sizes 128,257x129x300" +
                              " --config " + (dir / "faults.toml").string() + " --no-calibrate --kernel-timeout 1 --seed 5";
  const auto r = test::run_command(command);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("8 restarts after faults"), std::string::npos) << r.output;

  Store store(db);
  const auto devices = store.devices();
  ASSERT_EQ(devices.size(), 1u);
  const struct {
    const char* params;
    Outcome outcome;
    const char* reason;  // the CUDA error the reason must name
  } expected[] = {
      {"FAULT=1", Outcome::crashed, "illegal memory access"},
      {"FAULT=2", Outcome::crashed, "unspecified launch failure"},
      {"FAULT=3", Outcome::timeout, "kernel timeout"},
      {"FAULT=4", Outcome::crashed, "misaligned address"},
  };
  for (const Problem& p : {Problem{128, 128, 128}, Problem{257, 129, 300}}) {
    int faults = 0;
    for (const TrialRecord& t : store.trials(devices[0].id, p)) {
      if (t.template_name != "faulty") {
        EXPECT_EQ(t.outcome, Outcome::ok) << t.template_name << " " << t.params << ": " << t.reason;
        continue;
      }
      if (t.params == "FAULT=0") {
        EXPECT_TRUE(t.outcome == Outcome::ok || t.outcome == Outcome::abandoned) << t.reason;
        continue;
      }
      for (const auto& e : expected) {
        if (t.params != e.params) continue;
        ++faults;
        EXPECT_EQ(t.outcome, e.outcome) << p.to_string() << " " << t.params << ": " << t.reason;
        EXPECT_NE(t.reason.find(e.reason), std::string::npos) << p.to_string() << " " << t.params << ": " << t.reason;
      }
    }
    EXPECT_EQ(faults, 4) << p.to_string();
    const auto winners = store.winners(devices[0].id, p);
    ASSERT_FALSE(winners.empty()) << p.to_string();
    for (const auto& w : winners)
      EXPECT_TRUE(w.template_name == "coalesced" || w.params == "FAULT=0") << w.scope << ": " << w.template_name << " " << w.params;
  }
}

}  // namespace
}  // namespace cmt
