// cm-tune compile: JIT-compile every valid candidate of a preset into the compile cache.
#include <chrono>
#include <fmt/format.h>
#include <limits>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/progress.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "tune/compile_service.hpp"

namespace cmt::cli {

namespace {

struct CompileOptions {
  SpaceOptions space;
  std::string arch;
  int device = 0;
  int jobs = 0;
  bool json = false;
};

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

}  // namespace

int run_compile(const GlobalOptions& global, const CompileOptions& opts) {
  const SpaceChoice choice = load_space_choice(global, opts.space);
  const auto& [templates, preset, only] = choice;
  const std::string arch = resolve_arch(opts.arch, opts.device);
  const SearchSpace space = enumerate_space(templates, preset, target_for_arch(arch), only);
  Store store(database_path(global));

  const auto start = std::chrono::steady_clock::now();
  const NvrtcCompiler compiler;
  CompileService service(store, compiler, arch, opts.jobs);
  spdlog::info("compiling {} candidates of '{}' for {} with NVRTC {} on {} threads", space.candidates.size(),
               preset.name, arch, nvrtc_version_string(), opts.jobs > 0 ? opts.jobs : hardware_threads());
  service.submit_all(space.candidates);
  Progress progress("compile", static_cast<int64_t>(space.candidates.size()));
  int64_t done = 0;
  std::vector<CompiledCandidate> failures;
  while (auto result = service.next()) {
    ++done;
    progress.update(done, fmt::format("({} cached, {} failed)", service.stats().cache_hits, service.stats().failed));
    if (!result->binary.ok) failures.push_back(std::move(*result));
  }
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const CompileStats& st = service.stats();
  const double rate = wall > 0 ? static_cast<double>(st.total) / wall : 0.0;

  if (opts.json) {
    nlohmann::json fails = nlohmann::json::array();
    for (const auto& f : failures)
      fails.push_back({{"candidate", f.candidate->id()}, {"log", f.binary.log}});
    print_json({{"arch", arch},
                {"preset", preset.name},
                {"candidates", st.total},
                {"compiled", st.compiled},
                {"cache_hits", st.cache_hits},
                {"failed", st.failed},
                {"wall_seconds", wall},
                {"candidates_per_second", rate},
                {"failures", fails}});
  } else {
    fmt::print("compiled {} ({} fresh, {} cache hits), failed {}, in {:.1f} s: {:.1f} candidates/s\n",
               st.total - st.failed, st.compiled, st.cache_hits, st.failed, wall, rate);
    for (const auto& f : failures) fmt::print("  FAILED {}\n{}", f.candidate->id(), first_lines(f.binary.log, 4));
  }
  return 0;  // candidates that fail to compile are results, not a failure of the command
}

void add_compile_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("compile", "JIT-compile every valid candidate of a preset into the cache");
  auto opts = std::make_shared<CompileOptions>();
  add_space_options(*sub, opts->space);
  sub->add_option("--arch", opts->arch, "Target architecture, e.g. sm_90 (default: the device's)");
  sub->add_option("--device", opts->device, "Device whose arch is the default target")
      ->capture_default_str()
      ->check(whole_number(0, std::numeric_limits<int>::max()));
  sub->add_option("--jobs,-j", opts->jobs, fmt::format("Compiler threads, 1 to {} (default: all cores)", k_max_jobs))
      ->check(whole_number(1, k_max_jobs));
  sub->add_flag("--json", opts->json, "Machine-readable summary");
  add_db_option(*sub, global);
  sub->callback([&action, &global, opts] { action = [&global, opts] { return run_compile(global, *opts); }; });
}

}  // namespace cmt::cli
