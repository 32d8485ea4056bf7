// cm-tune tune end to end on the GPU: quick preset plus a deliberately broken template.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "space/preset.hpp"
#include "space/template_desc.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

nlohmann::json run_json(const std::string& command) {
  const auto r = test::run_command(command);
  EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
  const auto brace = r.output.find("\n{");
  const std::string json = r.output.substr(r.output.front() == '{' ? 0 : brace + 1);
  return nlohmann::json::parse(json);
}

TEST(TuneEndToEnd, QuickPresetFindsWinnersCatchesBrokenTemplateAndResumes) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  // quick.toml plus the broken fixture template.
  const std::string preset = test::read_file(default_configs_dir() / "quick.toml") + "\n[templates.broken_edge]\n";
  test::write_file(dir / "quick_broken.toml", preset);
  const std::string db = (dir / "tune.db").string();
  const std::string command = test::cmtune_binary() + " --quiet --db " + db + " --templates " +
                              default_templates_dir().string() + " --templates " + CMTUNE_TEST_FIXTURES +
                              "/templates tune --device 0 --sizes 128,257x129x300 --config " +
                              (dir / "quick_broken.toml").string() + " --json --seed 11";

  const nlohmann::json first = run_json(command);
  ASSERT_EQ(first["problems"].size(), 2u);
  EXPECT_GT(first["trials_measured"].get<int64_t>(), 0);
  for (const auto& p : first["problems"]) {
    ASSERT_FALSE(p["winner"].is_null()) << p.dump();
    if (p["problem"] == "257x129x300") EXPECT_NE(p["winner"]["template"], "broken_edge") << p.dump();
  }

  Store store(db);
  const auto devices = store.devices();
  ASSERT_EQ(devices.size(), 1u);
  const int64_t device_id = devices[0].id;
  int broken_wrong = 0;
  for (const Problem& p : {Problem{128, 128, 128}, Problem{257, 129, 300}}) {
    const auto trials = store.trials(device_id, p);
    ASSERT_FALSE(trials.empty());
    for (const auto& t : trials) {
      if (t.outcome == Outcome::ok) {
        ASSERT_TRUE(t.max_error_ratio.has_value()) << t.template_name << " " << t.params;
        EXPECT_LT(*t.max_error_ratio, 1.0) << t.template_name << " " << t.params;
        EXPECT_TRUE(t.median_ms.has_value());
      }
      if (t.template_name == "broken_edge" && p == Problem{257, 129, 300}) {
        EXPECT_EQ(t.outcome, Outcome::wrong) << t.params << ": " << t.reason;
        broken_wrong += t.outcome == Outcome::wrong;
      }
    }
    for (const auto& w : store.winners(device_id, p)) {
      const bool broken_and_wrong = w.template_name == "broken_edge" && p == Problem{257, 129, 300};
      EXPECT_FALSE(broken_and_wrong) << "broken_edge won scope " << w.scope;
    }
  }
  EXPECT_GT(broken_wrong, 0);

  const nlohmann::json second = run_json(command);
  EXPECT_EQ(second["trials_measured"].get<int64_t>(), 0) << "a rerun measured again";
  EXPECT_EQ(second["trials_reused"].get<int64_t>(), first["trials_measured"].get<int64_t>() + first["trials_reused"].get<int64_t>());
}

