// Recording the calls an application makes ($CMTUNE_RECORD, tuner/export/runtime/call_recorder.cuh)
// and tuning exactly those: a program built with nvcc from an exported header
// (tests/fixtures/record/record_calls.cu) records its calls without a GPU (every launch fails after
// the call is recorded), `cm-tune tune --sizes @calls.txt` tunes the file with the scripted
// measuring process (times hashed per kernel and problem, so each problem has its own winner), and
// the same program built from the re-exported header dispatches every recorded call to the winner
// of exactly its problem. Also: many threads, fork, exit() from another thread, a file that cannot
// be written.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cli/sizes.hpp"
#include "cli_support.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

// Its own namespace: a unity build compiles this file with other tests' file-local helpers.
namespace cmt::call_recorder_tests {
namespace {

std::string shell_quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }


/// The line each call of record_calls.cu's k_calls must record, in order: the row-major problem the
/// header dispatches (column-major calls transposed, strides spelled packed unless 0), then the call's
/// leading dimensions, strides and alignment.
const std::vector<std::string> k_expected_lines = {
    "96x80x72  # lda=72 ldb=80 ldc=80 align=256",
    "64x128x32:nt  # lda=32 ldb=32 ldc=128 align=256",
    "32x48x16:tn*8  # lda=32 ldb=48 ldc=48 sa=512 sb=768 sc=1536 align=256",
    "48x40x24*4:sb=0  # lda=24 ldb=40 ldc=40 sa=1160 sb=0 sc=1920 align=32",
    "56x40x24:nt  # lda=24 ldb=24 ldc=40 align=256",
    "64x64x64:f64  # lda=64 ldb=64 ldc=64 align=256",
    "24x32x16:tn:f64*3:sb=0  # lda=24 ldb=32 ldc=32 sa=384 sb=0 sc=768 align=256",
    "16x16x16:tt:i32  # lda=16 ldb=16 ldc=16 align=256",
    "96x80x72  # lda=72 ldb=80 ldc=80 align=4",
};

class RecordCalls : public test::ScriptedTune {
 protected:
  RecordCalls() : ScriptedTune("record", "32, 64") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_HASHED", "1");
    unsetenv("CMTUNE_RECORD");
  }

  test::SplitResult tune(const std::string& sizes, const std::string& extra = "") const {
    return test::run_split(m_dir, "--quiet --db t.db tune --sizes " + sizes + " --config " +
                                      preset() + " --no-calibrate --seed 3 --jobs 2 " + extra);
  }

  /// Exports the database to dir/name/tuned.cuh and builds record_calls.cu from it into dir/name/prog.
  bool build_program(const std::string& name) const {
    std::filesystem::create_directories(m_dir / name);
    const auto exported = test::run_split(m_dir, fmt::format("--db t.db export --out {}", shell_quoted(m_dir / name / "tuned.cuh")));
    EXPECT_EQ(exported.exit_code, 0) << exported.err;
    // The device code unoptimized (NVVM and ptxas at -O0: half the compile): the program records its
    // calls on the host, and no kernel of it runs here.
    const auto build = test::run_command(fmt::format(
        "{} -std=c++17 -arch=sm_90 -Xcicc -O0 -Xptxas -O0 -Xcompiler -Wall,-Wextra -I {} {}/record/record_calls.cu -o {} 2>&1",
        test::nvcc_path(), shell_quoted(m_dir / name), CMTUNE_TEST_FIXTURES, shell_quoted(m_dir / name / "prog")));
    EXPECT_EQ(build.exit_code, 0) << build.output;
    return exported.exit_code == 0 && build.exit_code == 0;
  }

  /// Runs dir/name/prog with args in dir, recording to `record` (none when empty); stderr to err.txt.
  test::CommandResult run_program(const std::string& name, const std::string& args, const std::string& record) const {
    return test::run_command(fmt::format("cd {} && ({} timeout 60 {} {} 2>err.txt)", shell_quoted(m_dir.path()),
                                         record.empty() ? "" : "CMTUNE_RECORD=" + shell_quoted(record), shell_quoted(m_dir / name / "prog"),
                                         args));
  }

};

