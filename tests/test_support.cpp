#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hash.hpp"
#include "core/source_bundle.hpp"
#include "space/template_desc.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include <fmt/format.h>

extern char** environ;

namespace fs = std::filesystem;

namespace cmt::test {

std::vector<std::string> entries(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path candidate = fs::temp_directory_path() / ("cmt-test-" + std::to_string(rd()));
    if (fs::create_directory(candidate)) {
      m_path = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary folder");
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

CommandResult run_command(const std::string& command_line) {
  CommandResult result;
  FILE* pipe = popen((command_line + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command_line);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

SplitResult run_split(const TempDir& dir, const std::string& args, const std::string& out_to) {
  const fs::path out_file = dir / "stdout.txt";
  const std::string cmd = "cd '" + dir.path().string() + "' && CMTUNE_DB='" + (dir / "env.db").string() +
                          "' XDG_CACHE_HOME='" + (dir / "cache").string() + "' " + cmtune_binary() + " " + args +
                          " 2>&1 1>'" + (out_to.empty() ? out_file.string() : out_to) + "'";
  SplitResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + cmd);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.err.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (out_to.empty()) {
    r.out = read_file(out_file);
    fs::remove(out_file);
  }
  return r;
}

std::string tuned_database(const fs::path& file, const std::string& device_uuid) {
  Store store(file);
  const int64_t run = store.begin_run(RunRecord{});
  DeviceRecord d;
  d.uuid = device_uuid;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  return add_synthetic_winner(store, run, store.upsert_device(d), "fast", {1024, 1024, 1024});
}

std::string cmtune_binary() { return CMTUNE_BINARY; }

fs::path write_v_template(const fs::path& dir, const std::string& name, const std::string& top,
                          const std::string& launch) {
  write_file(dir / (name + ".cuh"), "// empty\n");
  write_file(dir / (name + ".toml"), fmt::format(R"(name = "{0}"
kernel = "cmt_sgemm_{0}"
summary = "test"
{1}
[[param]]
name = "V"
values = [1, 2]

[launch]
threads = "128"
tile_m = "64"
tile_n = "64"
{2}
)",
                                                 name, top, launch));
  return dir / (name + ".toml");
}

void write_file(const fs::path& file, const std::string& text) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::string cheap_preset(const std::string& name) {
  return fmt::format(R"(name = "{}"
description = "naive and coalesced: cheap to compile"
[tune]
retime_top = 2
[templates.naive]
[templates.coalesced]
BLOCK = [8, 16, 32]
)",
                     name);
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void copy_builtin_templates(const fs::path& dest) {
  fs::create_directories(dest);
  fs::copy(default_templates_dir(), dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

Target sm90() { return target_for_arch("sm_90"); }

std::string nvcc_path() {
  for (const char* var : {"CMTUNE_NVCC", "CUDACXX"})
    if (const char* v = std::getenv(var); v && *v) return v;
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "nvcc";
}

std::string cuda_root() {
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) return home;
  const fs::path nvcc = nvcc_path();
  return nvcc.is_absolute() ? nvcc.parent_path().parent_path().string() : "/usr/local/cuda";
}

CommandResult run_ok(const std::string& command_line) {
  CommandResult r = run_command(command_line);
  EXPECT_EQ(r.exit_code, 0) << command_line << "\n" << r.output;
  return r;
}

pid_t spawn_cmtune(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  std::vector<std::string> argv_s{cmtune_binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(fmt::format("posix_spawn of {} failed: {}", argv_s[0], std::strerror(rc)));
  return pid;
}

fs::path shared_cache_dir() {
  const char* env = std::getenv("CMTUNE_TEST_CACHE_DIR");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(CMTUNE_TEST_CACHE_DIR);
  fs::create_directories(dir);
  return dir;
}

fs::path shared_compile_cache() { return shared_cache_dir() / "nvrtc.db"; }

namespace {

/// Every cm-tune the tests start keeps the builds that belong to no database (export's runtime
/// library, compile/build_cache.hpp) in the shared test cache, unless the environment names a folder:
/// built once per test run, not once per test folder.
const bool k_build_cache_set = [] {
  const char* env = std::getenv("CMTUNE_CACHE_DIR");
  if (env == nullptr || *env == '\0') setenv("CMTUNE_CACHE_DIR", (shared_cache_dir() / "builds").c_str(), 1);
  return true;
}();

}  // namespace

const std::string& templates_digest() {
  static const std::string digest = [] {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(default_templates_dir()))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    Hasher h;
    for (const auto& f : files) h.field(fs::relative(f, default_templates_dir()).string()).field(read_file(f));
    return h.hex();
  }();
  return digest;
}

namespace {

/// nvcc's version line, read once: part of every nvcc cache key.
const std::string& nvcc_version() {
  static const std::string version = run_command("'" + nvcc_path() + "' --version").output;
  return version;
}

/// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

CommandResult nvcc_cached(const std::string& args, const fs::path& source, const fs::path& output,
                          const std::vector<fs::path>& inputs) {
  Hasher key;
  std::string keyed_args = replace_all(args, source.parent_path().string(), "<dir>");
  for (size_t i = 0; i < inputs.size(); ++i)
    keyed_args = replace_all(keyed_args, inputs[i].parent_path().string(), fmt::format("<input {}>", i));
  key.field(keyed_args).field(nvcc_version()).field(templates_digest());
  key.field(output.extension().string()).field(read_file(source));
  for (const auto& f : inputs) key.field(f.filename().string()).field(read_file(f));
  const fs::path cached = shared_cache_dir() / "nvcc" / (key.hex() + output.extension().string());
  std::error_code ec;
  if (fs::is_regular_file(cached, ec)) {
    fs::copy_file(cached, output, fs::copy_options::overwrite_existing);
    fs::permissions(output, fs::status(cached).permissions());
    return {0, "(nvcc output from the test cache " + cached.string() + ")\n"};
  }
  CommandResult built = run_command(fmt::format("'{}' -std=c++17 {} -o '{}' '{}'", nvcc_path(), args, output.string(),
                                                source.string()));
  if (built.exit_code == 0) {
    // Another test may store the same key at once: write aside, then rename over.
    fs::create_directories(cached.parent_path());
    const fs::path aside = cached.string() + ".tmp" + std::to_string(::getpid());
    fs::copy_file(output, aside, fs::copy_options::overwrite_existing);
    fs::rename(aside, cached);
  }
  return built;
}

/// A synthetic kernel source with one include (so the source_headers table is used too).
static SourceBundle synthetic_bundle(const std::string& tmpl) {
  SourceBundle b;
  b.main_name = tmpl + ".cuh";
  b.main_text = fmt::format(
      "#include \"common.cuh\"\ntemplate <int V>\n__global__ void cmt_sgemm_{}(int M, int N, int K, float alpha, "
      "const float* A, int lda, const float* B,\n    int ldb, float beta, float* C, int ldc) {{}}\n",
      tmpl);
  b.headers = {{"common.cuh", "#pragma once\n#define CMT_COMMON 1\n"}};
  return b;
}

std::string add_synthetic_winner(Store& store, int64_t run, int64_t device, const std::string& tmpl, const Problem& p) {
  const SourceBundle bundle = synthetic_bundle(tmpl);
  const std::string hash = source_bundle_hash(bundle);
  store.put_source(SourceRecord{hash, tmpl, bundle.main_name, bundle.main_text, bundle.headers});
  // A winner of another type than f32 was built with its DTYPE, as the tuner builds typed families.
  const std::string params = p.dtype == DType::f32 ? "V=1" : fmt::format("V=1,DTYPE={}", static_cast<int>(p.dtype));
  BinaryRecord b;
  b.key = hash_hex("binary-" + tmpl);
  b.template_name = tmpl;
  b.params = params;
  b.arch = "sm_90";
  b.source_hash = hash;
  b.ok = true;
  b.cubin = {'n', 'o', 't', ' ', 'a', ' ', 'c', 'u', 'b', 'i', 'n'};   // export embeds it; nothing loads it
  b.lowered_name = "_Z" + tmpl;
  store.put_binary(b);
  TrialRecord t;
  t.trial_key = "trial-" + tmpl;
  t.run_id = run;
  t.device_id = device;
  t.template_name = tmpl;
  t.params = params;
  t.name_expression = p.dtype == DType::f32 ? fmt::format("cmt_sgemm_{}<1>", tmpl)
                                            : fmt::format("cmt_sgemm_{}<1, {}>", tmpl, static_cast<int>(p.dtype));
  t.binary_key = b.key;
  t.problem = p;
  t.lda = p.k;
  t.ldb = t.ldc = p.n;
  t.outcome = Outcome::ok;
  t.median_ms = 1.0;
  t.gflops = p.flops() / 1e6;
  t.registers = 64;
  t.shape = {128, 64, 64, 0};
  t.requirements = Requirements{4, 1};
  WinnerRecord w;
  w.device_id = device;
  w.problem = p;
  w.scope = "overall";
  w.trial_id = store.insert_trial(t).id;
  w.template_name = tmpl;
  w.params = t.params;
  w.name_expression = t.name_expression;
  w.median_ms = 1.0;
  w.gflops = p.flops() / 1e6;
  w.ratio_to_cublas = 1.0;
  w.requirements = t.requirements;
  w.shape = t.shape;
  w.binary_key = b.key;
  store.put_winner(w);
  return hash;
}

void downgrade_schema(const fs::path& file, int version) {
  Database db(file);
  if (version < 9)
    db.exec(R"sql(
      DROP TABLE superseded_baselines;
      ALTER TABLE runs DROP COLUMN merge_input_id;
      DROP TABLE merge_inputs;
      PRAGMA user_version = 8;
    )sql");
  if (version < 8)
    db.exec(R"sql(
      ALTER TABLE trials DROP COLUMN tensor_maps;
      ALTER TABLE winners DROP COLUMN tensor_maps;
      PRAGMA user_version = 7;
    )sql");
  // Migration 7 also widened the dtype CHECKs of three tables; a downgraded database keeps the wider
  // ones, which admit every row of the older schema.
  if (version < 7)
    db.exec(R"sql(
      ALTER TABLE trials DROP COLUMN simt_error_ratio;
      PRAGMA user_version = 6;
    )sql");
  if (version < 6)
    db.exec(R"sql(
      ALTER TABLE trials RENAME COLUMN threads TO shape_threads;
      ALTER TABLE trials ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
      UPDATE trials SET threads = shape_threads;
      PRAGMA user_version = 5;
    )sql");
  if (version < 5)
    db.exec(R"sql(
      ALTER TABLE binaries DROP COLUMN takes_batch_count;
      ALTER TABLE trials DROP COLUMN problems_per_block;
      ALTER TABLE winners DROP COLUMN problems_per_block;
      PRAGMA user_version = 4;
    )sql");
  if (version < 4) {
    db.exec(R"sql(
      DROP INDEX trials_device_problem;
      ALTER TABLE trials DROP COLUMN dtype;
      CREATE INDEX trials_device_problem ON trials (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c);
      CREATE TABLE baselines_old (
        device_id INTEGER NOT NULL REFERENCES devices(id), m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
        layout TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
        batch INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1), stride_a INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
        stride_b INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0), stride_c INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
        lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldc INTEGER NOT NULL, median_ms REAL NOT NULL, min_ms REAL NOT NULL,
        cv REAL NOT NULL, samples INTEGER NOT NULL, gflops REAL NOT NULL, run_id INTEGER NOT NULL REFERENCES runs(id),
        created_at TEXT NOT NULL, PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c));
      INSERT INTO baselines_old SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, lda, ldb, ldc,
        median_ms, min_ms, cv, samples, gflops, run_id, created_at FROM baselines;
      DROP TABLE baselines;
      ALTER TABLE baselines_old RENAME TO baselines;
      CREATE TABLE winners_old (
        device_id INTEGER NOT NULL REFERENCES devices(id), m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
        layout TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
        batch INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1), stride_a INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
        stride_b INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0), stride_c INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
        scope TEXT NOT NULL CHECK (scope <> ''), trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        template_name TEXT NOT NULL, params TEXT NOT NULL, name_expression TEXT NOT NULL, median_ms REAL NOT NULL,
        gflops REAL NOT NULL, ratio_to_cublas REAL NOT NULL, align_bytes INTEGER NOT NULL, ld_multiple INTEGER NOT NULL,
        threads INTEGER NOT NULL, tile_m INTEGER NOT NULL, tile_n INTEGER NOT NULL, dynamic_smem INTEGER NOT NULL,
        binary_key TEXT NOT NULL, grid_z INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1),
        PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, scope));
      INSERT INTO winners_old SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, scope, trial_id,
        template_name, params, name_expression, median_ms, gflops, ratio_to_cublas, align_bytes, ld_multiple, threads,
        tile_m, tile_n, dynamic_smem, binary_key, grid_z FROM winners;
      DROP TABLE winners;
      ALTER TABLE winners_old RENAME TO winners;
      CREATE INDEX winners_trial ON winners (trial_id);
      PRAGMA user_version = 3;
    )sql");
  }
  if (version < 3) {
    db.exec(R"sql(
      DROP INDEX trials_device_problem;
      ALTER TABLE trials DROP COLUMN layout;
      ALTER TABLE trials DROP COLUMN batch;
      ALTER TABLE trials DROP COLUMN stride_a;
      ALTER TABLE trials DROP COLUMN stride_b;
      ALTER TABLE trials DROP COLUMN stride_c;
      CREATE INDEX trials_device_problem ON trials (device_id, m, n, k);
      ALTER TABLE binaries DROP COLUMN batched;
      CREATE TABLE baselines_old (
        device_id INTEGER NOT NULL REFERENCES devices(id), m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
        lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldc INTEGER NOT NULL, median_ms REAL NOT NULL, min_ms REAL NOT NULL,
        cv REAL NOT NULL, samples INTEGER NOT NULL, gflops REAL NOT NULL, run_id INTEGER NOT NULL REFERENCES runs(id),
        created_at TEXT NOT NULL, PRIMARY KEY (device_id, m, n, k));
      INSERT INTO baselines_old SELECT device_id, m, n, k, lda, ldb, ldc, median_ms, min_ms, cv, samples, gflops, run_id,
        created_at FROM baselines;
      DROP TABLE baselines;
      ALTER TABLE baselines_old RENAME TO baselines;
      CREATE TABLE winners_old (
        device_id INTEGER NOT NULL REFERENCES devices(id), m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
        scope TEXT NOT NULL CHECK (scope <> ''), trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        template_name TEXT NOT NULL, params TEXT NOT NULL, name_expression TEXT NOT NULL, median_ms REAL NOT NULL,
        gflops REAL NOT NULL, ratio_to_cublas REAL NOT NULL, align_bytes INTEGER NOT NULL, ld_multiple INTEGER NOT NULL,
        threads INTEGER NOT NULL, tile_m INTEGER NOT NULL, tile_n INTEGER NOT NULL, dynamic_smem INTEGER NOT NULL,
        binary_key TEXT NOT NULL, grid_z INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1),
        PRIMARY KEY (device_id, m, n, k, scope));
      INSERT INTO winners_old SELECT device_id, m, n, k, scope, trial_id, template_name, params, name_expression,
        median_ms, gflops, ratio_to_cublas, align_bytes, ld_multiple, threads, tile_m, tile_n, dynamic_smem, binary_key,
        grid_z FROM winners;
      DROP TABLE winners;
      ALTER TABLE winners_old RENAME TO winners;
      CREATE INDEX winners_trial ON winners (trial_id);
      PRAGMA user_version = 2;
    )sql");
  }
  if (version < 2)
    db.exec("ALTER TABLE trials DROP COLUMN grid_z; ALTER TABLE winners DROP COLUMN grid_z; PRAGMA user_version = 1");
}

namespace {
constexpr uid_t k_nobody_uid = 65534;
}  // namespace

/// Runs a shell command as a user who may not write what root created: nobody when the tests run as
/// root (root writes any file whatever its mode), else this user. nullopt when root cannot become
/// nobody here, or nobody cannot run the binary (a folder above the build is private to root).
std::optional<CommandResult> run_unprivileged(const std::string& command) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(out[0]);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(k_nobody_uid) != 0 || ::setuid(k_nobody_uid) != 0))
      ::_exit(125);
    if (::access(cmtune_binary().c_str(), X_OK) != 0) ::_exit(125);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  CommandResult r;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(out[0], buffer, sizeof buffer)) > 0) r.output.append(buffer, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.exit_code == 125) return std::nullopt;
  return r;
}

}  // namespace cmt::test
