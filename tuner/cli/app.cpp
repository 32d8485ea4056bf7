#include "cli/app.hpp"
#include "cli/sizes.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <spdlog/spdlog.h>
#include <sstream>
#include <system_error>
#include <cuda_runtime_api.h>
#include <sqlite3.h>

#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/device_info.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/log.hpp"
#include "core/stop_signal.hpp"
#include "measure/protocol.hpp"
#include "space/space.hpp"

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

bool is_whole_number(const std::string& s) {
  const size_t digits = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return s.size() > digits && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits), s.end(),
                                          [](unsigned char c) { return c >= '0' && c <= '9'; });
}

/// Checks text as a whole number of type T within [min, max]; empty when it is one, else why not.
template <typename T>
std::string check_whole_number(const std::string& text, T min, T max) {
  if (!is_whole_number(text)) return fmt::format("'{}' is not a whole number", text);
  const bool negative = text[0] == '-';
  const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
  T value{};
  const auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size()) {
    if (negative) return fmt::format("'{}' must be at least {}", text, min);  // too negative, or a sign on unsigned
    return fmt::format("'{}' is out of range (at most {})", text, max);
  }
  if (value < min) return fmt::format("'{}' must be at least {}", text, min);
  if (value > max) return fmt::format("'{}' is out of range (at most {})", text, max);
  return "";
}

/// Edit distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

/// One line for a parse error CLI11 reports (help and version excepted), naming what is wrong.
std::string parse_error_line(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  if (app.get_subcommands().empty()) {
    // No command chosen: a misspelled one is left over as an unexpected argument.
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      names.push_back(sub->get_name());
    const std::string commands = fmt::format("commands: {}", fmt::join(names, ", "));
    for (const std::string& arg : app.remaining()) {
      if (!arg.empty() && arg[0] == '-') return fmt::format("unknown option {} ({}; --help lists the options)", arg, commands);
      std::string line = fmt::format("unknown command '{}' ({})", arg, commands);
      const auto nearest = std::min_element(names.begin(), names.end(), [&](const auto& a, const auto& b) {
        return edit_distance(arg, a) < edit_distance(arg, b);
      });
      if (nearest != names.end() && edit_distance(arg, *nearest) <= 2) line += fmt::format("; did you mean '{}'?", *nearest);
      return line;
    }
    if (e.get_name() == "RequiredError" && what.rfind("A subcommand", 0) == 0) return fmt::format("no command given ({})", commands);
  }
  const std::string not_expected = "not expected: ";
  if (const size_t at = what.find(not_expected); at != std::string::npos) {
    const std::string args = one_line(what.substr(at + not_expected.size()));
    const bool option = !args.empty() && args[0] == '-';
    const std::string command = app.get_subcommands().empty() ? "" : " for " + app.get_subcommands().front()->get_name();
    return fmt::format("{} '{}'{}", option ? "unknown option" : "unexpected argument", args, command);
  }
  const std::string convert = "Could not convert: ";
  if (e.get_name() == "ConversionError" && what.rfind(convert, 0) == 0) {
    const std::string rest = what.substr(convert.size());
    const size_t eq = rest.find(" = ");
    if (eq != std::string::npos) return fmt::format("{}: '{}' is not a valid value", rest.substr(0, eq), one_line(rest.substr(eq + 3)));
  }
  // "--size: 1 required INT missing"
  if (const size_t colon = what.find(": "); colon != std::string::npos && what.size() > 8 &&
                                            what.compare(what.size() - 8, 8, " missing") == 0 &&
                                            what.find(" required ", colon) != std::string::npos)
    return fmt::format("{} needs a value", what.substr(0, colon));
  return one_line(what);
}

/// Stdout could not be written (a full disk, a closed descriptor): one line, and the exit status of
/// an unusable file, since a script reading the output would get less than was printed.
int stdout_failed(int err) {
  fmt::print(stderr, "cm-tune: error: cannot write standard output: {}\n",
             err ? std::generic_category().message(err) : "an earlier write failed");
  return k_exit_usage;
}

