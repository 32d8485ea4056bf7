// cm-tune bench: the database winner, the exported header's dispatch and cuBLAS, interleaved.
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/bench_report.hpp"
#include "cli/sizes.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/device.hpp"
#include "export/dispatch.hpp"
#include "export/gpu/header_library.hpp"
#include "export/gpu/kernel_cache.hpp"
#include "export/regret.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "measure/gpu/seed_bmm.hpp"

namespace cmt::cli {

namespace {

struct BenchOptions {
  std::string device = "0";
  std::string sizes;
  OperandOptions operands;
  std::string header;
  std::string name_space = "cmtune";
  int rounds = 100;
  bool regret = false;
  bool json = false;
};

/// The kernel the dispatch picks for a call, as a launcher (KernelCache).
struct DispatchedKernel {
  std::string label;    // template[params]
  std::string why;      // the dispatch's reason
  bool exact = false;   // a tuned problem
  int splits = 1;       // the header splits K into this many slices (the kernel column runs it unsplit)
  GemmLauncher launch;
};

DispatchedKernel load_dispatched(const ExportModel& model, const CallShape& call, KernelCache& kernels) {
  const Problem& p = call.problem;
  const DispatchChoice choice = choose_kernel(model, 0, call);
  if (choice.kernel < 0) throw UsageError(fmt::format("{}: {}", p.to_string(), choice.why));
  DispatchedKernel out;
  out.label = kernels.label(choice.kernel);
  out.why = choice.why;
  out.exact = choice.exact;
  out.splits = choice.splits;
  try {
    out.launch = kernels.launcher(choice.kernel);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", p.to_string(), e.what()));
  }
  return out;
}

/// Times every exported kernel the call can run with the one the dispatch chose, interleaved, and
/// gives the regret (export/regret.hpp). When the dispatch splits K and the header is benched, the
/// chosen time is the header's split run, timed in the same rounds. A kernel that cannot run here is
/// warned about once and left out of every call.
RegretRow measure_regret(const ExportModel& model, const CallShape& call, const GemmLauncher* header_launch,
                         KernelCache& kernels, GpuMeasurer& measurer, int rounds) {
  const Problem& p = call.problem;
  const DispatchChoice choice = choose_kernel(model, 0, call);
  std::vector<int> timed;
  std::vector<GemmLauncher> launches;
  std::vector<int> failed;
  for (const int index : regret_candidates(choice)) {
    if (index != choice.kernel && kernels.unusable(index)) continue;
    const GemmLauncher* launch = nullptr;
    try {
      launch = &kernels.launcher(index);
    } catch (const UsageError& e) {
      if (index == choice.kernel) throw;
      spdlog::warn("regret: {}; it is left out of every call", e.what());
      continue;
    }
    if (!measurer.validate(*launch, p).passed) failed.push_back(index);
    timed.push_back(index);
    launches.push_back(*launch);
  }
  const bool split_run = header_launch != nullptr && choice.splits > 1;
  if (split_run) launches.push_back(*header_launch);
  const auto results = measurer.time_interleaved(launches, p, rounds);
  std::map<int, double> times;
  for (size_t i = 0; i < timed.size(); ++i) {
    if (results[i].status != cudaSuccess)
      throw InfraError("CUDA", "bench --regret launch", cudaGetErrorString(results[i].status), __FILE__, __LINE__);
    times[timed[i]] = results[i].stats.median * 1e3;
  }
  if (split_run && results.back().status != cudaSuccess)
    throw InfraError("CUDA", "bench --regret header launch", cudaGetErrorString(results.back().status), __FILE__, __LINE__);
  const double chosen_us = split_run ? results.back().stats.median * 1e3 : times.at(choice.kernel);
  return regret_row(p, choice.kernel, choice.splits, chosen_us, times, failed);
}

double tflops_of(const Problem& p, const TimingResult& r) {
  if (r.status != cudaSuccess) throw InfraError("CUDA", "bench launch", cudaGetErrorString(r.status), __FILE__, __LINE__);
  return gflops(p.flops(), r.stats.median) / 1e3;
}

int run_bench(const GlobalOptions& global, const BenchOptions& o) {
  const auto problems = apply_operand_options(parse_sizes(o.sizes), o.operands);
  for (const Problem& p : problems)
    if (!header_computes(p.dtype))
      throw UsageError(fmt::format("{}: bench times the exported header, which has no {} routine yet",
                                   p.to_string(), dtype_name(p.dtype)));
  // The GPU first: without one, nothing is opened or created.
  const DeviceInfo device = select_device(resolve_live_device(o.device).index);
  Store store(database_path(global), OpenMode::read);   // only reads: works on a database this user cannot write
  const DeviceRecord db_device = resolve_db_device(store, std::to_string(device.index));
  if (store.winners(db_device.id).empty())
    throw UsageError(fmt::format("no winners stored for {}; run cm-tune tune first", device.name));
  const TemplateDesc default_tmpl = generic_default_template(global);
  const ExportModel model = device_export_model(store, db_device.id, global);
  std::set<DType> dtypes;
  for (const Problem& p : problems) dtypes.insert(p.dtype);
  std::unique_ptr<HeaderLibrary> header;
  // Built as a program would be for this GPU, its arch-specific features included (sm_90a on compute
  // capability 9.0), so that the header's TMA kernels run as tuned.
  if (!o.header.empty())
    header = std::make_unique<HeaderLibrary>(o.header, o.name_space, header_build_arch(device), dtypes);

  // The tuner's own measuring code: the same workspaces, validation and interleaved timing.
  TuneSettings settings;
  settings.allow_spills = true;  // time whatever the database holds
  GpuMeasurer measurer(device, settings, std::random_device{}());
  const GemmLauncher cublas = measurer.cublas_launcher();
  const std::vector<SeedBmmVariant> seed = seed_bmm_variants(measurer.stream());
  std::vector<BenchRow> rows;
  KernelCache kernels(model, store, measurer, default_tmpl, device.arch());  // declared after the measurer: dies first
  std::vector<RegretRow> regret_rows;
  for (const Problem& p : problems) {
    BenchRow row;
    row.problem = p;
    row.peak = type_peak(device, p.dtype);
    const CallShape call = tight_call(p);
    const DispatchedKernel winner = load_dispatched(model, call, kernels);
    spdlog::debug("{}: timing {} (dispatch: {}), {}cuBLAS", p.to_string(), winner.label, winner.why,
                  header ? "the header, " : "");
    row.winner = winner.label;
    row.dispatch_note = winner.why;
    row.splits = winner.splits;
    row.tuned = winner.exact;
    GemmLauncher header_launch;
    if (header) {
      header_launch = header->launcher(p.dtype, measurer.stream());
      const std::string ran = header->kernel_name(call);
      row.header_kernel = ran;
      for (const auto& mk : model.kernels)
        if (mk.name_expression == ran) row.header_kernel = kernel_label(mk.template_name, mk.params);
    }
    row.winner_valid = measurer.validate(winner.launch, p).passed;
    if (header) row.header_valid = measurer.validate(header_launch, p).passed;

    // One interleaved run: the winner, cuBLAS (when it has the type), the header, and for a batch
    // the seed's bmm variants.
    std::vector<GemmLauncher> launches{winner.launch};
    const bool has_cublas = type_info(p.dtype).cublas_baseline;
    if (has_cublas) launches.push_back(cublas);
    if (header) launches.push_back(header_launch);
    const size_t first_seed = launches.size();
    if (p.batched())
      for (const auto& v : seed) launches.push_back(v.launch);
    const auto results = measurer.time_interleaved(launches, p, o.rounds);
    size_t at = 0;
    row.winner_tflops = tflops_of(p, results[at++]);
    if (has_cublas) row.cublas_tflops = tflops_of(p, results[at++]);
    if (header) row.header_tflops = tflops_of(p, results[at++]);
    for (size_t i = first_seed; i < results.size(); ++i) {
      const double t = tflops_of(p, results[i]);
      if (t > row.seed_tflops) {
        row.seed_tflops = t;
        row.seed_variant = seed[i - first_seed].name;
      }
    }
    // INT32 has no cuBLAS baseline: hold it against the FP32 kernel the dispatch runs at the shape.
    if (!type_info(p.dtype).cublas_baseline) {
      Problem p32 = p;
      p32.dtype = DType::f32;
      try {
        const DispatchedKernel f32 = load_dispatched(model, tight_call(p32), kernels);
        row.f32_kernel = f32.label;
        row.f32_tflops = tflops_of(p32, measurer.time_interleaved({f32.launch}, p32, o.rounds).at(0));
      } catch (const UsageError& e) {
        spdlog::warn("{}: no FP32 kernel to compare with: {}", p.to_string(), e.what());
      }
    }
    if (o.regret) {
      regret_rows.push_back(
          measure_regret(model, call, header ? &header_launch : nullptr, kernels, measurer, o.rounds));
      const RegretRow& r = regret_rows.back();
      spdlog::info("{}: regret {:.3f} over {} kernels", p.to_string(), r.regret, r.timed);
    }
    rows.push_back(row);
    spdlog::info("{}: winner {:.2f} T/s{}{}{}", p.to_string(), row.winner_tflops,
                 has_cublas ? fmt::format(", cuBLAS {:.2f}", row.cublas_tflops) : "",
                 header ? fmt::format(", header {:.2f}", row.header_tflops) : "",
                 row.seed_tflops > 0 ? fmt::format(", seed bmm {:.2f}", row.seed_tflops) : "");
  }

  // A header of machine code launches the very cubin that was timed: a gap is noise, or its dispatch
  // chose another kernel. In a header of sources nvcc built the kernels, and the tuned ones NVRTC: the
  // two can schedule one source differently. Either way, say where the header strays. A call whose K
  // the header splits runs another launch than the winner's unsplit one, so it is not compared.
  constexpr double k_header_tolerance = 0.03;
  if (header)
    for (const auto& r : rows) {
      const double gap = r.header_tflops / r.winner_tflops - 1.0;
      if (r.splits > 1 || std::abs(gap) <= k_header_tolerance) continue;
      const std::string runs = fmt::format("{}: the header runs {:.1f}% {} than the database winner (dispatch: {})",
                                           r.problem.to_string(), 100.0 * std::abs(gap),
                                           gap > 0 ? "faster" : "slower", r.dispatch_note);
      if (header->machine_code())
        spdlog::warn("{}; it launches the cubin that was timed, so the gap is noise or another kernel's dispatch", runs);
      else
        spdlog::warn("{}; its nvcc build of the kernel differs from the NVRTC build that was tuned, or it dispatched "
                     "another kernel",
                     runs);
    }

  BenchReport report;
  report.device = device;
  report.rounds = o.rounds;
  report.header = header != nullptr;
  if (header) report.header_form = header->machine_code() ? "machine code" : "sources";
  report.rows = rows;
  report.regret = o.regret;
  report.regret_rows = regret_rows;
  report.kernel_label = [&kernels](int index) { return kernels.label(index); };
  if (o.json)
    print_json(bench_record(report));
  else
    fmt::print("{}", bench_text(report));
  for (const auto& r : rows)
    if (!r.winner_valid || (header && !r.header_valid)) return 1;
  for (const auto& r : regret_rows)
    if (!r.failed.empty()) return 1;
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("bench", "Time the database winner, the exported header and cuBLAS, interleaved");
  auto o = std::make_shared<BenchOptions>();
  sub->add_option("--device,-d", o->device, "GPU to time on: CUDA index, UUID or unique part of its name")
      ->capture_default_str();
  sub->add_option("--sizes,-s", o->sizes,
                  "Sizes, as for tune (@FILE: one MxNxK per line, # comments); untuned shapes run what the dispatch "
                  "predicts fastest")
      ->required();
  add_operand_options(*sub, o->operands);
  sub->add_option("--header", o->header, "Exported header to build (the C++ compiler; nvcc for a header of sources) and time through its dispatch")
      ->check(non_empty_path());
  sub->add_option("--namespace", o->name_space, "Namespace of the header's sgemm, dgemm and igemm")->capture_default_str();
  sub->add_option("--rounds", o->rounds, "Interleaved rounds (samples per implementation), at least 5")
      ->capture_default_str()
      ->check(whole_number(5, std::numeric_limits<int>::max()));
  sub->add_flag("--regret", o->regret,
                "Also time every exported kernel each call can run, with the dispatched one, and report the regret "
                "(the dispatched kernel's time over the fastest's)");
  sub->add_flag("--json", o->json, "Machine-readable output");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_bench(global, *o); }; });
}

}  // namespace cmt::cli
