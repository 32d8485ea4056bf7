// More bad input and faults against the real cm-tune binary (issue 18, section 3): compile's exit
// status, --device in every command, writes that fail (a full device, stdout on a full device),
// paths of the wrong kind (a folder as a preset, a file as a templates folder), and export's write
// errors. Each case asserts the exit code and that stderr is the one line it should be.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;

constexpr int k_failure = 1;    // the command ran and reports a failure
constexpr int k_usage = 2;      // UsageError and every parse error
constexpr int k_no_device = 3;  // NoDeviceError

const fs::path k_fixture_templates = fs::path(CMTUNE_TEST_FIXTURES) / "templates";

using Split = test::SplitResult;
using test::run_split;

/// The folder's entries, sorted, by name.
std::vector<std::string> entries(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Asserts the exit code and that stderr is exactly `line` (one line, "cm-tune: error: " prepended).
void expect_line(const Split& r, int exit_code, const std::string& line) {
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.err, "cm-tune: error: " + line + "\n");
}

/// Asserts the exit code, one stderr line starting "cm-tune: error: " and holding every needle, and
/// that the folder holds only what it held before (nothing was created).
void expect_error(const std::string& args, int exit_code, const std::vector<std::string>& needles) {
  test::TempDir dir;
  const Split r = run_split(dir, args);
  SCOPED_TRACE("cm-tune " + args + "\nstderr: " + r.err + "\nstdout: " + r.out);
  EXPECT_EQ(r.exit_code, exit_code);
  EXPECT_EQ(r.err.rfind("cm-tune: error: ", 0), 0u);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  for (const auto& needle : needles) EXPECT_NE(r.err.find(needle), std::string::npos) << "missing: " << needle;
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{}) << "files were created";
}

bool no_gpu() { return !test::gpu_unavailable_reason().empty(); }

// --- compile's exit status -------------------------------------------------------------------

/// `cm-tune compile` of the fixture template compile_error (an even V does not compile) for sm_90,
/// with the values of V given, in dir, on dir's database.
Split compile_values(const test::TempDir& dir, const std::string& values, const std::string& more = "") {
  test::write_file(dir / "preset.toml", fmt::format("[templates.compile_error]\nV = [{}]\n", values));
  return run_split(dir, fmt::format("--quiet --templates '{}' compile --config preset.toml --arch sm_90 --db c.db {}",
                                    k_fixture_templates.string(), more));
}

const std::string k_v2_error =
    "compile_error[V=2]: compile_error.cuh(11): error: static assertion failed with \"FIXTURE: an even V does not "
    "compile\"";

