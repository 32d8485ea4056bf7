// The fields of every command's --json, pinned: each document's fields, as paths ("rows[].winner"),
// must be exactly the listed ones, so renaming or dropping a field (or adding one unannounced) fails
// here. tune runs with the scripted measuring process (tests/worker/scripted_worker.cpp), and query,
// export and db read what it stored. bench, precision and devices need a GPU: their documents are
// pinned from the functions that build them (cli/bench_report.hpp, cli/precision_report.hpp,
// cli/device_report.hpp), on made-up measurements.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/bench_report.hpp"
#include "cli/device_report.hpp"
#include "cli/precision_report.hpp"
#include "cli_support.hpp"
#include "db_builder.hpp"
#include "output/printers.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

using Paths = std::set<std::string>;

/// Every field of a JSON document as a path: "a", "a.b", "rows[].c" (the elements of an array merged).
void collect_paths(const nlohmann::json& j, const std::string& prefix, Paths& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      out.insert(path);
      collect_paths(value, path, out);
    }
  } else if (j.is_array()) {
    for (const auto& element : j) collect_paths(element, prefix + "[]", out);
  }
}

Paths paths_of(const std::string& json_text) {
  Paths out;
  collect_paths(nlohmann::json::parse(json_text), "", out);
  return out;
}

std::string listed(const Paths& paths) {
  std::string out;
  for (const auto& p : paths) out += "  " + p + "\n";
  return out;
}

/// The fields of `json_text` are `expected`; the message lists what is missing and what is extra.
void expect_paths(const std::string& what, const std::string& json_text, const Paths& expected) {
  Paths got;
  ASSERT_NO_THROW(got = paths_of(json_text)) << what << ": not JSON:\n" << json_text;
  Paths missing, extra;
  for (const auto& p : expected)
    if (!got.count(p)) missing.insert(p);
  for (const auto& p : got)
    if (!expected.count(p)) extra.insert(p);
  EXPECT_TRUE(missing.empty() && extra.empty()) << what << " --json\nmissing:\n"
                                                << listed(missing) << "unexpected:\n"
                                                << listed(extra);
}

const Paths k_winner_fields = {"median_ms", "params", "problem", "ratio_to_cublas", "requirements", "template", "tflops"};

/// `prefix` and `prefix.` before each of `fields` (a record's fields).
Paths under(const std::string& prefix, const Paths& fields) {
  Paths out{prefix};
  for (const auto& f : fields) out.insert(prefix + "." + f);
  return out;
}

/// `prefix` and `prefix[].` before each of `fields` (the fields of an array's records).
Paths elements(const std::string& prefix, const Paths& fields) {
  Paths out{prefix};
  for (const auto& f : fields) out.insert(prefix + "[]." + f);
  return out;
}

Paths joined(std::initializer_list<Paths> parts) {
  Paths out;
  for (const Paths& p : parts) out.insert(p.begin(), p.end());
  return out;
}

class JsonFields : public test::ScriptedTune {
 protected:
  JsonFields() : ScriptedTune("fields", "32, 64") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    set_env("CMTUNE_SCRIPT_HASHED", "1");
  }
  test::SplitResult run(const std::string& args) const { return test::run_split(m_dir, "--quiet --db t.db " + args); }
};

