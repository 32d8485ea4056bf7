// The cm-tune command line: global options and one registration function per subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "space/preset.hpp"
#include "space/target.hpp"
#include "space/template_desc.hpp"
#include "export/export_model.hpp"
#include "output/printers.hpp"
#include "output/table.hpp"
#include "output/value.hpp"
#include "store/store.hpp"

namespace cmt::cli {

struct GlobalOptions {
  bool verbose = false;
  bool quiet = false;
  std::string log_file;
  std::string db;                               // --db; empty: default_database_path()
  std::vector<std::string> template_dirs;       // --templates; empty: built-in folder
  std::string command_line;                     // argv joined, recorded with each run
  bool stops_on_signal = false;                 // the command polls stop_signal() (compile, tune)
};

/// --config and --template: which search space a command works on (list, compile, tune).
struct SpaceOptions {
  std::string config = "default";
  std::string only_template;
};

/// The templates and the preset SpaceOptions name, checked against each other (no GPU needed).
/// Candidates enumerated from them point into `templates`: keep the choice alive while they are used.
struct SpaceChoice {
  std::vector<TemplateDesc> templates;
  Preset preset;
  std::optional<std::string> only_template;
};

/// What a subcommand does once parsed; returns the exit code.
using Action = std::function<int()>;

/// Each adds its subcommand to app and sets `action` when the subcommand is chosen.
void add_devices_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_list_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_compile_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_tune_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_query_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_export_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_bench_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_precision_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_report_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_db_command(CLI::App& app, GlobalOptions& global, Action& action);
void add_measure_worker_command(CLI::App& app, Action& action);

/// Checks of option values, run while parsing (before anything touches a GPU). A bad value fails the
/// parse with "--option: '<value>' <why>", which run() prints as one line with exit code 2.
/// A whole number from min to max: "is not a whole number", "must be at least MIN", "is out of range (at most MAX)".
CLI::Validator whole_number(int64_t min, int64_t max);
/// The same for an unsigned 64-bit value (no sign allowed).
CLI::Validator unsigned_number(uint64_t min);
/// A finite number of seconds above 0 (rejects nan, inf, 0 and negatives).
CLI::Validator positive_seconds();
/// A file name that is not empty.
CLI::Validator non_empty_path();
/// Rejects an empty --arch (which would otherwise read as "no --arch given").
CLI::Validator non_empty_arch();
/// Refuses an empty value ("is empty (give EXAMPLE)"), where empty would otherwise mean the default.
CLI::Validator non_empty_value(const std::string& example);
/// Most compiler threads --jobs accepts.
constexpr int k_max_jobs = 1024;

/// Adds --db FILE to a subcommand (the global one may be given before or after it).
void add_db_option(CLI::App& sub, GlobalOptions& global);

/// --layout, --batch, --broadcast and --dtype: which operand layouts, batches and element types the
/// sizes are taken in (tune, bench, query).
struct OperandOptions {
  std::string layout;      // "nn,tn", "all"; empty: as the sizes say (nn by default)
  std::string batch;       // "1,16"; empty: as the sizes say (1 by default)
  std::string broadcast;   // "a" or "b": that operand's batch stride is 0
  std::string dtype;       // "f32,f64", "all"; empty: as the sizes say (f32 by default)
};
/// Adds the four options to a subcommand; `single` when the command takes one problem (query).
void add_operand_options(CLI::App& sub, OperandOptions& options, bool single = false);
/// Every problem in every layout and batch the options name (expand_problems); UsageError for a bad value.
std::vector<Problem> apply_operand_options(const std::vector<Problem>& problems, const OperandOptions& options);


/// The layouts of a --layout value on list and compile ("nn,tn", "all"); UsageError for a bad one.
std::vector<std::string> layout_list(const std::string& value);

/// Adds --config and --template to a subcommand.
void add_space_options(CLI::App& sub, SpaceOptions& options);
/// Loads what SpaceOptions name; UsageError for a bad preset or a template the preset lacks.
SpaceChoice load_space_choice(const GlobalOptions& global, const SpaceOptions& options);

/// The database chosen by --db, $CMTUNE_DB or the default location.
std::filesystem::path database_path(const GlobalOptions& global);
/// What a command writes to --out, as its refusals name it.
struct OutputKind {
  std::string what;      // "a header": "refusing to overwrite it with a header"
  std::string example;   // "the header file to write, e.g. tuned_sgemm.cuh": "is a folder; name ..."
};
/// The file --out writes (export, db export, report): through symbolic links, to their destination, which
/// must be no folder, no file of the database (itself, or its -wal, -shm or -journal, whether or not
/// they exist), no side file of another SQLite database, and no SQLite database at all (--out naming
/// a .db by mistake); each a UsageError naming --out and why. A device or a pipe (/dev/stdout) is
/// written into as it is.
std::filesystem::path output_destination(const std::filesystem::path& out, const std::filesystem::path& db_file,
                                         const OutputKind& kind);
/// Every template from --templates folders (or the built-in folder).
std::vector<TemplateDesc> load_all_templates(const GlobalOptions& global);
/// The descriptor of exported headers' generic default kernel, the one template that declares
/// [generic_default]: from the --templates folders if one of them has it, else the built-in one.
/// UsageError when none does or two do.
TemplateDesc generic_default_template(const GlobalOptions& global);
/// What an exported header would hold for one database device's model (its dispatch table and models,
/// from every database device of that model, merged as export merges them):
/// `query` and `bench` decide from it as the header does.
ExportModel device_export_model(Store& store, int64_t device_id, const GlobalOptions& global);
/// --arch if given (checked against NVRTC), else the arch of the GPU --device names (resolve_live_device);
/// NoDeviceError when neither.
std::string resolve_arch(const std::string& requested, const std::string& device);
/// What `list` enumerates for: --arch if given, else GPU 0 when there is one, else k_default_arch.
/// *note says which, for the listing's first line.
Target resolve_target(const std::string& requested_arch, std::string* note);
/// The architecture `list` assumes without --arch and without a GPU: the one the presets are tuned on.
constexpr const char* k_default_arch = "sm_90";
/// The database's device for --device SPEC: a CUDA index (matched by UUID when a GPU is present),
/// else a position in the database's device list, a UUID, or a unique part of a name. A device never
/// tuned is a UsageError listing the tuned devices. Without `ask_gpu` no GPU is asked: an index is a
/// position in the database's device list alone (report, which reads the database only).
DeviceRecord resolve_db_device(Store& store, const std::string& spec, bool ask_gpu = true);
/// The present GPU for --device SPEC (tune, bench, compile): a CUDA index, the GPU's UUID, or a unique
/// part of its name. UsageError for an empty or negative spec (before the driver is asked), for a name
/// or UUID that matches no GPU or more than one (the line lists the GPUs); NoDeviceError without a
/// driver, without a GPU, or for an index past the last GPU.
DeviceInfo resolve_live_device(const std::string& spec);
/// "[0] NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, GPU-...)" lines for the database's devices.
std::string describe_db_devices(Store& store);
/// A winner as a record: template, parameters, problem, time, TF/s, ratio to cuBLAS (null without a
/// cuBLAS baseline: i32), requirements.
output::Record winner_record(const WinnerRecord& w);
/// Prints a document as JSON to stdout (output::render_json: indented 2, fields in name order); a
/// failed write throws with its errno.
void print_json(const output::Value& document);
/// Prints a table as aligned text to stdout (output::render_text).
void print_text(const output::Table& table, const output::TextOptions& options = {});

/// Exit codes (README "Exit codes"): success; a failure the command reports itself (tune stopped
/// early, bench validation failed, export --check found a stale header) or an unexpected error;
/// bad input (flags, values, sizes, presets, files); no usable GPU; the machinery underneath.
constexpr int k_exit_success = 0;
constexpr int k_exit_failure = 1;
constexpr int k_exit_usage = 2;
constexpr int k_exit_no_device = 3;
constexpr int k_exit_infra = 4;

/// Parses and runs; maps errors to one line on stderr and an exit code.
int run(int argc, char** argv);

}  // namespace cmt::cli
