// The files a command reads and writes, against the real binary (cli/app.cpp): writes that fail (a
// full device, stdout on a full device, an unwritable --out), paths of the wrong kind (a folder as a
// preset, a file as a templates folder), and names that are refused. Each case asserts the exit code
// and that stderr is the one line it should be.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/app.hpp"
#include "cli_support.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

namespace fs = std::filesystem;
using Split = test::SplitResult;
using test::expect_error;
using test::expect_line;
using test::run_split;

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
  expect_line(r, cli::k_exit_usage, "cannot write /dev/full: No space left on device");
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
  expect_line(run_split(dir, "--quiet export --db t.db --check --out /dev/null"), cli::k_exit_usage,
              "--out /dev/null: is a device or a pipe; --check compares a header file");
}

TEST(FullDevice, LogFileOnAFullDeviceIsOneWarningWithTheRealReason) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  const Split r = run_split(dir, fmt::format("--log-file /dev/full --templates '{}' compile --config preset.toml "
                                             "--arch sm_90 --db c.db",
                                             test::fixture_templates().string()));
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
                                             test::fixture_templates().string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("] [info] compiling 1 candidates of 'preset'"), std::string::npos) << r.err;
}

TEST(FullDevice, StdoutOnAFullDeviceIsAnErrorNotExitZero) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  const std::string compile =
      fmt::format("--quiet --templates '{}' compile --config preset.toml --arch sm_90 --db c.db", test::fixture_templates().string());
  const std::string line = "cannot write standard output: No space left on device";
  expect_line(run_split(dir, compile, "/dev/full"), cli::k_exit_usage, line);              // a short summary, buffered
  expect_line(run_split(dir, compile + " --json", "/dev/full"), cli::k_exit_usage, line);  // JSON through std::cout
  expect_line(run_split(dir, "list --config quick", "/dev/full"), cli::k_exit_usage, line);  // longer than the buffer
  expect_line(run_split(dir, "--version", "/dev/full"), cli::k_exit_usage, line);
}

// --- paths of the wrong kind ------------------------------------------------------------------

TEST(PathKinds, FolderAsPresetAndFileAsTemplatesSayWhatTheyAre) {
  test::TempDir dir;
  fs::create_directories(dir / "presets");
  test::write_file(dir / "preset.toml", "[templates.naive]\n");
  expect_line(run_split(dir, "list --config presets/"), cli::k_exit_usage, "--config presets/ is a folder, not a preset file");
  expect_line(run_split(dir, "list --config presets"), cli::k_exit_usage, "--config presets is a folder, not a preset file");
  expect_line(run_split(dir, "--templates preset.toml list"), cli::k_exit_usage,
              "--templates preset.toml is a file, not a folder of templates");
  expect_line(run_split(dir, "--templates presets list"), cli::k_exit_usage, "--templates presets holds no template (no *.toml descriptor)");
  expect_line(run_split(dir, "--templates missing list"), cli::k_exit_usage, "templates folder 'missing' does not exist");
}

TEST(PathKinds, UnreadablePresetSaysWhy) {
  test::TempDir dir;
  test::write_file(dir / "locked.toml", "[templates.naive]\n");
  fs::permissions(dir / "locked.toml", fs::perms::none);
  fs::permissions(dir.path(), fs::perms::all);  // the folder is open: only the file is locked
  // Root reads a file of mode 000, so the run is nobody's where the tests run as root (as CI does).
  CMT_RUN_UNPRIVILEGED(r, fmt::format("cd '{}' && '{}' list --config locked.toml", dir.path().string(),
                                      test::cmtune_binary()));
  EXPECT_EQ(r.exit_code, cli::k_exit_usage) << r.output;
  EXPECT_EQ(r.output, "cm-tune: error: cannot read preset 'locked.toml': Permission denied\n");
}