// The whole loop: record, tune the file, re-export, and every recorded call runs its problem's winner.
TEST_F(RecordCalls, RecordedCallsAreTunedAndTheReexportedHeaderDispatchesEachToItsWinner) {
  ASSERT_EQ(tune("16").exit_code, 0);   // export needs a winner: any header records
  ASSERT_TRUE(build_program("v1"));

  // Each distinct call once, in call order; calls that choose no kernel are not recorded.
  const auto recorded = run_program("v1", "record", "calls.txt");
  ASSERT_EQ(recorded.exit_code, 0) << recorded.output;
  EXPECT_EQ(test::read_file(m_dir / "err.txt"), "");
  const std::vector<std::string> lines = test::lines_of(test::read_file(m_dir / "calls.txt"));
  EXPECT_EQ(lines, k_expected_lines);
  // The launches failed (no GPU) after recording; the calls themselves returned what they return
  // without recording.
  const auto plain = run_program("v1", "record", "");
  EXPECT_EQ(plain.output, recorded.output);
  // A rerun appends nothing: the file's lines count as recorded.
  ASSERT_EQ(run_program("v1", "record", "calls.txt").exit_code, 0);
  EXPECT_EQ(test::lines_of(test::read_file(m_dir / "calls.txt")), k_expected_lines);

  // A file that cannot be opened: one warning, the calls go on as without recording.
  const auto bad = run_program("v1", "record", (m_dir / "missing" / "calls.txt").string());
  EXPECT_EQ(bad.exit_code, 0);
  EXPECT_EQ(bad.output, plain.output);
  const std::string warning = test::read_file(m_dir / "err.txt");
  EXPECT_EQ(test::lines_of(warning).size(), 1u) << warning;
  EXPECT_NE(warning.find("cmtune: cannot record GEMM calls to '" + (m_dir / "missing" / "calls.txt").string() +
                         "' ($CMTUNE_RECORD): No such file or directory; recording is off"),
            std::string::npos)
      << warning;

  // Tune exactly the recorded problems: 8 (the last line repeats the first's problem).
  const auto tuned = tune("@calls.txt", "--json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  const nlohmann::json summary = nlohmann::json::parse(tuned.out);
  std::set<std::string> tuned_problems;
  for (const auto& p : summary["problems"]) tuned_problems.insert(p["problem"].get<std::string>());
  std::set<std::string> recorded_problems;
  for (const auto& line : lines) recorded_problems.insert(line.substr(0, line.find("  #")));
  EXPECT_EQ(tuned_problems, recorded_problems);
  EXPECT_EQ(tuned_problems.size(), 8u);

  // The re-exported header: each recorded call (its line read back) is an exact entry and runs that
  // problem's winner, as the database and `cm-tune query` name it.
  ASSERT_TRUE(build_program("v2"));
  std::string input;
  std::vector<Problem> problems;
  const std::regex comment(R"(# lda=(\d+) ldb=(\d+) ldc=(\d+)( sa=\d+ sb=\d+ sc=\d+)? align=(\d+)$)");
  for (const auto& line : lines) {
    const Problem p = parse_problem(line.substr(0, line.find("  #")), k_max_dimension, k_max_batch);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, comment)) << line;
    const int broadcast = p.batch > 1 ? (p.stride_a == 0 ? 1 : 0) + (p.stride_b == 0 ? 2 : 0) : 0;
    input += fmt::format("{} {} {} {} {} {} {} {} {} {} {}\n", (p.trans_a ? 2 : 0) + (p.trans_b ? 1 : 0), p.batch,
                         broadcast, p.m, p.n, p.k, m[1].str(), m[2].str(), m[3].str(), m[5].str(), static_cast<int>(p.dtype));
    problems.push_back(p);
  }
  test::write_file(m_dir / "select.txt", input);
  const auto selected = run_program("v2", "select < select.txt", "");
  ASSERT_EQ(selected.exit_code, 0) << selected.output;
  const std::vector<std::string> choices = test::lines_of(selected.output);
  ASSERT_EQ(choices.size(), lines.size()) << selected.output;

  Store store(m_dir / "t.db", OpenMode::read);
  const int64_t device = store.devices().front().id;
  std::set<std::string> winners;
  for (size_t c = 0; c < lines.size(); ++c) {
    const Problem& p = problems[c];
    const size_t space = choices[c].find(' ');
    EXPECT_GE(std::stoi(choices[c].substr(0, space)), 0) << lines[c] << ": not a tuned problem of the header";
    const std::string kernel = choices[c].substr(space + 1);
    std::string winner;
    for (const auto& w : store.winners(device, p))
      if (w.scope == "overall") winner = w.name_expression;
    EXPECT_EQ(kernel, winner) << lines[c];
    winners.insert(winner);

    std::string operands = fmt::format("--layout {} --dtype {}", p.layout(), dtype_name(p.dtype));
    if (p.batch > 1) operands += fmt::format(" --batch {}", p.batch);
    if (p.batch > 1 && p.stride_a == 0) operands += " --broadcast a";
    if (p.batch > 1 && p.stride_b == 0) operands += " --broadcast b";
    const auto query = test::run_split(m_dir, fmt::format("--db t.db query --m {} --n {} --k {} {} --json", p.m, p.n, p.k, operands));
    ASSERT_EQ(query.exit_code, 0) << query.err;
    const nlohmann::json q = nlohmann::json::parse(query.out);
    EXPECT_EQ(q["problem"], p.to_string());
    EXPECT_TRUE(q["tuned"].get<bool>()) << q.dump(2);
    EXPECT_EQ(q["dispatch"]["name_expression"], kernel) << q.dump(2);
  }
  // The hashed times chose both tiles somewhere, so agreeing with each problem's winner means something.
  EXPECT_NE(test::read_file(m_dir / "v2" / "tuned.cuh").find("cmt_sgemm_blocktile2d<32, 64,"), std::string::npos);
  EXPECT_GE(winners.size(), 6u);
}

