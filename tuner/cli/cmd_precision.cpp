// cm-tune precision: FP32 GEMMs of each precision class side by side on one GPU: cuBLAS SGEMM (TF32
// off), cuBLAS with TF32 tensor ops (one pass) and, with --winners, the database's f32 and tf32x3
// winners; for each, its rate, its largest error against an FP64 reference and its energy per GEMM
// (NVML's counter, loaded at run time).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/precision_measure.hpp"
#include "cli/precision_report.hpp"
#include "cli/sizes.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/gemm_runner.hpp"
#include "cuda/nvml_energy.hpp"
#include "measure/protocol.hpp"

namespace cmt::cli {

namespace {

struct PrecisionOptions {
  std::string device = "0";
  std::string sizes;
  std::string layout;
  std::string data = "uniform";
  uint64_t seed = 1;
  int rounds = 50;
  double energy_seconds = 2.0;
  bool winners = false;
  bool json = false;
};

/// NVML's counter steps a few times a second at most: a shorter loop would measure the steps.
constexpr double k_min_energy_seconds = 1.0;
constexpr double k_max_energy_seconds = 600.0;   // a longer loop is a typo (1e308), not a measurement

CLI::Validator distribution_name_check() {
  return CLI::Validator(
      [](std::string& text) {
        return text == "uniform" || text == "normal" ? std::string()
                                                     : fmt::format("'{}' is not a distribution: uniform or normal", text);
      },
      "");
}

CLI::Validator energy_seconds_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || errno == ERANGE)
          return fmt::format("'{}' is not a finite number of seconds", text);
        if (value < k_min_energy_seconds)
          return fmt::format("'{}' is under {:g} second: NVML's energy counter needs a loop of at least that", text,
                             k_min_energy_seconds);
        if (value > k_max_energy_seconds)
          return fmt::format("'{}' is over {:g} seconds, the longest energy loop (one per implementation and size)",
                             text, k_max_energy_seconds);
        return "";
      },
      "");
}