TEST(CompileExit, EveryCandidateCompiledIsZero) {
  test::TempDir dir;
  const Split r = compile_values(dir, "1, 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("compiled 2 (2 fresh, 0 cache hits), failed 0,", 0), 0u) << r.out;
}

TEST(CompileExit, SomeFailedIsOneNamingTheFirstAndItsReason) {
  test::TempDir dir;
  const Split first = compile_values(dir, "1, 2, 4");
  expect_line(first, k_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  EXPECT_NE(first.out.find("compiled 1 (1 fresh, 0 cache hits), failed 2,"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("  FAILED compile_error[V=2]\n    compile_error.cuh(11): error:"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("  FAILED compile_error[V=4]\n"), std::string::npos) << first.out;

  // Failures are cached: a rerun compiles nothing and still says so.
  const Split again = compile_values(dir, "1, 2, 4");
  expect_line(again, k_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  EXPECT_NE(again.out.find("(0 fresh, 3 cache hits), failed 2,"), std::string::npos) << again.out;

  // --allow-failures: the cache holds what compiles, and that is enough.
  const Split allowed = compile_values(dir, "1, 2, 4", "--allow-failures");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_EQ(allowed.err, "");
  EXPECT_NE(allowed.out.find("  FAILED compile_error[V=2]\n"), std::string::npos) << allowed.out;

  const Split json = compile_values(dir, "1, 2, 4", "--json");
  expect_line(json, k_failure, "2 of 3 candidates failed to compile; the first: " + k_v2_error);
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc.at("failed"), 2);
  ASSERT_EQ(doc.at("failures").size(), 2u);
  for (const auto& failure : doc.at("failures")) {   // the fields of a failure, pinned
    EXPECT_EQ(failure.size(), 2u) << failure.dump();
    EXPECT_TRUE(failure.at("candidate").is_string()) << failure.dump();
    EXPECT_NE(failure.at("log").get<std::string>().find("error"), std::string::npos) << failure.dump();
  }
}

TEST(CompileExit, NoneCompiledIsOneEvenWithAllowFailuresAndListsFiveInFull) {
  test::TempDir dir;
  const std::string line =
      "7 of 7 candidates failed to compile (none compiled); the first: " + k_v2_error;
  const Split r = compile_values(dir, "2, 4, 6, 8, 10, 12, 14");
  expect_line(r, k_failure, line);
  size_t shown = 0;
  for (size_t at = r.out.find("  FAILED "); at != std::string::npos; at = r.out.find("  FAILED ", at + 1)) ++shown;
  EXPECT_EQ(shown, 5u) << r.out;
  EXPECT_NE(r.out.find("  ... and 2 more failed (--json lists every one)\n"), std::string::npos) << r.out;
  expect_line(compile_values(dir, "2, 4, 6, 8, 10, 12, 14", "--allow-failures"), k_failure, line);
}

// --- --device: one meaning in every command ---------------------------------------------------

TEST(DeviceOption, BenchAndCompileTakeADeviceSpecAndSayNoDriverWithout) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present; this checks the no-driver path";
  // bench resolves the GPU before it opens the database: nothing is created.
  expect_error("bench --device abc --sizes 256 --db b.db", k_no_device, {"no CUDA driver found"});
  expect_error("bench --device 'NVIDIA H100' --sizes 256 --db b.db", k_no_device, {"no CUDA driver found"});
  expect_error("compile --device GPU-0a1b --config quick --db c.db", k_no_device,
               {"cannot find the target arch: no CUDA driver found", "pass --arch"});
}

TEST(DeviceOption, NegativeOrEmptyDeviceIsAUsageErrorBeforeTheDriverIsAsked) {
  for (const std::string command : {"bench --sizes 256 --db b.db", "compile --config quick --db c.db"}) {
    expect_error(command + " --device -1", k_usage, {"--device '-1' names no GPU", "CUDA index"});
    expect_error(command + " --device ''", k_usage, {"--device '' names no GPU"});
  }
}

TEST(DeviceOption, CompileTakesArchOrDeviceNotBoth) {
  expect_error("compile --config quick --arch sm_90 --device 0 --db c.db", k_usage, {"--device", "--arch"});
}

TEST(DeviceOption, HelpSaysTheSameInEveryCommand) {
  test::TempDir dir;
  for (const char* command : {"bench", "compile", "query", "export"}) {
    const Split help = run_split(dir, std::string(command) + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("CUDA index"), std::string::npos) << command << ":\n" << help.out;
    EXPECT_NE(help.out.find("UUID or unique part of its name"), std::string::npos) << command << ":\n" << help.out;
  }
}

// --- writes that fail: a full device ----------------------------------------------------------

/// A database with one tuned problem, as ExportSafety builds it.
void build_tuned_database(const fs::path& file) {
  Store store(file);
  const int64_t run = store.begin_run(RunRecord{});
  DeviceRecord d;
  d.uuid = "GPU-bad-input-more";
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  test::add_synthetic_winner(store, run, store.upsert_device(d), "fast", {1024, 1024, 1024});
}

TEST(FullDevice, ExportOutDevFullSaysNoSpaceAndKeepsTheDevice) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  const Split r = run_split(dir, "--quiet export --db t.db --out /dev/full");
  expect_line(r, k_usage, "cannot write /dev/full: No space left on device");
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  EXPECT_FALSE(fs::exists("/dev/full.tmp"));
}

TEST(FullDevice, ExportIntoADeviceWritesInPlaceAndNeverReplacesIt) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  // It used to write /dev/null.tmp and rename it over /dev/null (as root) or fail naming /dev/null.tmp.
  const Split null = run_split(dir, "--quiet export --db t.db --out /dev/null");
  EXPECT_EQ(null.exit_code, 0) << null.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists("/dev/null.tmp"));
  // Through /dev/stdout (a link into /proc) the header goes down the pipe, the summary after it.
  const test::CommandResult piped = test::run_command(fmt::format(
      "cd '{}' && {} --quiet export --db t.db --out /dev/stdout | cat", dir.path().string(), test::cmtune_binary()));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.rfind("// GEMM kernels tuned by cm-tune", 0), 0u) << piped.output.substr(0, 200);
  EXPECT_NE(piped.output.find("\nwrote /dev/stdout: 1 device table"), std::string::npos);
  expect_line(run_split(dir, "--quiet export --db t.db --check --out /dev/null"), k_usage,
              "--out /dev/null: is a device or a pipe; --check compares a header file");
}

TEST(FullDevice, LogFileOnAFullDeviceIsOneWarningWithTheRealReason) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  const Split r = run_split(dir, fmt::format("--log-file /dev/full --templates '{}' compile --config preset.toml "
                                             "--arch sm_90 --db c.db",
                                             k_fixture_templates.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "warning: cannot write --log-file /dev/full: No space left on device; nothing more is logged to it\n";
  ASSERT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning), r.err.rfind(warning)) << "said more than once:\n" << r.err;
  EXPECT_EQ(r.err.find("Success"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("LOG ERROR"), std::string::npos) << r.err;
}