/// Flushes stdout before the exit status is given, so a failed write is said, not lost at exit.
int flushed_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return stdout_failed(errno);
  return code;
}

}  // namespace

CLI::Validator whole_number(int64_t min, int64_t max) {
  return CLI::Validator([min, max](std::string& text) { return check_whole_number<int64_t>(text, min, max); }, "");
}

CLI::Validator unsigned_number(uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) { return check_whole_number<uint64_t>(text, min, std::numeric_limits<uint64_t>::max()); },
      "");
}

CLI::Validator positive_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return fmt::format("'{}' is not a number of seconds", text);
        if (!std::isfinite(value) || errno == ERANGE) return fmt::format("'{}' is not a finite number of seconds", text);
        if (value <= 0) return fmt::format("'{}' must be more than 0 seconds", text);
        return "";
      },
      "");
}

CLI::Validator non_empty_path() {
  return CLI::Validator([](std::string& text) { return text.empty() ? std::string("the file name is empty") : std::string(); }, "");
}

CLI::Validator non_empty_value(const std::string& example) {
  return CLI::Validator([example](std::string& text) { return text.empty() ? fmt::format("is empty (give {})", example) : std::string(); }, "");
}

CLI::Validator non_empty_arch() {
  return CLI::Validator(
      [](std::string& text) { return text.empty() ? std::string("the architecture is empty (e.g. sm_90)") : std::string(); }, "");
}

void add_db_option(CLI::App& sub, GlobalOptions& global) {
  sub.add_option("--db", global.db, "SQLite database (default: $CMTUNE_DB or ~/.cache/cm-tune/cm-tune.db)")
      ->check(non_empty_path());
}

std::filesystem::path database_path(const GlobalOptions& global) {
  return global.db.empty() ? default_database_path() : std::filesystem::path(global.db);
}

std::filesystem::path output_destination(const std::filesystem::path& out, const std::filesystem::path& db_file,
                                         const OutputKind& kind) {
  if (is_stream_file(out)) return out;
  const std::filesystem::path destination = symlink_destination(out);
  const std::string through = destination == out ? "" : fmt::format(" (a symbolic link to {})", destination.string());
  const auto refuse = [&](const std::string& why) {
    return UsageError(fmt::format("--out {}{}: {}", out.string(), through, why));
  };
  std::error_code ec;
  if (std::filesystem::is_directory(destination, ec)) throw refuse("is a folder; name " + kind.example);
  if (std::filesystem::exists(destination, ec) && !std::filesystem::is_regular_file(destination, ec))
    throw refuse(fmt::format("is neither a file nor a folder (a block device or a socket); refusing to write {} into it",
                             kind.what));
  if (const auto file = database_file_kind(destination, db_file)) {
    if (!file->side_file) throw refuse(fmt::format("is {}; refusing to overwrite it with {}", file->what, kind.what));
    throw refuse(fmt::format("is {}, which SQLite deletes or replays; refusing to write {} there", file->what, kind.what));
  }
  if (is_sqlite_file(destination))
    throw refuse(fmt::format("is a SQLite database, not {}; refusing to overwrite it", kind.what));
  return destination;
}

std::vector<TemplateDesc> load_all_templates(const GlobalOptions& global) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& d : global.template_dirs) dirs.emplace_back(d);
  if (dirs.empty()) dirs.push_back(default_templates_dir());
  std::error_code ec;
  for (const auto& d : dirs) {
    if (d.empty()) throw UsageError("--templates: the folder name is empty");
    if (std::filesystem::is_directory(d, ec)) continue;
    if (std::filesystem::exists(d, ec))
      throw UsageError(fmt::format("--templates {} is a file, not a folder of templates", d.string()));
    throw UsageError(fmt::format("templates folder '{}' does not exist", d.string()));
  }
  std::vector<TemplateDesc> templates = load_templates(dirs);
  // A folder without descriptors would surface later as every preset template being unknown.
  for (const auto& d : dirs)
    if (std::none_of(templates.begin(), templates.end(), [&](const TemplateDesc& t) {
          return std::filesystem::equivalent(t.descriptor_path.parent_path(), d, ec);
        }))
      throw UsageError(fmt::format("--templates {} holds no template (no *.toml descriptor)", d.string()));
  return templates;
}

