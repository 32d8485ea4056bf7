// --layout, --batch, --broadcast and --dtype on the commands, and the sizes grammar's layouts and
// batches: what query answers for each layout and element type, and the one-line errors for bad values.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/sizes.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

std::vector<std::string> spelled(const std::vector<Problem>& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(p.to_string());
  return out;
}

TEST(OperandOptions, LayoutBatchAndBroadcastExpandEverySize) {
  const auto sizes = parse_sizes("64,100x50x20:tn");
  EXPECT_EQ(spelled(expand_problems(sizes, "", "")), (std::vector<std::string>{"64x64x64", "100x50x20:tn"}));
  EXPECT_EQ(spelled(expand_problems(sizes, "nn,tt", "")),
            (std::vector<std::string>{"64x64x64", "64x64x64:tt", "100x50x20", "100x50x20:tt"}));
  EXPECT_EQ(spelled(expand_problems(parse_sizes("64"), "all", "1,8")),
            (std::vector<std::string>{"64x64x64", "64x64x64*8", "64x64x64:nt", "64x64x64:nt*8", "64x64x64:tn",
                                      "64x64x64:tn*8", "64x64x64:tt", "64x64x64:tt*8"}));
  EXPECT_EQ(spelled(expand_problems(parse_sizes("64"), "", "16", "b")), (std::vector<std::string>{"64x64x64*16:sb=0"}));
  EXPECT_EQ(spelled(parse_sizes("64x64x64*16:sa=0,64x64x64*16:sa=0")), (std::vector<std::string>{"64x64x64*16:sa=0"}))
      << "duplicates dropped";
  EXPECT_EQ(spelled(expand_problems(parse_sizes("64,8:i32"), "", "", "", "f32,f64")),
            (std::vector<std::string>{"64x64x64", "64x64x64:f64", "8x8x8", "8x8x8:f64"}))
      << "--dtype replaces the sizes' types";
  EXPECT_EQ(spelled(expand_problems(parse_sizes("8"), "tn", "2", "", "all")),
            (std::vector<std::string>{"8x8x8:tn*2", "8x8x8:tn:f64*2", "8x8x8:tn:i32*2"}));
  EXPECT_EQ(spelled(expand_problems(parse_sizes("8:f64"), "", "")), (std::vector<std::string>{"8x8x8:f64"}));
  EXPECT_EQ(test::usage_error([] { expand_problems(parse_sizes("64"), "nn,xt", ""); }),
            "--layout: unknown layout 'xt' (nn, nt, tn, tt or all)");
  EXPECT_EQ(test::usage_error([] { expand_problems(parse_sizes("64"), "", "0"); }),
            "--batch: '0' is not a batch count from 1 to 1048576");
  EXPECT_EQ(test::usage_error([] { expand_problems(parse_sizes("64"), "", "", "b"); }),
            "--broadcast b needs a batch above 1 (64x64x64)");
  EXPECT_EQ(test::usage_error([] { expand_problems(parse_sizes("64"), "", "4", "c"); }),
            "--broadcast: 'c' is not a or b (the operand whose stride is 0)");
}

TEST(OperandOptions, QueryAnswersForTheLayoutAndBatchAsked) {
  test::TempDir dir;
  test::tuned_database(dir / "t.db", "GPU-operands");
  // The tuned NN problem runs its winner; the same shape transposed runs a kernel built for its
  // layout (here the TN generic default, since only NN was tuned), never the NN winner.
  const auto nn = test::run_split(dir, "--quiet query --db t.db --device 0 --size 1024 --json");
  ASSERT_EQ(nn.exit_code, 0) << nn.err;
  EXPECT_NE(nn.out.find("\"fast\""), std::string::npos) << nn.out;
  const auto tn = test::run_split(dir, "--quiet query --db t.db --device 0 --size 1024 --layout tn --batch 8 --json");
  ASSERT_EQ(tn.exit_code, 0) << tn.err;
  EXPECT_NE(tn.out.find("1024x1024x1024:tn*8"), std::string::npos) << tn.out;
  EXPECT_NE(tn.out.find("TRANS_A=1,TRANS_B=0"), std::string::npos) << tn.out;
  EXPECT_EQ(tn.out.find("\"fast\""), std::string::npos) << tn.out;

  const auto two = test::run_split(dir, "--quiet query --db t.db --device 0 --size 1024 --layout tn,nt");
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_EQ(two.err, "cm-tune: error: query takes one problem: give one --layout, --batch and --dtype\n");
  const auto bad = test::run_split(dir, "--quiet query --db t.db --device 0 --size 1024 --broadcast a");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cm-tune: error: --broadcast a needs a batch above 1 (1024x1024x1024)\n");
}

