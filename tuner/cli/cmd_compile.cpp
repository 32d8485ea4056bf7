// cm-tune compile: JIT-compile every valid candidate of a preset into the compile cache.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/progress.hpp"
#include "cli/sizes.hpp"
#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/error.hpp"
#include "core/dtype.hpp"
#include "core/stop_signal.hpp"
#include "cuda/device.hpp"
#include "space/space.hpp"

namespace cmt::cli {

namespace {

struct CompileOptions {
  SpaceOptions space;
  std::string arch;
  std::string device = "0";
  int jobs = 0;
  bool json = false;
  bool allow_failures = false;
  std::string layout;
  std::string dtype;
};

/// Failures printed in full (the first lines of each log); --json lists every one.
constexpr size_t k_failures_shown = 5;

std::string first_lines(const std::string& text, int lines) {
  std::string out;
  size_t pos = 0;
  for (int i = 0; i < lines && pos < text.size(); ++i) {
    const size_t end = text.find('\n', pos);
    out += "    " + text.substr(pos, end == std::string::npos ? std::string::npos : end - pos) + "\n";
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

/// Why a candidate failed, in one line: the compiler's first error, else the log's first line.
std::string first_error(const std::string& log) {
  std::string first;
  for (size_t pos = 0; pos < log.size();) {
    const size_t end = std::min(log.find('\n', pos), log.size());
    const std::string line = log.substr(pos, end - pos);
    if (line.find("error") != std::string::npos) return line;
    if (first.empty()) first = line;
    pos = end + 1;
  }
  return first.empty() ? "no compiler log" : first;
}

}  // namespace

int run_compile(const GlobalOptions& global, const CompileOptions& opts) {
  const SpaceChoice choice = load_space_choice(global, opts.space);
  const auto& [templates, preset, only] = choice;
  const std::string arch = resolve_arch(opts.arch, opts.device);
  Target target = target_for_arch(arch);
  if (!opts.layout.empty()) target.layouts = layout_list(opts.layout);
  if (!opts.dtype.empty()) target.dtypes = parse_dtype_list(opts.dtype);
  const SearchSpace space = enumerate_space(templates, preset, target, only);
  // A SIGINT or SIGTERM is only noted (catch_stop_signals() is the first thing cm-tune does) and
  // polled here: what is compiling finishes and is stored, what is queued is dropped.
  if (stop_signal()) {
    spdlog::warn("stopped by {} before compiling anything", stop_signal_name());
    return 128 + stop_signal();
  }
  Store store(database_path(global));

  const auto start = std::chrono::steady_clock::now();
  const NvrtcCompiler compiler;
  CompileService service(store, compiler, arch, opts.jobs);
  spdlog::info("compiling {} candidates of '{}' for {} with NVRTC {} on {} threads", space.candidates.size(),
               preset.name, arch, nvrtc_version_string(), opts.jobs > 0 ? opts.jobs : hardware_threads());
  for (size_t i = 0; i < space.candidates.size() && !stop_signal(); ++i) service.submit(space.candidates[i], i);
  Progress progress("compile", static_cast<int64_t>(space.candidates.size()));
  int64_t done = 0;
  std::vector<CompiledCandidate> failures;
  while (auto result = service.next()) {
    if (stop_signal()) service.cancel();
    if (result->cancelled) continue;
    ++done;
    progress.update(done, fmt::format("({} cached, {} failed)", service.stats().cache_hits, service.stats().failed));
    if (!result->binary.ok) failures.push_back(std::move(*result));
  }
  progress.finish();
  const int stopped_by = stop_signal();
  // In the space's order, not the threads' completion order: the same preset reports the same first failure.
  std::sort(failures.begin(), failures.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const CompileStats& st = service.stats();
  const int64_t finished = st.total - st.cancelled;   // compiled, failed or found in the cache
  const double rate = wall > 0 ? static_cast<double>(finished) / wall : 0.0;

  if (opts.json) {
    output::Table fails({output::Column("candidate"), output::Column("log")});
    for (const auto& f : failures) fails.add_row().set("candidate", f.candidate->id()).set("log", f.binary.log);
    print_json(output::Record{{"arch", arch},
                              {"preset", preset.name},
                              {"candidates", space.candidates.size()},
                              {"finished", finished},
                              {"stopped_by", stopped_by ? output::Value(stop_signal_name()) : output::Value()},
                              {"compiled", st.compiled},
                              {"cache_hits", st.cache_hits},
                              {"failed", st.failed},
                              {"wall_seconds", wall},
                              {"candidates_per_second", rate},
                              {"failures", output::table_records(fails)}});
  } else {
    fmt::print("compiled {} ({} fresh, {} cache hits), failed {}, in {:.1f} s: {:.1f} candidates/s\n",
               finished - st.failed, st.compiled, st.cache_hits, st.failed, wall, rate);
    for (size_t i = 0; i < failures.size() && i < k_failures_shown; ++i)
      fmt::print("  FAILED {}\n{}", failures[i].candidate->id(), first_lines(failures[i].binary.log, 4));
    if (failures.size() > k_failures_shown)
      fmt::print("  ... and {} more failed (--json lists every one)\n", failures.size() - k_failures_shown);
  }
  if (stopped_by) {
    spdlog::warn("stopped by {}: interrupted after {} of {} candidates; everything compiled is kept, and rerunning "
                 "the same command continues",
                 stop_signal_name(), finished, space.candidates.size());
    return 128 + stopped_by;  // 130 for SIGINT, 143 for SIGTERM, as shells report
  }
  // The exit status says whether the cache now holds what was asked for (README "Exit codes"): every
  // candidate, or with --allow-failures at least one. Failures are cached too, so a rerun says the same.
  if (failures.empty() || (opts.allow_failures && failures.size() < space.candidates.size())) return k_exit_success;
  fmt::print(stderr, "cm-tune: error: {} of {} candidates failed to compile{}; the first: {}: {}\n", failures.size(),
             space.candidates.size(), failures.size() == space.candidates.size() ? " (none compiled)" : "",
             failures.front().candidate->id(), first_error(failures.front().binary.log));
  return k_exit_failure;
}

void add_compile_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("compile", "JIT-compile every valid candidate of a preset into the cache");
  auto opts = std::make_shared<CompileOptions>();
  add_space_options(*sub, opts->space);
  sub->add_option("--layout", opts->layout,
                  "Compile the candidates of these layouts: nn (default), nt, tn, tt, a comma list, or all");
  sub->add_option("--dtype", opts->dtype,
                  fmt::format("Compile the candidates of these element types: {} (default f32), a comma list, or all",
                              type_names(",")));
  auto* arch = sub->add_option("--arch", opts->arch, "Target architecture, e.g. sm_90 (default: the arch of --device)")
                   ->check(non_empty_arch());
  // --device only chooses the target's arch: with --arch as well, one of them would be ignored.
  sub->add_option("--device,-d", opts->device,
                  "GPU whose arch is the target, not with --arch: CUDA index, UUID or unique part of its name")
      ->capture_default_str()
      ->excludes(arch);
  sub->add_option("--jobs,-j", opts->jobs, fmt::format("Compiler threads, 1 to {} (default: all cores)", k_max_jobs))
      ->check(whole_number(1, k_max_jobs));
  sub->add_flag("--allow-failures", opts->allow_failures,
                "Exit 0 when some candidates fail to compile (still 1 when none compiles)");
  sub->add_flag("--json", opts->json, "Machine-readable summary");
  add_db_option(*sub, global);
  sub->callback([&action, &global, opts] {
    global.stops_on_signal = true;
    action = [&global, opts] { return run_compile(global, *opts); };
  });
}

}  // namespace cmt::cli
