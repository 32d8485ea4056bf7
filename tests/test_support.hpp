// Helpers shared by the CPU and GPU test suites.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "core/error.hpp"
#include "core/types.hpp"
#include "space/target.hpp"

namespace cmt {
class Store;
}

namespace cmt::test {

/// Stores, as the tuner does, a synthetic template's source (an empty cmt_sgemm_<tmpl><V> that
/// includes one header), its sm_90 binary, one passing trial at p and that trial as p's winner; for
/// a problem of another type than f32 the kernel is built with its DTYPE (params V=1,DTYPE=n).
/// Returns the source's hash.
std::string add_synthetic_winner(Store& store, int64_t run, int64_t device, const std::string& tmpl, const Problem& p);
/// A new database at file holding one H100 device (that UUID) with add_synthetic_winner's
/// template "fast" tuned at 1024^3, closed again. Returns the source's hash.
std::string tuned_database(const std::filesystem::path& file, const std::string& device_uuid);

/// The names of a folder's entries, sorted (what a command left behind, temporary files included).
std::vector<std::string> entries(const std::filesystem::path& folder);
/// The lines of a text, without their newlines.
std::vector<std::string> lines_of(const std::string& text);

/// Rewrites a database of the latest schema as an older cm-tune wrote it: the exact reverse of every
/// migration after `version` (8: no merge provenance; 5: threads twice in trials; 4: problems per block; 3: layouts and batches; 2: grid_z), rows kept,
/// user_version set. The migration tests start from this.
void downgrade_schema(const std::filesystem::path& file, int version);

/// The message of the UsageError thrown by f, or "<no UsageError thrown>" when none is (other
/// exceptions propagate and fail the test).
template <typename F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "<no UsageError thrown>";
}

/// A fresh temporary folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

 private:
  std::filesystem::path m_path;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;   // stdout and stderr together
};

/// The preset and template fixtures of the space tests (tests/fixtures/space).
inline const std::filesystem::path k_space_fixtures = std::filesystem::path(CMTUNE_TEST_FIXTURES) / "space";

/// Runs a shell command line, capturing its output.
CommandResult run_command(const std::string& command_line);
/// run_command, expecting exit 0 (a failure shows the command and its output).
CommandResult run_ok(const std::string& command_line);
/// Runs a shell command as a user who may not read or write what root created: nobody when the tests
/// run as root (root reads and writes any file whatever its mode), else this user. nullopt when root
/// cannot become nobody here, or nobody cannot run the binary (a folder above the build is private).
std::optional<CommandResult> run_unprivileged(const std::string& command);
struct SplitResult {
  int exit_code = -1;
  std::string out, err;
};

/// Runs cm-tune with args (shell syntax, redirections included) in dir, with $CMTUNE_DB and
/// $XDG_CACHE_HOME pointing inside it so no default database outside is touched; stdout and
/// stderr apart. out_to: a file stdout goes to instead (then `out` is empty).
SplitResult run_split(const TempDir& dir, const std::string& args, const std::string& out_to = "");
/// Starts cm-tune with `args` (no shell), its stdout and stderr written to the files, and returns its
/// process id without waiting; throws when it cannot be started.
pid_t spawn_cmtune(const std::vector<std::string>& args, const std::filesystem::path& out,
                   const std::filesystem::path& err);
/// The cm-tune binary built alongside the tests.
std::string cmtune_binary();
/// Writes text to a file, creating parent folders.
void write_file(const std::filesystem::path& file, const std::string& text);
/// A template descriptor in `dir` (NAME.toml beside an empty NAME.cuh, kernel cmt_sgemm_NAME) with one
/// parameter V (values 1, 2), `top` as extra top-level lines and `launch` after its [launch] table's
/// threads 128 and 64 x 64 tile (more launch keys, or tables after it); returns the descriptor's path.
std::filesystem::path write_v_template(const std::filesystem::path& dir, const std::string& name,
                                       const std::string& top, const std::string& launch = "");
std::string read_file(const std::filesystem::path& file);
/// A preset of naive and coalesced (BLOCK 8, 16, 32), cheap to compile, with retime_top 2, named
/// `name`: the tests that run whole tunes with the scripted measuring process.
std::string cheap_preset(const std::string& name);
/// Copies the built-in templates folder into dest (for tests that edit a template).
void copy_builtin_templates(const std::filesystem::path& dest);
/// The Hopper target (sm_90, 227 KiB of shared memory per block) the presets are tuned for.
Target sm90();
/// nvcc: $CMTUNE_NVCC, else $CUDACXX, else /usr/local/cuda/bin/nvcc if present, else from PATH.
std::string nvcc_path();
/// The CUDA toolkit's folder (its include/ and lib64/): $CUDA_HOME, else the folder above an absolute
/// nvcc_path()'s bin/, else /usr/local/cuda.
std::string cuda_root();

/// The folder of the compile caches the tests share: $CMTUNE_TEST_CACHE_DIR, else test-cache/ in the
/// build folder (created). scripts/test.sh points the sanitized run at the main run's, so the
/// compilers (not instrumented) run once per kernel in a whole test run.
std::filesystem::path shared_cache_dir();
/// The compile cache (a cm-tune database) of the tests that NVRTC-compile the built-in templates: a
/// cache hit is keyed, as in the product, by the source and its includes, the parameters, the arch,
/// NVRTC's version and the options, so it is the build a compile would give.
std::filesystem::path shared_compile_cache();
/// A hash of every file of the built-in templates folder (by relative path), computed once per
/// process: the key of what the tests cache from builds of them.
const std::string& templates_digest();
/// Runs `nvcc -std=c++17 ARGS -o OUTPUT SOURCE` and returns what it printed, or copies OUTPUT from
/// an earlier run of the same inputs without running nvcc: the key hashes ARGS, nvcc's version, the
/// contents of SOURCE and of `inputs` (files it includes from outside the built-in templates, e.g.
/// an exported header) and of every file of the built-in templates folder; the folders of SOURCE
/// and of each input are keyed by position, not path (tests build in fresh temporary folders).
/// Failed builds are not cached.
CommandResult nvcc_cached(const std::string& args, const std::filesystem::path& source,
                          const std::filesystem::path& output, const std::vector<std::filesystem::path>& inputs = {});

/// Empty when a CUDA device is usable; otherwise why not (driver missing, no device). Defined in
/// gpu_support.cpp, which only the test binaries that link the CUDA library carry.
std::string gpu_unavailable_reason();

}  // namespace cmt::test

/// Runs `command` with test::run_unprivileged into `result` (a test::CommandResult), or skips the
/// current test, visibly, where cm-tune cannot run as an unprivileged user.
#define CMT_RUN_UNPRIVILEGED(result, command)                                              \
  const auto result##_maybe = ::cmt::test::run_unprivileged(command);                      \
  if (!result##_maybe) GTEST_SKIP() << "cannot run cm-tune as an unprivileged user here";  \
  const ::cmt::test::CommandResult& result = *result##_maybe

/// Skips the current test, visibly and with the reason, when no GPU can be used.
#define CMT_REQUIRE_GPU()                                                      \
  do {                                                                         \
    const std::string cmt_reason_ = ::cmt::test::gpu_unavailable_reason();     \
    if (!cmt_reason_.empty()) GTEST_SKIP() << "needs a GPU: " << cmt_reason_;  \
  } while (0)