TEST(OperandOptions, QueryAnswersForTheElementTypeAsked) {
  test::TempDir dir;
  test::tuned_database(dir / "t.db", "GPU-operands");   // f32 1024^3: "fast"
  {
    Store store(dir / "t.db");
    const int64_t run = store.begin_run(RunRecord{});
    const int64_t device = store.devices().at(0).id;
    test::add_synthetic_winner(store, run, device, "fast64", Problem::make(1024, 1024, 1024, false, false, 1, DType::f64));
    test::add_synthetic_winner(store, run, device, "fast32i", Problem::make(1024, 1024, 1024, false, false, 1, DType::i32));
  }
  const auto query = [&](const std::string& args) {
    const auto r = test::run_split(dir, "--quiet query --db t.db --device 0 " + args + " --json");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  // The same shape, tuned in each type: each type runs its own winner.
  nlohmann::json j = query("--size 1024 --dtype f64");
  EXPECT_EQ(j["problem"], "1024x1024x1024:f64");
  EXPECT_EQ(j["tuned"], true);
  EXPECT_EQ(j["dispatch"]["template"], "fast64") << j.dump(2);
  EXPECT_EQ(j["dispatch"]["name_expression"], "cmt_sgemm_fast64<1, 1>");
  ASSERT_EQ(j["top"].size(), 1u);
  EXPECT_EQ(j["top"][0]["template"], "fast64");
  j = query("--size 1024 --dtype i32");
  EXPECT_EQ(j["dispatch"]["template"], "fast32i") << j.dump(2);
  EXPECT_EQ(query("--size 1024")["dispatch"]["template"], "fast");
  // Not tuned: among the kernels of its type only (here the f64 one's model, the only f64 model), or
  // the generic default of its type and layout; the other types' models are not even runners-up.
  j = query("--m 700 --n 900 --k 1100 --dtype f64");
  EXPECT_EQ(j["tuned"], false);
  EXPECT_EQ(j["dispatch"]["template"], "fast64") << j.dump(2);
  ASSERT_EQ(j["predictions"].size(), 1u) << j.dump(2);
  j = query("--size 1024 --dtype f64 --layout tn --batch 4");
  EXPECT_EQ(j["dispatch"]["template"], "blocktile2d") << j.dump(2);
  EXPECT_NE(j["dispatch"]["params"].get<std::string>().find("TRANS_A=1,TRANS_B=0,DTYPE=1"), std::string::npos)
      << j.dump(2);
  // The text form: INT32 has no cuBLAS ratio.
  const auto text = test::run_split(dir, "--quiet query --db t.db --device 0 --size 1024 --dtype i32");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1024x1024x1024:i32 on NVIDIA H100 80GB HBM3"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tuned for this problem: its measured winner runs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("n/a"), std::string::npos) << text.out;
}

TEST(OperandOptions, BadSizesAndOptionsFailBeforeAnyGpuIsNeeded) {
  test::TempDir dir;
  for (const auto& [args, line] : std::vector<std::pair<std::string, std::string>>{
           {"tune --sizes 64x64x64:xy", "cm-tune: error: bad size '64x64x64:xy' in --sizes: unknown item 'xy' (a layout nn, nt, tn or tt, or a type f32, f64, i32 or tf32x3)\n"},
           {"tune --sizes 64*0", "cm-tune: error: bad size '64*0' in --sizes: batch 0 is outside [1, 1048576]\n"},
           {"tune --sizes 64 --layout qq", "cm-tune: error: --layout: unknown layout 'qq' (nn, nt, tn, tt or all)\n"},
           {"bench --sizes 64 --batch x", "cm-tune: error: --batch: 'x' is not a batch count from 1 to 1048576\n"},
           {"tune --sizes 64 --dtype f16", "cm-tune: error: --dtype: unknown type 'f16' (f32, f64, i32, tf32x3 or all)\n"},
       }) {
    const auto r = test::run_split(dir, "--quiet " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err, line) << args;
  }
}

}  // namespace
}  // namespace cmt