// tune, then query, export and db on what it stored: one test, so the tune runs once.
TEST_F(JsonFields, TuneQueryExportAndDbPrintTheirFields) {
  // f32 and i32 (whose rows carry the INT32 comparison), with calibration (its own rows).
  const auto tune = run("tune --sizes 64,96x80x72:tn*3 --dtype f32,i32 --config " + preset() +
                        " --seed 3 --jobs 2 --json");
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  expect_paths("tune", tune.out,
               joined({{"device", "device.arch", "device.index", "device.name", "device.uuid", "gpus", "gpus[].index", "gpus[].uuid", "gpus[].jobs", "preset", "shard", "run_id",
                        "candidates", "trials_measured", "trials_reused", "compile_cache_hits", "compiled",
                        "compile_failures", "wall_seconds", "stopped_early", "problems", "problems[].problem",
                        "problems[].ok", "problems[].wrong", "problems[].failed", "problems[].abandoned",
                        "problems[].skipped", "problems[].cublas_tflops", "problems[].int32_peak_tops",
                        "problems[].int32_peak_fraction", "problems[].f32_winner_tflops",
                        "problems[].ratio_to_f32_winner", "calibration", "calibration[].problem", "calibration[].ok",
                        "calibration[].cublas_tflops"},
                       under("problems[].winner", k_winner_fields), under("problems[].portable_winner", k_winner_fields),
                       under("calibration[].winner", k_winner_fields)}));

  const auto query = run("query --size 64 --json");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  expect_paths("query", query.out,
               {"device", "device.name", "device.uuid", "problem", "tuned", "dispatch", "dispatch.kernel",
                "dispatch.template", "dispatch.params", "dispatch.name_expression", "dispatch.requirements",
                "dispatch.dtype", "dispatch.predicted_us", "dispatch.splits", "dispatch.held_out_error_median",
                "dispatch.held_out_points", "dispatch_reason", "dispatch_kind", "served", "predictions",
                "predictions[].kernel", "predictions[].predicted_us", "predictions[].usable",
                "predictions[].in_domain", "cublas_tflops", "top", "top[].template", "top[].params",
                "top[].median_ms", "top[].tflops", "top[].ratio_to_cublas", "top[].requirements"});

  const auto exported = run("export --out h.cuh --json");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const Paths spread = {"count", "median", "p90", "max"};
  expect_paths("export", exported.out,
               joined({{"out", "written", "form", "bytes", "summary", "held_out", "held_out[].device", "held_out[].dtype",
                        "held_out[].shapes", "held_out[].unmeasured_choices", "held_out[].problems",
                        "held_out[].problems[].problem", "held_out[].problems[].chosen",
                        "held_out[].problems[].chosen_predicted_us", "held_out[].problems[].chosen_us",
                        "held_out[].problems[].chosen_measured", "held_out[].problems[].chosen_error",
                        "held_out[].problems[].best", "held_out[].problems[].best_us",
                        "held_out[].problems[].regret", "unserved", "unserved.Scripted H100"},
                       under("held_out[].model_error", spread), under("held_out[].regret", spread)}));

  const auto info = run("db info --json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  expect_paths("db info", info.out,
               {"database", "file_bytes", "schema_version", "devices", "devices[].name", "devices[].uuid",
                "devices[].arch", "devices[].problems", "devices[].trials", "devices[].winners", "problems", "trials",
                "trials_by_outcome", "trials_by_outcome.ok", "winners", "runs", "binaries", "binaries.cubins",
                "binaries.cubin_bytes", "binaries.cubin_raw_bytes", "binaries.failed_compiles",
                "binaries.dropped_cubins", "sources"});

  const auto check = run("db check --json");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  expect_paths("db check", check.out, {"database", "ok", "checks", "checks[].name", "checks[].ok", "checks[].detail"});

  const auto vacuum = run("db vacuum --dry-run --json");
  ASSERT_EQ(vacuum.exit_code, 0) << vacuum.err;
  expect_paths("db vacuum", vacuum.out,
               {"database", "dry_run", "dropped_cubins", "dropped_bytes", "kept_cubins", "bytes_before", "bytes_after"});

  // Twice, so that the second names the first in merged_before.
  ASSERT_EQ(run("db merge m.db t.db --json").exit_code, 0);
  const auto merge = run("db merge m.db t.db --json");
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  expect_paths("db merge", merge.out,
               joined({{"out", "created", "changed", "devices", "devices_added", "runs_added", "binaries_added",
                        "cubins_restored", "sources_added", "winners_recomputed", "content_hash"},
                       elements("inputs", {"path", "absolute_path", "content_hash", "nothing_new", "merged_before",
                                           "merged_before.path", "merged_before.at", "runs", "trials_added",
                                           "trials_duplicate", "trials_replaced", "trials_superseded"}),
                       under("trials", {"added", "duplicate", "replaced", "superseded"}),
                       under("baselines", {"added", "replaced", "superseded"})}));
}