/// The sizes as FP32 problems: f32, or tf32x3 (the same storage), each once in the order given.
std::vector<Problem> fp32_problems(const PrecisionOptions& o) {
  std::vector<Problem> out;
  for (Problem p : expand_problems(parse_sizes(o.sizes), o.layout, "")) {
    if (storage_of(p.dtype) != DType::f32)
      throw UsageError(fmt::format("{}: precision measures FP32 GEMMs (f32, or the tf32x3 class), not {}",
                                   p.to_string(), dtype_name(p.dtype)));
    p.dtype = DType::f32;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

/// The database's overall winners of a problem in f32 and in tf32x3 on the device, loaded as runners
/// (each binary once, in `loaded`); a note for each class without one, or one whose requirements
/// the problem's layouts miss.
std::vector<GemmRunner*> winner_runners(Store& store, const DeviceRecord& db_device, const Problem& problem,
                                        std::map<std::string, std::unique_ptr<KernelRunner>>& loaded,
                                        std::vector<std::string>& notes) {
  std::vector<GemmRunner*> out;
  for (const DType dtype : {DType::f32, DType::tf32x3}) {
    Problem p = problem;
    p.dtype = dtype;
    const auto winners = store.winners(db_device.id, p);
    const auto overall = std::find_if(winners.begin(), winners.end(), [](const WinnerRecord& w) { return w.scope == "overall"; });
    if (overall == winners.end()) {
      notes.push_back(fmt::format("{}: no {} winner stored for {} in {}", problem.to_string(), dtype_name(dtype),
                                  db_device.name, store.file().string()));
      continue;
    }
    const WinnerRecord& w = *overall;
    std::optional<std::string> unmet;
    for (const Layout& layout : {timing_layout(p), validation_layout(p)})
      if (!unmet) unmet = unmet_requirements(w.requirements, layout, DType::f32);
    const std::string label = kernel_label(w.template_name, w.params);
    if (unmet) {
      notes.push_back(fmt::format("{}: the {} winner {} is left out: {}", problem.to_string(), dtype_name(dtype), label, *unmet));
      continue;
    }
    auto it = loaded.find(w.binary_key);
    if (it == loaded.end()) {
      const auto binary = store.find_binary(w.binary_key);
      if (!binary || !binary->ok || binary->cubin.empty()) {
        notes.push_back(fmt::format("{}: the {} winner {} has no cubin in the database (db vacuum drops unused ones; "
                                    "a tune compiles it again)",
                                    problem.to_string(), dtype_name(dtype), label));
        continue;
      }
      it = loaded.emplace(w.binary_key, std::make_unique<KernelRunner>(label, binary->cubin, binary->lowered_name, w.shape))
               .first;
    }
    out.push_back(it->second.get());
  }
  return out;
}

std::string pci_bus_id(int device) {
  char id[64] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

int run_precision(const GlobalOptions& global, const PrecisionOptions& o) {
  const std::vector<Problem> problems = fp32_problems(o);
  // The GPU first: without one, nothing is opened.
  const DeviceInfo device = select_device(resolve_live_device(o.device).index);
  std::unique_ptr<Store> store;
  DeviceRecord db_device;
  if (o.winners) {
    store = std::make_unique<Store>(database_path(global), OpenMode::read);  // only reads
    db_device = resolve_db_device(*store, std::to_string(device.index));
  }

  PrecisionReport report;
  report.device = device;
  report.data = o.data == "normal" ? InputDistribution::normal : InputDistribution::uniform;
  report.seed = o.seed;
  report.rounds = o.rounds;
  report.energy_seconds = o.energy_seconds;
  const NvmlEnergy energy(device.uuid, pci_bus_id(device.index));
  // Without NVML's counter the report says why, in one line, and no energy loop runs.
  report.energy_unavailable = energy.why_unavailable();
  report.power_limit_watts = energy.power_limit_watts();

  PrecisionSettings settings;
  settings.data = report.data;
  settings.seed = o.seed;
  settings.rounds = o.rounds;
  settings.energy_seconds = o.energy_seconds;
  PrecisionMeasurer measurer(device, settings, energy);
  CublasRunner sgemm("cuBLAS SGEMM", CublasMath::fp32, measurer.stream());
  CublasRunner tf32("cuBLAS TF32", CublasMath::tf32, measurer.stream());
  const bool has_tf32 = device.tf32_tensor_fma_per_sm() > 0;
  if (!has_tf32)
    report.notes.push_back(fmt::format("{} ({}) has no TF32 tensor cores: no cuBLAS TF32 row", device.name, device.arch()));
  std::map<std::string, std::unique_ptr<KernelRunner>> loaded;  // database winners, by binary

  for (const Problem& p : problems) {
    size_t free_bytes = 0, total_bytes = 0;
    CMT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (const size_t need = PrecisionMeasurer::bytes_needed(p); need > free_bytes)
      throw UsageError(fmt::format("{}: measuring it needs {:.1f} GiB of GPU memory (its FP64 reference included); "
                                   "{:.1f} GiB are free",
                                   p.to_string(), need / 1073741824.0, free_bytes / 1073741824.0));
    std::vector<RunnerEntry> runners{{&sgemm, PrecisionRole::sgemm}};
    if (has_tf32) runners.push_back({&tf32, PrecisionRole::tf32});
    if (store)
      for (GemmRunner* r : winner_runners(*store, db_device, p, loaded, report.notes)) runners.push_back({r, PrecisionRole::kernel});
    // Other implementations (the exported header's tf32x3 routine, ...) join here as GemmRunners.
    for (PrecisionRow& row : measurer.measure(p, runners)) {
      if (row.failure.empty())
        spdlog::info("{}: {}: {:.2f} TF/s, error {:.3g} units of 2^-24{}", p.to_string(), row.implementation, row.tflops,
                     row.max_error_units(),
                     row.energy ? fmt::format(", {:.4g} J per GEMM at {:.0f} W", row.energy->joules_per_gemm, row.energy->watts)
                                : std::string());
      else
        spdlog::warn("{}: {}: did not run: {}", p.to_string(), row.implementation, row.failure);
      report.rows.push_back(std::move(row));
    }
  }

  if (o.json)
    print_json(precision_record(report));
  else
    fmt::print("{}", precision_text(report));
  return std::any_of(report.rows.begin(), report.rows.end(), precision_row_failed) ? k_exit_failure : k_exit_success;
}

}  // namespace

void add_precision_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand(
      "precision", "Compare FP32 GEMMs of each precision class (cuBLAS SGEMM, cuBLAS TF32, tuned kernels): rate, "
                   "error against FP64, energy per GEMM");
  auto o = std::make_shared<PrecisionOptions>();
  sub->add_option("--device,-d", o->device, "GPU to measure on: CUDA index, UUID or unique part of its name")
      ->capture_default_str();
  sub->add_option("--sizes,-s", o->sizes, "Sizes, as for tune (FP32: f32 or tf32x3; @FILE: one per line)")->required();
  sub->add_option("--layout", o->layout,
                  "Layouts, op(A) op(B) over row-major storage: nn, nt, tn, tt, a comma list, or all (default: as the "
                  "sizes say, nn)");
  sub->add_option("--data", o->data, "Inputs: uniform in [-1, 1) or normal (mean 0, variance 1)")
      ->capture_default_str()
      ->check(distribution_name_check());
  sub->add_option("--seed", o->seed, "Seed of the inputs (with each size)")->capture_default_str()->check(unsigned_number(0));
  sub->add_option("--rounds", o->rounds, "Interleaved timing rounds (samples per implementation), at least 5")
      ->capture_default_str()
      ->check(whole_number(5, std::numeric_limits<int>::max()));
  sub->add_option("--energy-seconds", o->energy_seconds,
                  "Least length of each implementation's energy loop, from 1 to 600 seconds")
      ->capture_default_str()
      ->check(energy_seconds_check());
  sub->add_flag("--winners", o->winners, "Also measure the database's f32 and tf32x3 winners of each size on this GPU");
  sub->add_flag("--json", o->json, "Machine-readable output");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_precision(global, *o); }; });
}

}  // namespace cmt::cli