TEST(PathKinds, PresetFromAPipeOrDeviceIsRead) {
  test::TempDir dir;
  test::write_file(dir / "preset.toml", "[templates.compile_error]\nV = [1]\n");
  // A preset through a pipe, as `--config <(generate)` gives it; it used to "not exist".
  const test::CommandResult piped =
      test::run_command(fmt::format("cat '{}' | {} --templates '{}' list --arch sm_90 --config /dev/stdin",
                                    (dir / "preset.toml").string(), test::cmtune_binary(), test::fixture_templates().string()));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_NE(piped.output.find("template compile_error:"), std::string::npos) << piped.output;
  expect_line(run_split(dir, "list --config /dev/null"), cli::k_exit_usage,
              "/dev/null:1: templates: required table [templates.NAME] is missing: the preset names no template");
  expect_line(run_split(dir, "list --config /dev/zero"), cli::k_exit_usage, "cannot read preset '/dev/zero': it is larger than 64 MiB");
}

// --- export: where --out cannot be written ----------------------------------------------------

TEST(ExportWrite, UnwritableOutSaysCannotWriteAndWhy) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  fs::create_directory_symlink("loop", dir / "loop");
  test::write_file(dir / "notes.txt", "x");
  const std::vector<std::string> before = test::entries(dir.path());
  expect_line(run_split(dir, "--quiet export --db t.db --out missing/x.cuh"), cli::k_exit_usage,
              "cannot write missing/x.cuh: folder missing does not exist");
  expect_line(run_split(dir, "--quiet export --db t.db --out loop/x.cuh"), cli::k_exit_usage,
              "cannot write loop/x.cuh: Too many levels of symbolic links");
  expect_line(run_split(dir, "--quiet export --db t.db --out notes.txt/x.cuh"), cli::k_exit_usage,
              "cannot write notes.txt/x.cuh: Not a directory");
  EXPECT_EQ(test::entries(dir.path()), before) << "a file was left behind";
}

// --- found by trying bad input as a new user would ---------------------------------------------

TEST(BadInputMore, EmptyOutAndTemplatesNamesAreErrors) {
  expect_error("export --db t.db --out ''", cli::k_exit_usage, {"--out", "the file name is empty"});   // was "cannot write : ..."
  expect_error("--templates '' list", cli::k_exit_usage, {"--templates: the folder name is empty"});
}

TEST(BadInputMore, EmptyOrNegativeDatabaseDeviceIsRefused) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  // '' is part of every name: it used to pick the only device, unasked.
  for (const std::string command : {"query --size 256", "export --out x.cuh"})
    for (const std::string spec : {"", "-1"})
      expect_line(run_split(dir, fmt::format("--quiet {} --db t.db --device '{}'", command, spec)), cli::k_exit_usage,
                  fmt::format("--device '{}' names no device: give a CUDA index (0, 1, ...), a position in the "
                              "database, a UUID or a unique part of the device's name",
                              spec));
  EXPECT_FALSE(fs::exists(dir / "x.cuh"));
}

TEST(BadInputMore, LogFileNamingADatabaseIsRefusedAndTheDatabaseKept) {
  test::TempDir dir;
  build_tuned_database(dir / "t.db");
  const std::string before = test::read_file(dir / "t.db");
  expect_line(run_split(dir, "--log-file t.db query --db t.db --size 1024"), cli::k_exit_usage,
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
      const std::vector<std::string> before = test::entries(dir.path());
      for (const std::string& log : {"t.db" + suffix, "./sub/../t.db" + suffix, db + suffix})
        expect_line(run_split(dir, fmt::format("--log-file {} query --db {} --size 1024", log, db)), cli::k_exit_usage,
                    fmt::format("--log-file {}: is the {} file of the database {}, which SQLite deletes or replays; "
                                "name another log file",
                                log, suffix, db));
      expect_line(run_split(dir, fmt::format("--log-file other.db{} query --db t.db --size 1024", suffix)), cli::k_exit_usage,
                  fmt::format("--log-file other.db{0}: is the {0} file of the SQLite database other.db, which SQLite "
                              "deletes or replays; name another log file",
                              suffix));
      EXPECT_EQ(test::entries(dir.path()), before) << "a file was created or removed";
      if (exists) EXPECT_EQ(test::read_file(dir / ("t.db" + suffix)), "not a log");
      fs::remove(dir / ("t.db" + suffix));
    }
  }
  EXPECT_EQ(test::read_file(dir / "t.db"), before_db);
  // --db given globally, for a command that only reads.
  expect_line(run_split(dir, "--log-file t.db-shm --db t.db db info"), cli::k_exit_usage,
              fmt::format("--log-file t.db-shm: is the -shm file of the database {}, which SQLite deletes or replays; "
                          "name another log file",
                          "t.db"));
  // The database a tune is about to create counts too.
  expect_line(run_split(dir, "--log-file new.db-wal tune --db new.db --sizes 64"), cli::k_exit_usage,
              "--log-file new.db-wal: is the -wal file of the database new.db, which SQLite deletes or replays; name "
              "another log file");
  EXPECT_FALSE(fs::exists(dir / "new.db"));
  EXPECT_FALSE(fs::exists(dir / "new.db-wal"));
}

