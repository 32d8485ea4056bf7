// tune --device all and --device 0,1 with scripted measuring processes (tests/worker/
// scripted_worker.cpp: CMTUNE_SCRIPT_DEVICES GPUs, one of them failing with CMTUNE_SCRIPT_FAULTY):
// the GPUs of one model share the work and find what one GPU finds; a GPU whose process keeps dying
// is taken out with one warning and the others do its share; kernels that fault are crashes on
// every GPU and take no GPU out; GPUs of two models are each tuned for themselves; a bad list is
// one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <fstream>
#include <map>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

class TuneDevices : public test::ScriptedTune {
 protected:
  TuneDevices() : ScriptedTune("devices", "32, 64, 128") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_DEVICES", "2");
    set_env("CMTUNE_SCRIPT_HASHED", "1");        // each candidate and problem its own time
    set_env("CMTUNE_SCRIPT_DELAY_MS", "15");     // long enough for both GPUs to take jobs
    set_env("CMTUNE_SCRIPT_LOG", (m_dir / "worker.log").string());
  }
  test::SplitResult tune(const std::string& db, const std::string& device, const std::string& extra = "") const {
    return test::run_split(m_dir, "--db " + db + " tune --device " + device + " --sizes 64,96x80x72:nt,128 --config " +
                                      preset() + " --no-calibrate --seed 3 --jobs 2 " + extra);
  }
  /// (template[params], problem) -> outcome and median, of every device's trials.
  std::map<std::pair<std::string, std::string>, std::string> trials(const std::string& db) const {
    Store store(m_dir / db, OpenMode::read);
    std::map<std::pair<std::string, std::string>, std::string> out;
    for (const auto& d : store.devices())
      for (const auto& t : store.trials(d.id))
        out[{t.template_name + "[" + t.params + "]", t.problem.to_string()}] =
            std::string(to_string(t.outcome)) + " " + std::to_string(t.median_ms.value_or(-1));
    return out;
  }
  /// problem -> the overall winner's template[params], per device uuid.
  std::map<std::string, std::map<std::string, std::string>> winners(const std::string& db) const {
    Store store(m_dir / db, OpenMode::read);
    std::map<std::string, std::map<std::string, std::string>> out;
    for (const auto& d : store.devices())
      for (const auto& w : store.winners(d.id))
        if (w.scope == "overall") out[d.uuid][w.problem.to_string()] = w.template_name + "[" + w.params + "]";
    return out;
  }
  /// The device index each measuring process served ("hello N" in the log), and how many
  /// measurements each device's processes made.
  std::map<std::string, int> measurements_per_device() const {
    std::map<std::string, std::string> device_of;   // pid -> device
    std::map<std::string, int> count;
    std::ifstream log(m_dir / "worker.log");
    for (std::string line; std::getline(log, line);) {
      const std::string pid = line.substr(0, line.find(' '));
      const std::string rest = line.substr(line.find(' ') + 1);
      if (rest.rfind("hello ", 0) == 0) device_of[pid] = rest.substr(6);
      if (rest.rfind("measure ", 0) == 0) ++count[device_of[pid]];
    }
    return count;
  }
};