// Concurrency: many threads making the same calls record each once; a forked child records only its
// new calls and the parent's queue is not written twice; exit() from one thread while others record
// neither hangs nor crashes, and leaves whole lines.
TEST_F(RecordCalls, ThreadsForksAndExitFromAnotherThreadRecordEachCallOnce) {
  ASSERT_EQ(tune("16").exit_code, 0);
  ASSERT_TRUE(build_program("v1"));

  const auto threads = run_program("v1", "threads 8 50", "threads.txt");
  ASSERT_EQ(threads.exit_code, 0) << threads.output;
  std::vector<std::string> lines = test::lines_of(test::read_file(m_dir / "threads.txt"));
  std::set<std::string> expected;
  for (int n = 0; n < 40; ++n)
    expected.insert(fmt::format("{}x64x64{}  # lda=64 ldb=64 ldc=64 align=256", 100 + n, n % 2 == 0 ? "" : ":nt"));
  EXPECT_EQ(lines.size(), 40u);
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()), expected);

  const auto forked = run_program("v1", "fork", "fork.txt");
  ASSERT_EQ(forked.exit_code, 0) << forked.output << test::read_file(m_dir / "err.txt");
  lines = test::lines_of(test::read_file(m_dir / "fork.txt"));
  EXPECT_EQ(lines.size(), 4u) << test::read_file(m_dir / "fork.txt");
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
            (std::set<std::string>{"100x64x64  # lda=64 ldb=64 ldc=64 align=256", "101x64x64:nt  # lda=64 ldb=64 ldc=64 align=256",
                                   "102x64x64  # lda=64 ldb=64 ldc=64 align=256",
                                   "103x64x64:nt  # lda=64 ldb=64 ldc=64 align=256"}));

  for (int attempt = 0; attempt < 3; ++attempt) {
    std::filesystem::remove(m_dir / "exit.txt");
    const auto exited = run_program("v1", "exit-thread", "exit.txt");
    EXPECT_EQ(exited.exit_code, 3) << "exit(3), not a crash or the 60 s timeout: " << exited.output;
    lines = test::lines_of(test::read_file(m_dir / "exit.txt"));
    EXPECT_GT(lines.size(), 0u);
    const std::regex whole(R"(\d+x8x8  # lda=8 ldb=8 ldc=8 align=256)");
    for (const auto& line : lines) ASSERT_TRUE(std::regex_match(line, whole)) << "a torn line: " << line;
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()).size(), lines.size()) << "a call recorded twice";
  }
}

}  // namespace
}  // namespace cmt::call_recorder_tests