TemplateDesc generic_default_template(const GlobalOptions& global) {
  const std::vector<TemplateDesc> templates = load_all_templates(global);
  if (const TemplateDesc* t = find_generic_default(templates)) return *t;
  const std::vector<TemplateDesc> builtin = load_templates({default_templates_dir()});
  if (const TemplateDesc* t = find_generic_default(builtin)) return *t;
  throw UsageError(fmt::format("no template declares [generic_default] (the generic default kernel of exported "
                               "headers), neither in the templates folders nor in {}",
                               default_templates_dir().string()));
}

ExportModel device_export_model(Store& store, int64_t device_id, const GlobalOptions& global) {
  // The table the exported header has for this device's model: every database device of the same
  // name, compute capability and SM count (the same model in other hosts, or a run's shards on
  // other GPUs) merged into one, as export merges them.
  ExportOptions options;
  options.device_ids = table_device_ids(store, device_id);
  return build_export_model(store, options, generic_default_template(global));
}

void add_operand_options(CLI::App& sub, OperandOptions& options, bool single) {
  sub.add_option("--layout", options.layout,
                 single ? "op(A) op(B) over row-major storage: nn (default), nt, tn or tt"
                        : "Layouts, op(A) op(B) over row-major storage: nn, nt, tn, tt, a comma list, or all (default: "
                          "as the sizes say, nn)");
  sub.add_option("--batch", options.batch,
                 single ? "Batch count of a strided-batched problem (default 1)"
                        : "Batch counts of strided-batched problems, a comma list (default: as the sizes say, 1)");
  sub.add_option("--broadcast", options.broadcast, "a or b: that operand is shared by the whole batch (stride 0)");
  sub.add_option("--dtype", options.dtype,
                 single ? fmt::format("Element type: {} (default f32)", type_names())
                        : fmt::format("Element types: {}, a comma list, or all (default: as the sizes say, f32)",
                                      type_names(",")));
}

std::vector<Problem> apply_operand_options(const std::vector<Problem>& problems, const OperandOptions& options) {
  return expand_problems(problems, options.layout, options.batch, options.broadcast, options.dtype);
}