// --db naming a side file of another SQLite database: the tune would write its trials into x.db-wal,
// which SQLite deletes, or replays into x.db, the next time x.db is opened.
TEST(BadInputMore, DbNamingASideFileOfAnotherDatabaseIsRefused) {
  test::TempDir dir;
  build_tuned_database(dir / "x.db");
  const std::string before = test::read_file(dir / "x.db");
  for (const std::string suffix : {"-wal", "-shm", "-journal"}) {
    SCOPED_TRACE(suffix);
    const std::vector<std::string> entries = test::entries(dir.path());
    for (const std::string& command : {"tune --sizes 64", "query --size 64", "db check"})
      expect_line(run_split(dir, fmt::format("--db x.db{} {}", suffix, command)), cli::k_exit_usage,
                  fmt::format("--db x.db{0}: is the {0} file of the SQLite database x.db, which SQLite deletes or "
                              "replays; name the database itself",
                              suffix));
    expect_line(run_split(dir, fmt::format("tune --db ./x.db{} --sizes 64", suffix)), cli::k_exit_usage,
                fmt::format("--db ./x.db{0}: is the {0} file of the SQLite database ./x.db, which SQLite deletes or "
                            "replays; name the database itself",
                            suffix));
    EXPECT_EQ(test::entries(dir.path()), entries) << "a file was created or removed";
  }
  EXPECT_EQ(test::read_file(dir / "x.db"), before);
  // A name that merely ends so, with no database beside it, is a database like any other.
  const auto lone = run_split(dir, "--db lone.db-wal db info");
  EXPECT_NE(lone.err.find("lone.db-wal does not exist"), std::string::npos) << lone.err;
}

// --- Empty values that used to read as "not given" --------------------------------------------

TEST(BadInputMore, EmptyArchAndHeaderAreErrors) {
  expect_error("list --arch ''", cli::k_exit_usage, {"--arch", "the architecture is empty"});
  expect_error("compile --config quick --arch '' --db c.db", cli::k_exit_usage, {"--arch", "the architecture is empty"});
  expect_error("bench --header '' --sizes 64 --db c.db", cli::k_exit_usage, {"--header", "the file name is empty"});
  // report's empty --device and --problem are refused, as query's and export's are.
  expect_error("report --out r.html --device '' --db c.db", cli::k_exit_usage, {"--device", "is empty"});
  expect_error("report --out r.html --problem '' --db c.db", cli::k_exit_usage, {"--problem", "is empty (give MxNxK)"});
}

TEST(BadInputMore, CompileHelpNamesEveryElementType) {
  const auto r = test::run_command(test::cmtune_binary() + " compile --help");
  EXPECT_NE(r.output.find("f32, f64, i32, tf32x3 (default f32)"), std::string::npos) << r.output;
}

// The measuring process cannot start: one line, naming it, without a source location.
TEST(BadInputMore, AMeasuringProcessThatCannotStartIsOneLine) {
  for (const auto& [worker, needle] : {std::pair<std::string, std::string>{"/nonexistent/worker",
                                                                           "cannot start the measuring process "
                                                                           "/nonexistent/worker: No such file or directory"},
                                       {"/bin/false", "the measuring process /bin/false died (exited with status 1) "
                                                      "before it answered"}}) {
    test::TempDir dir;
    setenv("CMTUNE_MEASURE_WORKER", worker.c_str(), 1);
    const test::SplitResult r = run_split(dir, "tune --sizes 64 --config quick --db t.db");
    unsetenv("CMTUNE_MEASURE_WORKER");
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, cli::k_exit_infra);
    EXPECT_EQ(r.err, "cm-tune: error: " + needle + "\n");
  }
}

}  // namespace
}  // namespace cmt