TEST(FullDevice, LogFileMayBeStderr) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  // The check that --log-file is no database must not read it: that would wait on a pipe or terminal.
  const Split r = run_split(dir, fmt::format("--quiet --log-file /dev/stderr --templates '{}' compile --config preset.toml "
                                             "--arch sm_90 --db c.db",
                                             k_fixture_templates.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("] [info] compiling 1 candidates of 'preset'"), std::string::npos) << r.err;
}

TEST(FullDevice, StdoutOnAFullDeviceIsAnErrorNotExitZero) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  const std::string compile =
      fmt::format("--quiet --templates '{}' compile --config preset.toml --arch sm_90 --db c.db", k_fixture_templates.string());
  const std::string line = "cannot write standard output: No space left on device";
  expect_line(run_split(dir, compile, "/dev/full"), k_usage, line);              // a short summary, buffered
  expect_line(run_split(dir, compile + " --json", "/dev/full"), k_usage, line);  // JSON through std::cout
  expect_line(run_split(dir, "list --config quick", "/dev/full"), k_usage, line);  // longer than the buffer
  expect_line(run_split(dir, "--version", "/dev/full"), k_usage, line);
}

// --- paths of the wrong kind ------------------------------------------------------------------

TEST(PathKinds, FolderAsPresetAndFileAsTemplatesSayWhatTheyAre) {
  test::TempDir dir;
  fs::create_directories(dir / "presets");
  test::write_file(dir / "preset.toml", "[templates.naive]\n");
  expect_line(run_split(dir, "list --config presets/"), k_usage, "--config presets/ is a folder, not a preset file");
  expect_line(run_split(dir, "list --config presets"), k_usage, "--config presets is a folder, not a preset file");
  expect_line(run_split(dir, "--templates preset.toml list"), k_usage,
              "--templates preset.toml is a file, not a folder of templates");
  expect_line(run_split(dir, "--templates presets list"), k_usage, "--templates presets holds no template (no *.toml descriptor)");
  expect_line(run_split(dir, "--templates missing list"), k_usage, "templates folder 'missing' does not exist");
}

TEST(PathKinds, UnreadablePresetSaysWhy) {
  test::TempDir dir;
  test::write_file(dir / "locked.toml", "[templates.naive]\n");
  fs::permissions(dir / "locked.toml", fs::perms::none);
  fs::permissions(dir.path(), fs::perms::all);  // the folder is open: only the file is locked
  // Root reads a file of mode 000, so the run is nobody's where the tests run as root (as CI does).
  CMT_RUN_UNPRIVILEGED(r, fmt::format("cd '{}' && '{}' list --config locked.toml", dir.path().string(),
                                      test::cmtune_binary()));
  EXPECT_EQ(r.exit_code, k_usage) << r.output;
  EXPECT_EQ(r.output, "cm-tune: error: cannot read preset 'locked.toml': Permission denied\n");
}

TEST(PathKinds, PresetFromAPipeOrDeviceIsRead) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  // A preset through a pipe, as `--config <(generate)` gives it; it used to "not exist".
  const test::CommandResult piped =
      test::run_command(fmt::format("cat '{}' | {} --templates '{}' list --arch sm_90 --config /dev/stdin",
                                    (dir / "preset.toml").string(), test::cmtune_binary(), k_fixture_templates.string()));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_NE(piped.output.find("template compile_error:"), std::string::npos) << piped.output;
  expect_line(run_split(dir, "list --config /dev/null"), k_usage,
              "/dev/null:1: templates: required table [templates.NAME] is missing: the preset names no template");
  expect_line(run_split(dir, "list --config /dev/zero"), k_usage, "cannot read preset '/dev/zero': it is larger than 64 MiB");
}

// --- export: where --out cannot be written ----------------------------------------------------

TEST(ExportWrite, UnwritableOutSaysCannotWriteAndWhy) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  fs::create_directory_symlink("loop", dir / "loop");
  test::write_file(dir / "notes.txt", "x");
  const std::vector<std::string> before = entries(dir.path());
  expect_line(run_split(dir, "--quiet export --db t.db --out missing/x.cuh"), k_usage,
              "cannot write missing/x.cuh: folder missing does not exist");
  expect_line(run_split(dir, "--quiet export --db t.db --out loop/x.cuh"), k_usage,
              "cannot write loop/x.cuh: Too many levels of symbolic links");
  expect_line(run_split(dir, "--quiet export --db t.db --out notes.txt/x.cuh"), k_usage,
              "cannot write notes.txt/x.cuh: Not a directory");
  EXPECT_EQ(entries(dir.path()), before) << "a file was left behind";
}