std::vector<std::string> layout_list(const std::string& value) {
  std::vector<std::string> out;
  for (const Problem& p : expand_problems({Problem{1, 1, 1}}, value, ""))
    out.emplace_back(p.layout());
  return out;
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

output::Record winner_record(const WinnerRecord& w) {
  return {{"template", w.template_name},
          {"params", w.params},
          {"problem", w.problem.to_string()},
          {"median_ms", w.median_ms},
          {"tflops", w.gflops / 1e3},
          // null without a cuBLAS baseline (i32), where the stored 0 means "none"
          {"ratio_to_cublas", type_info(w.problem.dtype).cublas_baseline ? output::Value(w.ratio_to_cublas) : output::Value()},
          {"requirements", w.requirements.to_string()}};
}

namespace {

/// --log-file must not name a file of the database in use or a side file of any SQLite database,
/// whether or not it exists: log lines appended to the database damage it, and SQLite deletes a
/// -wal or -shm file (losing the log) or replays a -journal (damaging the database).
/// The database in use, or nullopt where none can be chosen (no --db, $CMTUNE_DB or HOME): the
/// command that needs one says so itself.
std::optional<std::filesystem::path> database_path_if_any(const GlobalOptions& global) {
  try {
    return database_path(global);
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

void check_log_file(const GlobalOptions& global) {
  if (global.log_file.empty() || is_stream_file(global.log_file)) return;   // /dev/stderr
  // Without a database in use, only the side-file rule applies.
  const auto kind = database_file_kind(global.log_file, database_path_if_any(global).value_or(std::filesystem::path()));
  if (!kind) return;
  std::error_code ec;   // an existing database: setup_logging says "is a SQLite database, not a log"
  if (!kind->side_file && std::filesystem::is_regular_file(global.log_file, ec) && is_sqlite_file(global.log_file)) return;
  throw UsageError(fmt::format("--log-file {}: is {}{}; name another log file", global.log_file, kind->what,
                                 kind->side_file ? ", which SQLite deletes or replays" : ""));
}

/// --db (or $CMTUNE_DB) must not name a side file of another SQLite database: the tune would go
/// into x.db-wal, which SQLite deletes, or replays into x.db, when x.db is next opened.
void check_database_file(const GlobalOptions& global) {
  const auto db_file = database_path_if_any(global);
  if (!db_file) return;
  const auto kind = database_file_kind(*db_file, {});
  if (kind && kind->side_file)
    throw UsageError(fmt::format("--db {}: is {}, which SQLite deletes or replays; name the database itself",
                                 db_file->string(), kind->what));
}

}  // namespace

// fmt: a failed write throws with its errno.
void print_json(const output::Value& document) { fmt::print("{}\n", output::render_json(document)); }

void print_text(const output::Table& table, const output::TextOptions& options) {
  fmt::print("{}", output::render_text(table, options));
}

int run(int argc, char** argv) {
  // main() caught SIGINT and SIGTERM before anything ran (a signal is only noted); commands that
  // do not poll stop_signal() give them back once the command is known.
  CLI::App app{"cm-tune: an autotuner for CUDA GEMM kernels (FP32, FP64, INT32)", "cm-tune"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  app.add_flag("-v,--verbose", global.verbose, "Log debug detail");
  app.add_flag("-q,--quiet", global.quiet, "Log warnings and errors only");
  app.add_option("--log-file", global.log_file, "Also write the full log to FILE (its folder must exist)")
      ->check(non_empty_path());
  app.add_option("--db", global.db, "SQLite database (default: $CMTUNE_DB or ~/.cache/cm-tune/cm-tune.db)")
      ->check(non_empty_path());
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
  add_precision_command(app, global, action);
  add_report_command(app, global, action);
  add_db_command(app, global, action);
  add_measure_worker_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    release_stop_signals();
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {   // --help, --version
      std::ostringstream text;   // printed with fmt, which says why a write failed; std::cout does not
      const int code = app.exit(e, text, text);
      fmt::print("{}", text.str());
      return flushed_stdout(code);
    }
    fmt::print(stderr, "cm-tune: error: {}\n", parse_error_line(app, e));
    return k_exit_usage;
  }
  if (!global.stops_on_signal) release_stop_signals();
  try {
    check_database_file(global);
    check_log_file(global);
    setup_logging(global.verbose ? Verbosity::verbose : global.quiet ? Verbosity::quiet : Verbosity::normal,
                  global.log_file);
    return flushed_stdout(action ? action() : 0);
  } catch (const StoppedBySignal& e) {
    spdlog::warn("stopped by {} {}", stop_signal_name(), e.what());
    return 128 + stop_signal();
  } catch (const UsageError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_usage;
  } catch (const NoDeviceError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_no_device;
  } catch (const InfraError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_infra;
  } catch (const StartError& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_infra;
  } catch (const std::system_error& e) {
    if (std::ferror(stdout)) return stdout_failed(e.code().value());   // fmt::print's failed write
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_failure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cm-tune: error: {}\n", e.what());
    return k_exit_failure;
  }
}

}  // namespace cmt::cli