TEST_F(JsonFields, QueryOfADeviceWithoutWinners) {
  { test::DbBuilder(m_dir / "t.db").add_device("GPU-fields", "NVIDIA H100 80GB HBM3", 9, 0, 132); }
  const auto query = run("query --size 64 --json");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  expect_paths("query (nothing tuned)", query.out, {"device", "device.name", "device.uuid", "problem", "dispatch"});
}

TEST_F(JsonFields, ListAndCompilePrintTheirFields) {
  const auto space = test::run_split(m_dir, "list --config quick --template fused_batch --arch sm_90 --json");
  ASSERT_EQ(space.exit_code, 0) << space.err;
  const Paths pruned = {"reason", "count"};
  expect_paths("list", space.out,
               joined({{"preset", "preset.name", "preset.description", "preset.file", "preset.content_hash",
                        "preset.tune", "preset.tune.budget_ms", "preset.tune.min_samples", "preset.tune.max_samples",
                        "preset.tune.warmup", "preset.tune.retime_top", "preset.tune.retime_rounds",
                        "preset.tune.abandon_factor", "target", "target.arch", "target.DEVICE_SMEM_PER_BLOCK",
                        "templates", "templates[].name", "templates[].kernel", "templates[].summary",
                        "templates[].descriptor", "templates[].source", "templates[].layouts", "templates[].batched",
                        "templates[].dtypes", "templates[].params", "templates[].params[].name",
                        "templates[].params[].values", "templates[].params[].default_values",
                        "templates[].params[].overridden", "templates[].params[].help", "templates[].derived",
                        "templates[].derived[].name", "templates[].derived[].expression", "templates[].includes",
                        "templates[].constraints", "templates[].constraints[].check",
                        "templates[].constraints[].reason", "templates[].constraints[].file", "templates[].launch",
                        "templates[].launch.threads", "templates[].launch.tile_m", "templates[].launch.tile_n",
                        "templates[].launch.dynamic_smem", "templates[].launch.grid_z",
                        "templates[].launch.problems_per_block", "templates[].requires",
                        "templates[].requires.align_bytes", "templates[].requires.ld_multiple", "templates[].counts",
                        "templates[].counts.raw", "templates[].counts.valid", "templates[].counts.pruned_total",
                        "totals", "totals.templates", "totals.raw", "totals.valid", "totals.pruned", "not_in_preset"},
                       elements("templates[].counts.pruned", pruned), elements("totals.pruned_by_reason", pruned)}));

  const auto candidates =
      test::run_split(m_dir, "list --config quick --template fused_batch --arch sm_90 --candidates --json");
  ASSERT_EQ(candidates.exit_code, 0) << candidates.err;
  expect_paths("list --candidates", candidates.out,
               {"[].id", "[].template", "[].params", "[].name_expression", "[].launch", "[].launch.threads",
                "[].launch.tile_m", "[].launch.tile_n", "[].launch.dynamic_smem", "[].launch.grid_z",
                "[].launch.problems_per_block", "[].requires", "[].requires.align_bytes",
                "[].requires.ld_multiple"});

  const auto compile = test::run_split(m_dir, "--quiet --db c.db compile --config " + preset() +
                                                  " --arch sm_90 --json");
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  expect_paths("compile", compile.out,
               {"arch", "preset", "candidates", "finished", "stopped_by", "compiled", "cache_hits", "failed",
                "wall_seconds", "candidates_per_second", "failures"});
}

