#include "cli/data_export.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace cmt::cli {

// Named, not anonymous: a unity build compiles this file with the other commands' file-local helpers.
namespace data_export_rows {

/// The CUTLASS profiler's columns of a GEMM, in its order: which problem and kernel, then the
/// problem's arguments (m, n, k, the operands, the batch), then the amounts and the rates.
const std::vector<std::string> k_problem_head = {"Problem", "Provider", "OperationKind", "Operation"};
const std::vector<std::string> k_problem_args = {"m", "n", "k", "A", "B", "C", "batch_count"};
const std::vector<std::string> k_problem_rates = {"Bytes", "Flops", "Flops/Byte", "Runtime", "GB/s", "GFLOPs"};

std::vector<output::Column> columns_of(const std::vector<std::vector<std::string>>& groups) {
  std::vector<output::Column> out;
  for (const auto& group : groups)
    for (const std::string& name : group) out.emplace_back(name);
  return out;
}

std::string arch_of(const DeviceRecord& d) { return fmt::format("sm_{}{}", d.cc_major, d.cc_minor); }

/// The CUTLASS columns of one problem, its kernel's label and its time (null where there is none).
void set_problem(output::Table::Row& row, const Problem& p, std::string_view provider, const std::string& operation,
                 std::optional<double> runtime_ms) {
  const int64_t bytes = problem_bytes(p);
  const double flops = p.flops();
  row.set("Problem", p.to_string())
      .set("Provider", provider)
      .set("OperationKind", "gemm")
      .set("Operation", operation)
      .set("m", p.m)
      .set("n", p.n)
      .set("k", p.k)
      .set("A", cutlass_operand(p.dtype, p.trans_a))
      .set("B", cutlass_operand(p.dtype, p.trans_b))
      .set("C", cutlass_operand(p.dtype, false))
      .set("batch_count", p.batch)
      .set("Bytes", bytes)
      .set("Flops", static_cast<int64_t>(std::llround(flops)))
      .set("Flops/Byte", flops / static_cast<double>(bytes));
  const bool timed = runtime_ms && *runtime_ms > 0;
  row.set("Runtime", timed ? output::Value(*runtime_ms) : output::Value())
      // As the CUTLASS profiler computes them: GB/s in units of 2^30 bytes a second, GFLOPs 10^9.
      .set("GB/s", timed ? output::Value(static_cast<double>(bytes) / double(1 << 30) / *runtime_ms * 1000.0)
                         : output::Value())
      .set("GFLOPs", timed ? output::Value(flops / *runtime_ms / 1e6) : output::Value());
}

/// cm-tune's columns of the device and the problem beyond CUTLASS's.
const std::vector<std::string> k_device_problem = {"device",   "device_uuid", "arch",     "dtype",
                                                   "layout",   "stride_a",    "stride_b", "stride_c"};

void set_device_problem(output::Table::Row& row, const DeviceRecord& d, const Problem& p) {
  row.set("device", d.name)
      .set("device_uuid", d.uuid)
      .set("arch", arch_of(d))
      .set("dtype", dtype_name(p.dtype))
      .set("layout", p.layout())
      .set("stride_a", p.stride_a)
      .set("stride_b", p.stride_b)
      .set("stride_c", p.stride_c);
}

/// The database's devices by id.
std::map<int64_t, DeviceRecord> devices_by_id(Store& store) {
  std::map<int64_t, DeviceRecord> out;
  for (DeviceRecord& d : store.devices()) out.emplace(d.id, std::move(d));
  return out;
}

output::Table trial_table(Store& store) {
  output::Table table(columns_of(
      {k_problem_head,
       {"Disposition"},
       k_problem_args,
       {"cta_m", "cta_n"},
       k_problem_rates,
       {"trial_id", "run_id"},
       k_device_problem,
       {"lda", "ldb", "ldc", "template", "params", "outcome", "reason", "min_ms", "cv", "samples", "retime_ms",
        "ratio_to_cublas", "max_abs_error", "max_error_ratio", "simt_error_ratio", "registers", "smem_bytes",
        "threads", "grid_z", "problems_per_block", "tensor_maps", "align_bytes", "ld_multiple", "created_at"}}));
  for (const auto& [id, device] : devices_by_id(store))
    for (const TrialRecord& t : store.trials(id)) {
      auto row = table.add_row();
      set_problem(row, t.problem, "cm-tune", kernel_label(t.template_name, t.params), t.median_ms);
      set_device_problem(row, device, t.problem);
      row.set("Disposition", cutlass_disposition(t.outcome))
          .set("cta_m", t.shape.tile_m)
          .set("cta_n", t.shape.tile_n)
          .set("trial_id", t.id)
          .set("run_id", t.run_id)
          .set("lda", t.lda)
          .set("ldb", t.ldb)
          .set("ldc", t.ldc)
          .set("template", t.template_name)
          .set("params", t.params)
          .set("outcome", to_string(t.outcome))
          .set("reason", t.reason)
          .set("min_ms", t.min_ms)
          .set("cv", t.cv)
          .set("samples", t.samples)
          .set("retime_ms", t.retime_median_ms)
          .set("ratio_to_cublas", t.ratio_to_cublas)
          .set("max_abs_error", t.max_abs_error)
          .set("max_error_ratio", t.max_error_ratio)
          .set("simt_error_ratio", t.simt_error_ratio)
          .set("registers", t.registers >= 0 ? output::Value(t.registers) : output::Value())   // -1: unknown
          .set("smem_bytes", t.smem_bytes >= 0 ? output::Value(t.smem_bytes) : output::Value())
          .set("threads", t.shape.threads)
          .set("grid_z", t.shape.grid_z)
          .set("problems_per_block", t.shape.problems_per_block)
          .set("tensor_maps", t.shape.tensor_maps)
          .set("align_bytes", t.requirements.align_bytes)
          .set("ld_multiple", t.requirements.ld_multiple)
          .set("created_at", t.created_at);
    }
  return table;
}

output::Table winner_table(Store& store) {
  output::Table table(columns_of({k_problem_head,
                                  {"Disposition"},
                                  k_problem_args,
                                  {"cta_m", "cta_n"},
                                  k_problem_rates,
                                  {"trial_id"},
                                  k_device_problem,
                                  {"scope", "template", "params", "ratio_to_cublas", "threads", "grid_z",
                                   "problems_per_block", "tensor_maps", "align_bytes", "ld_multiple"}}));
  const auto devices = devices_by_id(store);
  for (const WinnerRecord& w : store.winners()) {
    auto row = table.add_row();
    set_problem(row, w.problem, "cm-tune", kernel_label(w.template_name, w.params), w.median_ms);
    set_device_problem(row, devices.at(w.device_id), w.problem);
    row.set("Disposition", cutlass_disposition(Outcome::ok))
        .set("cta_m", w.shape.tile_m)
        .set("cta_n", w.shape.tile_n)
        .set("trial_id", w.trial_id)
        .set("scope", w.scope)
        .set("template", w.template_name)
        .set("params", w.params)
        // null without a cuBLAS baseline (i32), where the stored 0 means "none", as --json has it
        .set("ratio_to_cublas",
             type_info(w.problem.dtype).cublas_baseline ? output::Value(w.ratio_to_cublas) : output::Value())
        .set("threads", w.shape.threads)
        .set("grid_z", w.shape.grid_z)
        .set("problems_per_block", w.shape.problems_per_block)
        .set("tensor_maps", w.shape.tensor_maps)
        .set("align_bytes", w.requirements.align_bytes)
        .set("ld_multiple", w.requirements.ld_multiple);
  }
  return table;
}

/// cuBLAS's routine for a problem: "cublasSgemm", "cublasDgemmStridedBatched".
std::string cublas_routine(const Problem& p) {
  const char routine = type_info(p.dtype).routine;
  return fmt::format("cublas{}gemm{}", static_cast<char>(routine - 'a' + 'A'), p.batch > 1 ? "StridedBatched" : "");
}

output::Table baseline_table(Store& store) {
  output::Table table(columns_of({k_problem_head, k_problem_args, k_problem_rates, {"run_id"}, k_device_problem,
                                  {"lda", "ldb", "ldc", "min_ms", "cv", "samples", "created_at"}}));
  const auto devices = devices_by_id(store);
  for (const BaselineRecord& b : store.baselines()) {
    auto row = table.add_row();
    set_problem(row, b.problem, "cuBLAS", cublas_routine(b.problem), b.median_ms);
    set_device_problem(row, devices.at(b.device_id), b.problem);
    row.set("run_id", b.run_id)
        .set("lda", b.lda)
        .set("ldb", b.ldb)
        .set("ldc", b.ldc)
        .set("min_ms", b.min_ms)
        .set("cv", b.cv)
        .set("samples", b.samples)
        .set("created_at", b.created_at);
  }
  return table;
}

output::Table device_table(Store& store) {
  output::Table table(columns_of({{"device", "device_uuid", "arch", "cc_major", "cc_minor", "sm_count", "clock_khz",
                                   "memory_clock_khz", "memory_bus_bits", "memory_bytes", "l2_bytes",
                                   "driver_version", "runtime_version", "nvrtc_version", "first_seen", "last_seen"}}));
  for (const DeviceRecord& d : store.devices())
    table.add_row()
        .set("device", d.name)
        .set("device_uuid", d.uuid)
        .set("arch", arch_of(d))
        .set("cc_major", d.cc_major)
        .set("cc_minor", d.cc_minor)
        .set("sm_count", d.sm_count)
        .set("clock_khz", d.clock_khz)
        .set("memory_clock_khz", d.memory_clock_khz)
        .set("memory_bus_bits", d.memory_bus_bits)
        .set("memory_bytes", d.memory_bytes)
        .set("l2_bytes", d.l2_bytes)
        .set("driver_version", d.driver_version)
        .set("runtime_version", d.runtime_version)
        .set("nvrtc_version", d.nvrtc_version)
        .set("first_seen", d.first_seen)
        .set("last_seen", d.last_seen);
  return table;
}

}  // namespace data_export_rows

