// Quick tune -> export -> build the exported-header harness (tests/consumer, its own CMake project)
// against the header -> run it on the GPU: every correctness check passes (tuned, untuned, ragged and
// misaligned calls), and each tuned size runs within 5% of the time the tuner recorded.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <string>
#include <nlohmann/json.hpp>

#include "space/template_desc.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using test::run_ok;

TEST(ExportConsumer, HeaderIsCorrectEverywhereAndAsFastAsRecorded) {
  CMT_REQUIRE_GPU();
  ASSERT_EQ(test::run_command("command -v cmake && command -v nvcc || command -v /usr/local/cuda/bin/nvcc").exit_code, 0)
      << "the harness needs cmake and nvcc on the PATH";
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  const std::string header = (dir / "tuned_sgemm.cuh").string();
  const std::string source_root = default_templates_dir().parent_path().string();

  run_ok(test::cmtune_binary() + " --quiet --db " + db + " tune --device 0 --sizes 1024,2048 --config quick --seed 5");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --out " + header);
  run_ok("cmake -S " + source_root + "/tests/consumer -B " + (dir / "build").string() + " -DCMTUNE_HEADER=" + header +
         " -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) > /dev/null");
  run_ok("cmake --build " + (dir / "build").string() + " -j 8 > /dev/null");
  const std::string json_file = (dir / "consumer.json").string();
  const auto consumer = test::run_command((dir / "build" / "cmtune_consumer_test").string() + " --samples 100 --json " + json_file);
  EXPECT_EQ(consumer.exit_code, 0) << consumer.output;
  const nlohmann::json result = nlohmann::json::parse(test::read_file(json_file));

  EXPECT_EQ(result["failures"].get<int>(), 0);
  int misaligned = 0, ragged = 0;
  for (const auto& c : result["checks"]) {
    EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
    misaligned += c["offset"].get<int>() != 0;
    ragged += c["m"].get<int>() % 4 != 0 || c["k"].get<int>() % 4 != 0;
  }
  EXPECT_GT(misaligned, 0);
  EXPECT_GT(ragged, 0);

  // The tuned sizes (not the calibration shapes, whose winners are measured more briefly).
  Store store(db);
  int compared = 0;
  for (const auto& w : store.winners()) {
    if (w.scope != "overall" || !(w.problem == Problem{1024, 1024, 1024} || w.problem == Problem{2048, 2048, 2048})) continue;
    for (const auto& t : result["timings"]) {
      if (t["m"].get<int64_t>() != w.problem.m || t["n"].get<int64_t>() != w.problem.n || t["k"].get<int64_t>() != w.problem.k)
        continue;
      const double header_ms = t["ours_ms"].get<double>();
      EXPECT_NEAR(header_ms / w.median_ms, 1.0, 0.05)
          << w.problem.to_string() << ": header " << header_ms << " ms, database " << w.median_ms << " ms (" << w.template_name
          << "[" << w.params << "])";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2) << "both tuned sizes must be timed through the header";
}

// Batches tuned with the family that computes several problems per block: its winners are exported
// (the header launches them with their problem counts and grid z = ceil(batch / PPB)), and the
// harness calls every tuned batch as it was tuned, so the measured fused kernel runs through the
// header and must match cuBLAS, as must every other call of its layouts (batches of 5 and 3 whose
// blocks are partly empty, single products) that the cost model sends to it.
TEST(ExportConsumer, FusedBatchKernelsRunThroughTheHeader) {
  CMT_REQUIRE_GPU();
  ASSERT_EQ(test::run_command("command -v cmake && command -v nvcc || command -v /usr/local/cuda/bin/nvcc").exit_code, 0)
      << "the harness needs cmake and nvcc on the PATH";
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  const std::string header = (dir / "tuned_sgemm.cuh").string();
  const std::string source_root = default_templates_dir().parent_path().string();

  run_ok(test::cmtune_binary() + " --quiet --db " + db +
         " tune --device 0 --sizes 64x64x64*4096,100x100x100:tt*37,32x32x64*1000:sb=0 --config quick"
         " --template fused_batch --no-calibrate --seed 5");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --out " + header);
  const std::string text = test::read_file(header);
  EXPECT_NE(text.find("\"cmt_sgemm_fused_batch<"), std::string::npos) << "no fused kernel was exported";
  run_ok("cmake -S " + source_root + "/tests/consumer -B " + (dir / "build").string() + " -DCMTUNE_HEADER=" + header +
         " -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) > /dev/null");
  run_ok("cmake --build " + (dir / "build").string() + " -j 8 > /dev/null");
  const std::string json_file = (dir / "consumer.json").string();
  const auto consumer = test::run_command((dir / "build" / "cmtune_consumer_test").string() + " --no-timing --json " + json_file);
  EXPECT_EQ(consumer.exit_code, 0) << consumer.output;
  const nlohmann::json result = nlohmann::json::parse(test::read_file(json_file));
  EXPECT_EQ(result["failures"].get<int>(), 0);
  int fused = 0;
  std::set<std::string> tuned_cases;   // the tuned batches' own calls that ran a fused kernel
  for (const auto& c : result["checks"]) {
    EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
    if (c["kernel"].get<std::string>().find("cmt_sgemm_fused_batch<") == std::string::npos) continue;
    ++fused;
    const std::string name = c["case"].get<std::string>();
    for (const char* tuned : {"nn*4096", "tt*37", "nn*1000-sb0"})
      if (name.rfind(tuned, 0) == 0) tuned_cases.insert(tuned);
  }
  EXPECT_GT(fused, 0) << "no call ran a fused kernel";
  EXPECT_EQ(tuned_cases, (std::set<std::string>{"nn*4096", "tt*37", "nn*1000-sb0"}))
      << "each tuned batch, called as tuned, runs its measured (fused) kernel";
}

// FP64 and INT32 tuned, exported and called through dgemm and igemm: the harness checks every entry
// point of both types in every layout (batches, broadcasts, column-major, beta = 0 over poison, INT32
// calls whose products and sums overflow and must wrap) against its CPU reference (FP64 within the
// FP32 bound at u = 2^-53, INT32 exact), and calls each tuned problem as it was tuned, which must run
// the database's winner of its type.
TEST(ExportConsumer, DgemmAndIgemmMatchTheCpuReferenceAndRunTheirWinners) {
  CMT_REQUIRE_GPU();
  ASSERT_EQ(test::run_command("command -v cmake && command -v nvcc || command -v /usr/local/cuda/bin/nvcc").exit_code, 0)
      << "the harness needs cmake and nvcc on the PATH";
  test::TempDir dir;
  const std::string db = (dir / "tune.db").string();
  const std::string header = (dir / "tuned_gemm.cuh").string();
  const std::string source_root = default_templates_dir().parent_path().string();

  run_ok(test::cmtune_binary() + " --quiet --db " + db +
         " tune --device 0 --sizes 256x256x256,100x100x100:tn*4,64x96x128:nt*8:sb=0 --dtype f64,i32 --config quick"
         " --no-calibrate --seed 5");
  run_ok(test::cmtune_binary() + " --quiet --db " + db + " export --out " + header);
  const std::string text = test::read_file(header);
  EXPECT_NE(text.find("{{256, 256, 256, 0, 1, 0, 1}, "), std::string::npos) << "the f64 entry";
  EXPECT_NE(text.find("{{256, 256, 256, 0, 1, 0, 2}, "), std::string::npos) << "the i32 entry";
  run_ok("cmake -S " + source_root + "/tests/consumer -B " + (dir / "build").string() + " -DCMTUNE_HEADER=" + header +
         " -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) > /dev/null");
  run_ok("cmake --build " + (dir / "build").string() + " -j 8 > /dev/null");
  const std::string json_file = (dir / "consumer.json").string();
  const auto consumer = test::run_command((dir / "build" / "cmtune_consumer_test").string() + " --no-timing --json " + json_file);
  EXPECT_EQ(consumer.exit_code, 0) << consumer.output;
  const nlohmann::json result = nlohmann::json::parse(test::read_file(json_file));
  EXPECT_EQ(result["failures"].get<int>(), 0);

  std::map<std::string, int> counts;   // checks per kind
  std::set<std::string> layouts;       // "f64-nn", "i32-tt", ... (row-major entries)
  for (const auto& c : result["checks"]) {
    EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
    const std::string name = c["case"].get<std::string>();
    for (const char* kind : {"f64-", "i32-"})
      if (name.rfind(kind, 0) == 0) ++counts[kind];
    if (name.find("-wrap") != std::string::npos) ++counts["wrap"];
    if (name.find("-colmajor-") != std::string::npos) ++counts["colmajor"];
    if (name.rfind("i32-", 0) == 0 && name.find('*') != std::string::npos) ++counts["i32 batch"];
    for (const char* type : {"f64", "i32"})
      for (const char* layout : {"nn", "nt", "tn", "tt"})
        if (name.rfind(std::string(type) + "-ab-" + layout, 0) == 0) layouts.insert(std::string(type) + "-" + layout);
  }
  EXPECT_GT(counts["f64-"], 100);
  EXPECT_GT(counts["i32-"], 100);
  EXPECT_GE(counts["wrap"], 9) << "INT32 calls that overflow: one per layout and size, and the scale";
  EXPECT_GT(counts["colmajor"], 0);
  EXPECT_GT(counts["i32 batch"], 0);
  EXPECT_EQ(layouts.size(), 8u) << "every layout of both types";

  // Each tuned problem, called as tuned, runs its type's database winner.
  Store store(db);
  int tuned = 0;
  for (const auto& w : store.winners()) {
    if (w.scope != "overall" || w.problem.dtype == DType::f32) continue;
    const std::string prefix = fmt::format("{}-tuned-{}", dtype_name(w.problem.dtype), w.problem.layout());
    bool ran = false;
    for (const auto& c : result["checks"])
      if (c["case"].get<std::string>().rfind(prefix, 0) == 0 && c["m"].get<int64_t>() == w.problem.m &&
          c["n"].get<int64_t>() == w.problem.n && c["k"].get<int64_t>() == w.problem.k) {
        EXPECT_EQ(c["kernel"].get<std::string>(), w.name_expression) << c.dump();
        ran = true;
      }
    EXPECT_TRUE(ran) << w.problem.to_string() << " was not called as tuned";
    ++tuned;
  }
  EXPECT_EQ(tuned, 6) << "three sizes, two types";
}

}  // namespace
}  // namespace cmt
