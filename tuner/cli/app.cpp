#include "cli/app.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <spdlog/spdlog.h>
#include <cuda_runtime_api.h>
#include <sqlite3.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "space/space.hpp"
#include "cuda/nvrtc_compiler.hpp"

namespace cmt::cli {

namespace {

std::string version_text() {
  std::string nvrtc;
  try {
    nvrtc = nvrtc_version_string();
  } catch (const std::exception&) {
    nvrtc = "unavailable";
  }
  return fmt::format("cm-tune {} (CUDA toolkit {}.{}, NVRTC {}, SQLite {})", CMTUNE_VERSION, CUDART_VERSION / 1000,
                     (CUDART_VERSION % 1000) / 10, nvrtc, sqlite3_libversion());
}

}  // namespace

void add_db_option(CLI::App& sub, GlobalOptions& global) {
  sub.add_option("--db", global.db, "SQLite database (default: $CMTUNE_DB or ~/.cache/cm-tune/cm-tune.db)");
}

std::filesystem::path database_path(const GlobalOptions& global) {
  return global.db.empty() ? default_database_path() : std::filesystem::path(global.db);
}

std::vector<TemplateDesc> load_all_templates(const GlobalOptions& global) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& d : global.template_dirs) dirs.emplace_back(d);
  if (dirs.empty()) dirs.push_back(default_templates_dir());
  for (const auto& d : dirs)
    if (!std::filesystem::is_directory(d)) throw UsageError(fmt::format("templates folder '{}' does not exist", d.string()));
  return load_templates(dirs);
}

TemplateDesc generic_default_template(const GlobalOptions& global) {
  for (auto& t : load_all_templates(global))
    if (t.name == "blocktile2d") return t;
  for (auto& t : load_templates({default_templates_dir()}))
    if (t.name == "blocktile2d") return t;
  throw UsageError(fmt::format("template blocktile2d (the generic default kernel of exported headers) is not in {}",
                               default_templates_dir().string()));
}

ExportModel device_export_model(Store& store, int64_t device_id, const GlobalOptions& global) {
  ExportOptions options;
  options.device_ids = {device_id};
  return build_export_model(store, options, generic_default_template(global));
}

void add_space_options(CLI::App& sub, SpaceOptions& options) {
  sub.add_option("--config", options.config, "Preset name (quick, default, full) or TOML file")->capture_default_str();
  sub.add_option("--template", options.only_template, "Only this template");
}

SpaceChoice load_space_choice(const GlobalOptions& global, const SpaceOptions& options) {
  SpaceChoice choice;
  choice.templates = load_all_templates(global);
  choice.preset = load_preset(resolve_preset(options.config));
  if (!options.only_template.empty()) choice.only_template = options.only_template;
  validate_preset(choice.preset, choice.templates);
  validate_template_choice(choice.templates, choice.preset, choice.only_template);
  return choice;
}

nlohmann::json winner_json(const WinnerRecord& w) {
  return {{"template", w.template_name},
          {"params", w.params},
          {"problem", w.problem.to_string()},
          {"median_ms", w.median_ms},
          {"tflops", w.gflops / 1e3},
          {"ratio_to_cublas", w.ratio_to_cublas},
          {"requirements", w.requirements.to_string()}};
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << std::endl; }

int run(int argc, char** argv) {
  CLI::App app{"cm-tune: an autotuner for CUDA SGEMM kernels", "cm-tune"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  app.add_flag("-v,--verbose", global.verbose, "Log debug detail");
  app.add_flag("-q,--quiet", global.quiet, "Log warnings and errors only");
  app.add_option("--log-file", global.log_file, "Also write the full log to FILE");
  app.add_option("--db", global.db, "SQLite database (default: $CMTUNE_DB or ~/.cache/cm-tune/cm-tune.db)");
  app.add_option("--templates", global.template_dirs, "Template folder(s) (default: the built-in templates/)");

  for (int i = 0; i < argc; ++i) global.command_line += (i ? " " : "") + std::string(argv[i]);
  Action action;
  add_devices_command(app, global, action);
  add_list_command(app, global, action);
  add_compile_command(app, global, action);
  add_tune_command(app, global, action);
  add_query_command(app, global, action);
  add_export_command(app, global, action);
  add_bench_command(app, global, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    setup_logging(global.verbose ? Verbosity::verbose : global.quiet ? Verbosity::quiet : Verbosity::normal,
                  global.log_file);
    return action ? action() : 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return 2;
  } catch (const NoDeviceError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return 3;
  } catch (const InfraError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace cmt::cli