TEST_F(TuneDevices, TwoGpusOfOneModelShareTheWorkAndFindWhatOneFinds) {
  const auto one = tune("one.db", "0");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::filesystem::remove(m_dir / "worker.log");
  const auto two = tune("two.db", "all");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(trials("two.db"), trials("one.db"));     // every trial once, with the same scripted times
  EXPECT_EQ(winners("two.db").begin()->second, winners("one.db").begin()->second);
  EXPECT_EQ(winners("two.db").size(), 1u) << "one device record for the model: the first GPU's";
  const auto per_device = measurements_per_device();
  EXPECT_GT(per_device.count("0") ? per_device.at("0") : 0, 0) << two.err;
  EXPECT_GT(per_device.count("1") ? per_device.at("1") : 0, 0) << two.err;
  EXPECT_NE(two.out.find("measurements per GPU: GPU 0 "), std::string::npos) << two.out;
  EXPECT_NE(two.err.find("on devices 0,1 (Scripted H100"), std::string::npos) << two.err;
  EXPECT_EQ(two.err.find("warning"), std::string::npos) << two.err;

  // The same list by index gives the same, and a rerun measures nothing again.
  const auto again = tune("two.db", "0,1", "--json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["trials_measured"], 0);
  EXPECT_EQ(j["gpus"].size(), 2u);
}

TEST_F(TuneDevices, AGpuWhoseProcessKeepsDyingIsTakenOutAndTheOthersDoItsShare) {
  const auto one = tune("one.db", "0");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  set_env("CMTUNE_SCRIPT_FAULTY", "1");
  const auto two = tune("two.db", "all");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(trials("two.db"), trials("one.db")) << "no crash of the failing GPU is recorded";
  const std::string warning = "warning: GPU 1 (GPU-5c41b7ed-0000-4000-8000-000000000002): its measuring process failed";
  const size_t at = two.err.find(warning);
  ASSERT_NE(at, std::string::npos) << two.err;
  EXPECT_EQ(two.err.find(warning, at + 1), std::string::npos) << "warned once: " << two.err;
  EXPECT_NE(two.err.find("it is taken out of the run and the other GPUs do its share"), std::string::npos) << two.err;
}

TEST_F(TuneDevices, KernelsThatFaultAreCrashesOnEveryGpuAndTakeNoGpuOut) {
  test::write_file(m_dir / "faults.toml", "name = \"faults\"\ndescription = \"faults and good ones\"\n"
                                          "[templates.faulty]\nFAULT = [0, 1, 2, 4]\n[templates.coalesced]\nBLOCK = [16, 32]\n");
  const std::string templates = "--templates " + (std::filesystem::path(CMTUNE_SOURCE_DIR) / "templates").string() +
                                " --templates " + std::string(CMTUNE_TEST_FIXTURES) + "/faults";
  const auto run = [&](const std::string& db, const std::string& device) {
    return test::run_split(m_dir, templates + " --db " + db + " tune --device " + device +
                                      " --sizes 64,96x80x72,128 --config " + (m_dir / "faults.toml").string() +
                                      " --no-calibrate --seed 3 --jobs 2");
  };
  const auto one = run("one.db", "0");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto two = run("two.db", "all");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.err.find("taken out"), std::string::npos) << two.err;
  // Each fault is its outcome on every problem, as on one GPU (FAULT=0 is timed: ok or abandoned).
  std::map<std::string, std::set<std::string>> faulty;
  for (const auto& [key, outcome] : trials("two.db"))
    if (key.first.rfind("faulty[", 0) == 0) faulty[key.first].insert(outcome.substr(0, outcome.find(' ')));
  ASSERT_EQ(faulty.size(), 4u);   // FAULT=3 (a hang) left out: each costs the 2 s kernel timeout
  EXPECT_EQ(faulty["faulty[FAULT=1]"], std::set<std::string>{"crashed"});
  EXPECT_EQ(faulty["faulty[FAULT=2]"], std::set<std::string>{"crashed"});
  EXPECT_EQ(faulty["faulty[FAULT=4]"], std::set<std::string>{"crashed"});
  EXPECT_EQ(winners("two.db").begin()->second, winners("one.db").begin()->second);
}