// --- found by trying bad input as a new user would ---------------------------------------------

TEST(BadInputMore, EmptyOutAndTemplatesNamesAreErrors) {
  expect_error("export --db t.db --out ''", k_usage, {"--out", "the file name is empty"});   // was "cannot write : ..."
  expect_error("--templates '' list", k_usage, {"--templates: the folder name is empty"});
}

TEST(BadInputMore, EmptyOrNegativeDatabaseDeviceIsRefused) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  // '' is part of every name: it used to pick the only device, unasked.
  for (const std::string command : {"query --size 256", "export --out x.cuh"})
    for (const std::string spec : {"", "-1"})
      expect_line(run_split(dir, fmt::format("--quiet {} --db t.db --device '{}'", command, spec)), k_usage,
                  fmt::format("--device '{}' names no device: give a CUDA index (0, 1, ...), a position in the "
                              "database, a UUID or a unique part of the device's name",
                              spec));
  EXPECT_FALSE(fs::exists(dir / "x.cuh"));
}

TEST(BadInputMore, LogFileNamingADatabaseIsRefusedAndTheDatabaseKept) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  const std::string before = test::read_file(dir / "t.db");
  expect_line(run_split(dir, "--log-file t.db query --db t.db --size 1024"), k_usage,
              "--log-file t.db is a SQLite database, not a log; refusing to append to it");
  EXPECT_EQ(test::read_file(dir / "t.db"), before);
}

// SQLite's side files of the database in use, whether or not they exist, however spelt; and a side
// file of any other SQLite database: SQLite deletes a -wal or -shm (the log would be lost) and takes
// a -journal with log lines in it for a hot journal.
TEST(BadInputMore, LogFileNamingASideFileOfTheDatabaseIsRefusedWhetherOrNotItExists) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  build_tuned_database(dir / "other.db");
  fs::create_directory(dir / "sub");
  const std::string before_db = test::read_file(dir / "t.db");
  const std::string db = (dir / "t.db").string();
  for (const std::string suffix : {"-wal", "-shm", "-journal"}) {
    for (const bool exists : {false, true}) {
      SCOPED_TRACE(suffix + (exists ? ", existing" : ", missing"));
      if (exists) test::write_file(dir / ("t.db" + suffix), "not a log");
      const std::vector<std::string> before = entries(dir.path());
      for (const std::string& log : {"t.db" + suffix, "./sub/../t.db" + suffix, db + suffix})
        expect_line(run_split(dir, fmt::format("--log-file {} query --db {} --size 1024", log, db)), k_usage,
                    fmt::format("--log-file {}: is the {} file of the database {}, which SQLite deletes or replays; "
                                "name another log file",
                                log, suffix, db));
      expect_line(run_split(dir, fmt::format("--log-file other.db{} query --db t.db --size 1024", suffix)), k_usage,
                  fmt::format("--log-file other.db{0}: is the {0} file of the SQLite database other.db, which SQLite "
                              "deletes or replays; name another log file",
                              suffix));
      EXPECT_EQ(entries(dir.path()), before) << "a file was created or removed";
      if (exists) EXPECT_EQ(test::read_file(dir / ("t.db" + suffix)), "not a log");
      fs::remove(dir / ("t.db" + suffix));
    }
  }
  EXPECT_EQ(test::read_file(dir / "t.db"), before_db);
  // --db given globally, for a command that only reads.
  expect_line(run_split(dir, "--log-file t.db-shm --db t.db db info"), k_usage,
              fmt::format("--log-file t.db-shm: is the -shm file of the database {}, which SQLite deletes or replays; "
                          "name another log file",
                          "t.db"));
  // The database a tune is about to create counts too.
  expect_line(run_split(dir, "--log-file new.db-wal tune --db new.db --sizes 64"), k_usage,
              "--log-file new.db-wal: is the -wal file of the database new.db, which SQLite deletes or replays; name "
              "another log file");
  EXPECT_FALSE(fs::exists(dir / "new.db"));
  EXPECT_FALSE(fs::exists(dir / "new.db-wal"));
}

// --- Empty values that used to read as "not given" --------------------------------------------

TEST(BadInputMore, EmptyArchAndHeaderAreErrors) {
  expect_error("list --arch ''", k_usage, {"--arch", "the architecture is empty"});
  expect_error("compile --config quick --arch '' --db c.db", k_usage, {"--arch", "the architecture is empty"});
  expect_error("bench --header '' --sizes 64 --db c.db", k_usage, {"--header", "the file name is empty"});
}

}  // namespace
}  // namespace cmt