// The typed generic default tuned on the GPU in every type: f64 validated against and timed next to
// cuBLAS DGEMM; i32 validated exactly against the wrapping reference, with no baseline (no ratio),
// compared with the device's INT32 peak and with the f32 winner of the same shape.
TEST(TuneEndToEnd, TheGenericDefaultTunesF64AndI32) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  const std::string command = test::cmtune_binary() + " --quiet --db " + db +
                              " tune --device 0 --sizes 128,257x129x300:tn*3 --dtype all --config quick"
                              " --template blocktile2d --no-calibrate --json --seed 11";
  const nlohmann::json j = run_json(command);
  ASSERT_EQ(j["problems"].size(), 6u) << j.dump(2);
  for (const auto& p : j["problems"]) {
    const std::string name = p["problem"];
    ASSERT_FALSE(p["winner"].is_null()) << p.dump();
    EXPECT_EQ(p["winner"]["template"], "blocktile2d") << p.dump();
    EXPECT_EQ(p["wrong"], 0) << p.dump();
    EXPECT_EQ(p["failed"], 0) << p.dump();
    if (name.find(":i32") != std::string::npos) {
      EXPECT_TRUE(p["cublas_tflops"].is_null()) << p.dump();
      EXPECT_TRUE(p["winner"]["ratio_to_cublas"].is_null()) << p.dump();
      EXPECT_GT(p["int32_peak_fraction"].get<double>(), 0.0) << p.dump();
      EXPECT_LT(p["int32_peak_fraction"].get<double>(), 1.0) << p.dump();
      EXPECT_GT(p["ratio_to_f32_winner"].get<double>(), 0.0) << p.dump();
    } else {
      EXPECT_GT(p["cublas_tflops"].get<double>(), 0.0) << p.dump();
      EXPECT_GT(p["winner"]["ratio_to_cublas"].get<double>(), 0.0) << p.dump();
    }
    std::printf("%s: %s\n", name.c_str(), p.dump().c_str());
  }

  Store store(db);
  const int64_t device_id = store.devices().front().id;
  for (const Problem& shape : {Problem::make(128, 128, 128), Problem::make(257, 129, 300, true, false, 3)}) {
    for (const DType t : {DType::f64, DType::i32}) {
      Problem p = shape;
      p.dtype = t;
      const auto trials = store.trials(device_id, p);
      ASSERT_FALSE(trials.empty()) << p.to_string();
      for (const auto& trial : trials) {
        // Timed to the end, or abandoned as 3x slower than the best so far (validated first).
        EXPECT_TRUE(trial.outcome == Outcome::ok || trial.outcome == Outcome::abandoned)
            << p.to_string() << " " << trial.params << ": " << trial.reason;
        if (trial.outcome == Outcome::abandoned) continue;
        if (t == DType::i32) {
          EXPECT_EQ(trial.max_error_ratio, std::optional<double>(0.0)) << trial.params;
          EXPECT_FALSE(trial.ratio_to_cublas.has_value()) << trial.params;
        } else {
          EXPECT_LT(trial.max_error_ratio.value_or(2.0), 1.0) << trial.params;
          EXPECT_TRUE(trial.ratio_to_cublas.has_value()) << trial.params;
        }
      }
      EXPECT_EQ(store.find_baseline(device_id, p).has_value(), t == DType::f64) << p.to_string();
    }
  }
  // A rerun measures nothing again.
  const nlohmann::json second = run_json(command);
  EXPECT_EQ(second["trials_measured"].get<int64_t>(), 0);

  // bench in every type: cuBLAS for f32 and f64 only; i32 against its peak and the FP32 kernel; the
  // seed's bmm for the batch.
  const nlohmann::json bench = run_json(test::cmtune_binary() + " --quiet --db " + db +
                                        " bench --device 0 --sizes 128,257x129x300:tn*3 --dtype all --rounds 5 --json");
  ASSERT_EQ(bench["rows"].size(), 6u) << bench.dump(2);
  for (const auto& r : bench["rows"]) {
    const std::string name = r["problem"];
    EXPECT_TRUE(r["winner_valid"].get<bool>()) << r.dump();
    EXPECT_GT(r["winner_peak_fraction"].get<double>(), 0.0) << r.dump();
    EXPECT_LT(r["winner_peak_fraction"].get<double>(), 1.0) << r.dump();
    EXPECT_EQ(r["cublas_tflops"].is_null(), r["dtype"] == "i32") << r.dump();
    EXPECT_EQ(r["f32_tflops"].is_null(), r["dtype"] != "i32") << r.dump();
    const bool batched = name.find('*') != std::string::npos;
    EXPECT_EQ(r["seed_bmm_tflops"].is_null(), !batched) << r.dump();
    if (batched) EXPECT_GT(r["winner_vs_seed_bmm"].get<double>(), 0.0) << r.dump();
  }

  // A copy of the database without its cubins (benchmarks.sh saves such copies) still benches: the
  // kernels are built again from the sources the database keeps.
  {
    Database raw(db);
    raw.exec("UPDATE binaries SET cubin = x''");
  }
  const nlohmann::json stripped = run_json(test::cmtune_binary() + " --quiet --db " + db +
                                           " bench --device 0 --sizes 128,257x129x300:tn*3 --dtype all --rounds 5 --json");
  ASSERT_EQ(stripped["rows"].size(), 6u) << stripped.dump(2);
  for (const auto& r : stripped["rows"]) EXPECT_TRUE(r["winner_valid"].get<bool>()) << r.dump();
}

// A database that tuned f64 alone serves f32 calls with the generic default of each layout, which
// bench builds with NVRTC (the database holds no build of them). Each layout's must run its own
// machine code: they once shared one (empty) key in the measurer's kernel cache, so the first
// layout's kernel ran every later layout's calls (wrong results, or an illegal address where the
// operands' shapes differ).
TEST(TuneEndToEnd, BenchRunsEachLayoutsOwnGenericDefault) {
  CMT_REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  run_json(test::cmtune_binary() + " --quiet --db " + db +
           " tune --device 0 --sizes 128 --dtype f64 --config quick --template blocktile2d --no-calibrate --json --seed 5");
  const nlohmann::json bench = run_json(test::cmtune_binary() + " --quiet --db " + db +
                                        " bench --device 0 --sizes 160x96x200,160x96x200:nt,160x96x200:tn,160x96x200:tt"
                                        " --rounds 5 --json");
  ASSERT_EQ(bench["rows"].size(), 4u) << bench.dump(2);
  const std::map<std::string, std::string> transposes{{"nn", "TRANS_A=0,TRANS_B=0"}, {"nt", "TRANS_A=0,TRANS_B=1"},
                                                      {"tn", "TRANS_A=1,TRANS_B=0"}, {"tt", "TRANS_A=1,TRANS_B=1"}};
  for (const auto& r : bench["rows"]) {
    const std::string problem = r["problem"];
    const auto colon = problem.find(':');
    const std::string layout = colon == std::string::npos ? "nn" : problem.substr(colon + 1, 2);
    EXPECT_NE(r["dispatch"].get<std::string>().find("generic default"), std::string::npos) << r.dump();
    EXPECT_NE(r["winner"].get<std::string>().find(transposes.at(layout)), std::string::npos) << r.dump();
    EXPECT_TRUE(r["winner_valid"].get<bool>()) << r.dump();
  }
}

}  // namespace
}  // namespace cmt