TEST_F(TuneDevices, GpusOfTwoModelsAreEachTunedForThemselves) {
  set_env("CMTUNE_SCRIPT_MODELS", "Scripted H100,Scripted L40");
  const auto r = tune("mixed.db", "all", "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["models"].size(), 2u) << r.out;
  std::set<std::string> names;
  for (const auto& m : j["models"]) {
    names.insert(m["device"]["name"].get<std::string>());
    EXPECT_EQ(m["gpus"].size(), 1u);
    EXPECT_EQ(m["problems"].size(), 3u);
  }
  EXPECT_EQ(names, (std::set<std::string>{"Scripted H100", "Scripted L40"}));
  const auto w = winners("mixed.db");
  ASSERT_EQ(w.size(), 2u);
  for (const auto& [uuid, problems] : w) EXPECT_EQ(problems.size(), 3u) << uuid;
}

TEST_F(TuneDevices, SigintStopsEveryGpuCommitsWhatEachMeasuredAndARerunFinishes) {
  const auto clean = tune("clean.db", "0");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  std::filesystem::remove(m_dir / "worker.log");
  set_env("CMTUNE_SCRIPT_DELAY_MS", "150");
  const std::string db = (m_dir / "stopped.db").string();
  const pid_t pid = test::spawn_cmtune({"--db", db, "tune", "--device", "all", "--sizes", "64,96x80x72:nt,128",
                                        "--config", preset(), "--no-calibrate", "--seed", "3", "--jobs", "2"},
                                       m_dir / "out.txt", m_dir / "err.txt");
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    const auto per_device = measurements_per_device();
    if (per_device.count("0") && per_device.count("1")) break;   // both GPUs busy
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << test::read_file(m_dir / "err.txt");
  EXPECT_EQ(WEXITSTATUS(status), 130) << test::read_file(m_dir / "err.txt");
  const auto partial = trials("stopped.db");
  const auto all = trials("clean.db");
  EXPECT_LT(partial.size(), all.size());
  for (const auto& [key, value] : partial) EXPECT_EQ(all.at(key), value) << key.first;   // nothing half-written
  set_env("CMTUNE_SCRIPT_DELAY_MS", "15");
  const auto rerun = tune("stopped.db", "all");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(trials("stopped.db"), all);
}

TEST_F(TuneDevices, ABadListIsOneLine) {
  for (const auto& [device, needle] : std::map<std::string, std::string>{
           {"0,0", "'0' and '0' are the same GPU"}, {"0,,1", "an empty entry"}, {"0,7", "no such device"}}) {
    const auto r = tune("bad.db", device);
    EXPECT_EQ(r.exit_code, 2) << device << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << device << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// scripts/gpu/scale_compare.py and bench_tables.py, which turn the GPU machine's scale-1 and scale-all
// runs into docs/BENCHMARKS.md's table, on the files the same commands write here with scripted
// GPUs: the speedup from the two times, the requested problems told from the rest, every winner the
// same kernel (the scripted times are the same in both runs), and each pass's trials measured in both.
TEST_F(TuneDevices, ScaleComparisonReadsWhatTheTwoRunsWrite) {
  const std::filesystem::path out = m_dir / "out";
  std::filesystem::create_directories(out);
  for (const auto& [which, device, seconds] : {std::tuple{"1", "0", 10}, std::tuple{"all", "all", 5}}) {
    const std::string db = std::string("scale-") + which + ".db";
    const auto run = tune(db, device, "--json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    test::write_file(out / fmt::format("scale-{}.json", which), run.out);
    test::write_file(out / fmt::format("scale-{}-time.json", which),
                     fmt::format(R"({{"seconds": {}, "rc": 0, "devices": "{}", "gpus": 2, "cpus": "all"}})", seconds,
                                 device));
    const auto exported = test::run_split(m_dir, fmt::format("--db {} db export --what winners --format json --out '{}'",
                                                             db, (out / fmt::format("scale-{}-winners.jsonl", which)).string()));
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const auto zipped = test::run_command(fmt::format("gzip -c '{}' > '{}'", (m_dir / db).string(),
                                                      (out / fmt::format("scale-{}-nocubins.db.gz", which)).string()));
    ASSERT_EQ(zipped.exit_code, 0) << zipped.output;
  }
  const std::filesystem::path scripts = std::filesystem::path(CMTUNE_SOURCE_DIR) / "scripts" / "gpu";
  const auto compared = test::run_command(fmt::format("python3 '{}' '{}' > '{}'", (scripts / "scale_compare.py").string(),
                                                      out.string(), (out / "scale.json").string()));
  ASSERT_EQ(compared.exit_code, 0) << compared.output;
  const std::string written = test::read_file(out / "scale.json");
  const nlohmann::json s = nlohmann::json::parse(written);
  EXPECT_EQ(s["speedup"], 2.0);
  EXPECT_EQ(s["devices"], nlohmann::json::array({1, 1})) << "one device record for the model in each run";
  ASSERT_EQ(s["by_kind"].size(), 3u) << written;
  const nlohmann::json requested = s["by_kind"][0];
  EXPECT_EQ(requested["kind"], "requested problems");
  EXPECT_EQ(requested["common"], 3);
  EXPECT_EQ(requested["same_kernel"], 3);
  EXPECT_EQ(s["by_kind"][1]["common"], 0) << "no calibration (--no-calibrate)";
  EXPECT_EQ(s["other_kernel_beyond_noise"], 0);
  EXPECT_EQ(s["same_kernel"], s["common"]);
  ASSERT_EQ(s["passes"].size(), 1u) << written;
  EXPECT_EQ(s["passes"][0]["trials"][0], s["passes"][0]["trials"][1]);
  EXPECT_GT(s["passes"][0]["trials"][0], 0);
  EXPECT_EQ(s["passes"][0]["only_one_gpu"], 0);
  EXPECT_EQ(s["passes"][0]["only_every_gpu"], 0);

  const auto tables = test::run_command(fmt::format("python3 '{}' '{}'", (scripts / "bench_tables.py").string(),
                                                    out.string()));
  ASSERT_EQ(tables.exit_code, 0) << tables.output;
  EXPECT_NE(tables.output.find("Speedup 2.00x."), std::string::npos) << tables.output;
  EXPECT_NE(tables.output.find("| requested problems | 3 | 3 | 0 | 0 |"), std::string::npos) << tables.output;
}

}  // namespace
}  // namespace cmt