TEST(JsonFieldsWithoutAGpu, BenchPrintsItsFields) {
  cli::BenchReport report;
  report.device.name = "NVIDIA H100 80GB HBM3";
  report.rounds = 5;
  report.header = true;
  report.regret = true;
  report.kernel_label = [](int index) { return "k" + std::to_string(index); };
  cli::BenchRow row;
  row.problem = Problem::make(64, 64, 64, false, false, 8, DType::f32);
  row.winner = "k0";
  row.winner_tflops = row.header_tflops = row.cublas_tflops = row.seed_tflops = row.peak = 1;
  report.rows = {row};
  RegretRow regret;
  regret.problem = row.problem;
  regret.chosen = 0;
  regret.best = 1;
  regret.failed = {2};
  report.regret_rows = {regret};
  const Paths row_fields = {"problem", "dtype", "winner", "tuned", "dispatch", "splits", "winner_tflops", "winner_valid",
                            "cublas_tflops", "winner_ratio", "peak", "winner_peak_fraction", "seed_bmm_tflops",
                            "seed_bmm_variant", "winner_vs_seed_bmm", "f32_kernel", "f32_tflops", "winner_vs_f32",
                            "header_kernel", "header_tflops", "header_valid", "header_ratio", "header_vs_winner"};
  const Paths regret_fields = {"problem", "chosen", "splits", "chosen_us", "best", "best_us", "regret", "timed",
                               "failed_validation"};
  expect_paths("bench --regret", output::render_json(cli::bench_record(report)),
               joined({{"device", "driver", "runtime", "rounds", "header_form", "geomean_winner_ratio", "geomean_header_ratio", "regret",
                        "regret.count", "regret.median", "regret.p90", "regret.max"},
                       elements("rows", row_fields), elements("regret.rows", regret_fields)}));
  report.regret = false;
  expect_paths("bench", output::render_json(cli::bench_record(report)),
               joined({{"device", "driver", "runtime", "rounds", "header_form", "geomean_winner_ratio", "geomean_header_ratio", "regret"},
                       elements("rows", row_fields)}));
}

TEST(JsonFieldsWithoutAGpu, PrecisionPrintsItsFields) {
  cli::PrecisionReport report;
  report.device.name = "NVIDIA H100 80GB HBM3";
  report.rounds = 5;
  report.energy_seconds = 1;
  cli::PrecisionRow row;
  row.problem = Problem::make(64, 64, 64);
  row.implementation = "cuBLAS SGEMM";
  row.role = cli::PrecisionRole::sgemm;
  row.tflops = 1;
  row.error_units = {1, 2};
  row.passes = true;
  row.energy = cli::PrecisionEnergy{100, 0.5, 400, 1.2, 1};
  report.rows = {row};
  report.notes = {"a note"};
  expect_paths("precision", output::render_json(cli::precision_record(report)),
               joined({{"device", "uuid", "arch", "driver", "runtime", "data", "seed", "rounds", "energy_seconds",
                        "energy_unavailable", "power_limit_watts", "cases", "cases[].alpha", "cases[].beta", "notes"},
                       elements("rows", {"problem", "implementation", "role", "tflops", "ratio_to_sgemm", "error_units",
                                         "joules_per_gemm", "watts", "energy_ratio_to_sgemm", "median_ms",
                                         "error_units_by_case", "passes_fp32_check", "check", "failure", "energy_runs",
                                         "energy_seconds", "loop_tflops", "energy_note"})}));
}

TEST(JsonFieldsWithoutAGpu, DevicesPrintTheirFields) {
  DeviceInfo device;
  device.name = "NVIDIA H100 80GB HBM3";
  device.cc_major = 9;
  expect_paths("devices", output::render_json(output::Record{{"devices", output::table_records(cli::device_table({device}))}}),
               elements("devices", {"index", "name", "uuid", "compute_capability", "arch", "sm_count", "clock_mhz",
                                    "memory_bytes", "memory_clock_mhz", "memory_bus_bits", "memory_bandwidth_gbs",
                                    "l2_bytes", "smem_per_block_bytes", "smem_per_block_optin_bytes", "smem_per_sm_bytes",
                                    "registers_per_sm", "max_threads_per_block", "max_threads_per_sm", "warp_size",
                                    "fp32_lanes_per_sm", "fp32_peak_tflops", "fp64_lanes_per_sm", "fp64_peak_tflops",
                                    "fp64_tensor_fma_per_sm", "fp64_tensor_peak_tflops", "int32_mad_lanes_per_sm",
                                    "int32_peak_tops", "driver_version", "runtime_version"}));
}

}  // namespace
}  // namespace cmt