std::optional<ExportWhat> parse_export_what(std::string_view name) {
  for (const ExportWhat what : {ExportWhat::trials, ExportWhat::winners, ExportWhat::baselines, ExportWhat::devices})
    if (name == export_what_name(what)) return what;
  return std::nullopt;
}

std::string_view export_what_name(ExportWhat what) {
  switch (what) {
    case ExportWhat::trials: return "trials";
    case ExportWhat::winners: return "winners";
    case ExportWhat::baselines: return "baselines";
    case ExportWhat::devices: return "devices";
  }
  return "?";
}

std::string_view cutlass_disposition(Outcome outcome) {
  switch (outcome) {
    case Outcome::ok:
    case Outcome::abandoned: return "passed";
    case Outcome::wrong: return "incorrect";
    case Outcome::skipped: return "not_supported";
    case Outcome::compile_error:
    case Outcome::launch_error:
    case Outcome::crashed:
    case Outcome::timeout: return "failed";
  }
  return "failed";
}

std::string cutlass_operand(DType dtype, bool transposed) {
  const DType stored = storage_of(dtype);
  const std::string_view type = stored == DType::i32 ? "s32" : dtype_name(stored);   // CUTLASS's NumericTypeID names
  return fmt::format("{}:{}", type, transposed ? "column" : "row");
}

output::Table export_table(Store& store, ExportWhat what) {
  switch (what) {
    case ExportWhat::trials: return data_export_rows::trial_table(store);
    case ExportWhat::winners: return data_export_rows::winner_table(store);
    case ExportWhat::baselines: return data_export_rows::baseline_table(store);
    case ExportWhat::devices: return data_export_rows::device_table(store);
  }
  return data_export_rows::device_table(store);
}

}  // namespace cmt::cli
