#include "cli/kernel_tuner_export.hpp"

#include <fmt/format.h>
#include <map>
#include <optional>
#include <string>

#include "cli/data_export.hpp"
#include "core/error.hpp"
#include "output/printers.hpp"

namespace cmt::cli {

// Named, not anonymous: a unity build compiles this file with the other commands' file-local helpers.
namespace t4_export {

/// The configuration Kernel Tuner would have tuned: the template, as one more parameter, and its
/// parameters by name (their text as it is, under "params", where it does not read as NAME=VALUE).
output::Record configuration(const TrialRecord& t) {
  output::Record config;
  config.set("template", t.template_name);
  try {
    for (const auto& [name, value] : params_from_string(t.params)) config.set(name, value);
  } catch (const UsageError&) {
    config.set("params", t.params);
  }
  return config;
}

/// A T4 measurement: {name, value, unit}. T4 admits a number, a text or a list, so a value a trial
/// lacks is left out rather than null.
void add_measurement(output::List& list, const char* name, const output::Value& value, const char* unit) {
  if (value.is_null()) return;
  list.push_back(output::Record{{"name", name}, {"value", value}, {"unit", unit}});
}

output::List measurements(const TrialRecord& t) {
  output::List list;
  add_measurement(list, "time", t.median_ms, "ms");   // the objective, as Kernel Tuner names it
  add_measurement(list, "time_min", t.min_ms, "ms");
  add_measurement(list, "time_interleaved", t.retime_median_ms, "ms");
  add_measurement(list, "cv", t.cv, "");
  add_measurement(list, "samples", t.samples, "");
  add_measurement(list, "GFLOP/s", t.median_ms && *t.median_ms > 0 ? output::Value(t.problem.flops() / *t.median_ms / 1e6)
                                                                   : output::Value(),
                  "GFLOP/s");
  add_measurement(list, "ratio_to_cublas", t.ratio_to_cublas, "");
  add_measurement(list, "max_abs_error", t.max_abs_error, "");
  add_measurement(list, "max_error_ratio", t.max_error_ratio, "");
  add_measurement(list, "simt_error_ratio", t.simt_error_ratio, "");
  if (t.registers >= 0) add_measurement(list, "registers", t.registers, "");
  if (t.smem_bytes >= 0) add_measurement(list, "smem_bytes", t.smem_bytes, "B");
  return list;
}

output::Record result(const TrialRecord& t, const DeviceRecord& device, const std::map<std::string, double>& compile_s) {
  output::Record times;
  if (const auto it = compile_s.find(t.binary_key); it != compile_s.end())
    times.set("compilation_time", it->second * 1000.0);   // milliseconds, metadata's timeunit
  // cm-tune keeps each timing's median, minimum, spread and count, not its samples.
  times.set("runtimes", output::List{});
  // Validated and passed: ok, and abandoned (timed only until it proved over 3x the best time).
  const bool passed = t.outcome == Outcome::ok || t.outcome == Outcome::abandoned;
  output::Record cm_tune{{"trial_id", t.id},
                         {"device", device.name},
                         {"device_uuid", device.uuid},
                         {"problem", t.problem.to_string()},
                         {"outcome", to_string(t.outcome)}};
  if (!t.reason.empty()) cm_tune.set("reason", t.reason);
  return output::Record{{"timestamp", t.created_at},
                        {"configuration", configuration(t)},
                        {"objectives", output::List{"time"}},
                        {"times", times},
                        {"invalidity", t4_invalidity(t.outcome)},
                        {"correctness", passed ? 1 : 0},
                        {"measurements", measurements(t)},
                        {"cm_tune", cm_tune}};
}

}  // namespace t4_export

std::string_view t4_invalidity(Outcome outcome) {
  switch (outcome) {
    case Outcome::ok:
    case Outcome::abandoned: return "correct";
    case Outcome::wrong: return "correctness";
    case Outcome::compile_error: return "compile";
    case Outcome::launch_error:
    case Outcome::crashed: return "runtime";
    case Outcome::timeout: return "timeout";
    case Outcome::skipped: return "constraints";
  }
  return "runtime";
}

output::Record t4_document(Store& store) {
  const std::map<std::string, double> compile_s = store.compile_seconds();
  output::List results;
  for (const DeviceRecord& device : store.devices())
    for (const TrialRecord& t : store.trials(device.id)) results.push_back(t4_export::result(t, device, compile_s));
  const output::Record metadata{
      {"timeunit", "milliseconds"},   // as Kernel Tuner's results files say it
      {"hardware", output::Record{{"hardware_description",
                                   output::table_records(export_table(store, ExportWhat::devices))}}},
      {"environment", output::Record{{"requirements", output::List{fmt::format("cm-tune=={}", CMTUNE_VERSION)}}}}};
  return output::Record{{"schema_version", k_t4_schema_version}, {"results", results}, {"metadata", metadata}};
}

}  // namespace cmt::cli
