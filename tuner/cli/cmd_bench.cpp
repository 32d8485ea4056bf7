// cm-tune bench: the database winner, the exported header's dispatch and cuBLAS, interleaved.
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <random>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/bench_report.hpp"
#include "cli/sizes.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/device.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "export/dispatch.hpp"
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

/// The harness's entries, one per element type T: {s,d,i}gemm_strided_batched with op flags as ints
/// (1: transposed).
template <class T>
using HeaderGemm = cudaError_t (*)(int, int, int, int, int, T, const T*, int, long long, const T*, int, long long, T, T*,
                                   int, long long, int, cudaStream_t);
using HeaderKernelName = const char* (*)(int, int, int, int, int, int, long long, int, long long, int, long long, int);


/// Builds the exported header into a shared library with nvcc and loads its entry points for the
/// element types benched (a header of an older cm-tune has sgemm only: asking for f32 alone works
/// with it).
class HeaderLibrary {
 public:
  HeaderLibrary(const std::string& header, const std::string& name_space, const std::string& arch,
                const std::set<DType>& dtypes) {
    const auto header_path = std::filesystem::absolute(header);
    if (!std::filesystem::exists(header_path)) throw UsageError(fmt::format("--header {} does not exist", header));
    if (std::filesystem::is_directory(header_path))
      throw UsageError(fmt::format("--header {} is a folder, not an exported header", header));
    m_dir = std::filesystem::temp_directory_path() / fmt::format("cm-tune-bench-{}", std::random_device{}());
    std::filesystem::create_directories(m_dir);
    {
      std::ofstream src(m_dir / "harness.cu");
      src << fmt::format("#include \"{}\"\n", header_path.string())
          << fmt::format("namespace ns = {};\n", name_space)
          << "static ns::Op op(int t) { return t ? ns::Op::T : ns::Op::N; }\n";
      for (const DType d : dtypes) {
        const std::string t(type_info(d).c_type);
        const char x = type_info(d).routine;
        src << fmt::format(
            "extern \"C\" cudaError_t cmt_bench_{x}gemm(int ta, int tb, int m, int n, int k, {t} alpha, const {t}* a,\n"
            "    int lda, long long sa, const {t}* b, int ldb, long long sb, {t} beta, {t}* c, int ldc, long long sc,\n"
            "    int batch, cudaStream_t s) {{\n"
            "  return ns::{x}gemm_strided_batched(op(ta), op(tb), m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,\n"
            "                                   batch, s);\n}}\n"
            "extern \"C\" const char* cmt_bench_{x}kernel_name(int ta, int tb, int m, int n, int k, int lda, long long sa,\n"
            "    int ldb, long long sb, int ldc, long long sc, int batch) {{\n"
            "  const {t}* p = reinterpret_cast<const {t}*>(256);  // aligned as cudaMalloc's buffers\n"
            "  const char* name = nullptr;\n"
            "  return ns::kernel_name(op(ta), op(tb), m, n, k, p, lda, sa, p, ldb, sb, p, ldc, sc, batch, &name) == "
            "cudaSuccess\n"
            "      ? name : nullptr;\n}}\n",
            fmt::arg("x", x), fmt::arg("t", t));
      }
    }
    const char* cuda_home = std::getenv("CUDA_HOME");
    const std::string nvcc = fmt::format("{}/bin/nvcc", cuda_home ? cuda_home : "/usr/local/cuda");
    const std::string cmd = fmt::format("{} -std=c++17 -O3 -arch={} -Xcompiler -fPIC -shared -o {} {} > {} 2>&1", nvcc, arch,
                                        (m_dir / "harness.so").string(), (m_dir / "harness.cu").string(),
                                        (m_dir / "nvcc.log").string());
    spdlog::info("building the header with nvcc for {}", arch);
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream log(m_dir / "nvcc.log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      throw UsageError(fmt::format("the header {} does not compile with nvcc: {}", header, text.substr(0, 2000)));
    }
    m_handle = dlopen((m_dir / "harness.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m_handle) throw UsageError(fmt::format("cannot load the compiled header: {}", dlerror()));
    for (const DType d : dtypes) {
      const std::string gemm = fmt::format("cmt_bench_{}gemm", type_info(d).routine);
      const std::string name = fmt::format("cmt_bench_{}kernel_name", type_info(d).routine);
      void* g = dlsym(m_handle, gemm.c_str());
      void* n = dlsym(m_handle, name.c_str());
      if (!g || !n) throw UsageError(fmt::format("the compiled header has no {}", gemm));
      m_gemm[d] = g;
      m_kernel_name[d] = reinterpret_cast<HeaderKernelName>(n);
    }
  }
  ~HeaderLibrary() {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);  // the library stays mapped until exit
  }
  /// The header's {s,d,i}gemm_strided_batched for the arguments' type, as a launcher on `stream`.
  GemmLauncher launcher(DType dtype, cudaStream_t stream) const {
    void* fn = m_gemm.at(dtype);
    return [fn, stream](const GemmArgs& a) {
      switch (a.dtype) {
        case DType::f32:
          return reinterpret_cast<HeaderGemm<float>>(fn)(a.trans_a, a.trans_b, a.m, a.n, a.k, a.alpha.f32(),
                                                         a.a_as<float>(), a.lda, a.stride_a, a.b_as<float>(), a.ldb,
                                                         a.stride_b, a.beta.f32(), a.c_as<float>(), a.ldc, a.stride_c,
                                                         a.batch, stream);
        case DType::f64:
          return reinterpret_cast<HeaderGemm<double>>(fn)(a.trans_a, a.trans_b, a.m, a.n, a.k, a.alpha.f64(),
                                                          a.a_as<double>(), a.lda, a.stride_a, a.b_as<double>(), a.ldb,
                                                          a.stride_b, a.beta.f64(), a.c_as<double>(), a.ldc, a.stride_c,
                                                          a.batch, stream);
        case DType::i32:
          return reinterpret_cast<HeaderGemm<int>>(fn)(a.trans_a, a.trans_b, a.m, a.n, a.k, a.alpha.i32(),
                                                       a.a_as<int>(), a.lda, a.stride_a, a.b_as<int>(), a.ldb,
                                                       a.stride_b, a.beta.i32(), a.c_as<int>(), a.ldc, a.stride_c,
                                                       a.batch, stream);
      }
      return cudaErrorInvalidValue;
    };
  }
  /// The instantiation the header's dispatch runs for a call on aligned buffers.
  std::string kernel_name(const CallShape& c) const {
    const Problem& p = c.problem;
    const char* name = m_kernel_name.at(p.dtype)(p.trans_a, p.trans_b, static_cast<int>(p.m), static_cast<int>(p.n),
                                                 static_cast<int>(p.k), static_cast<int>(c.lda), p.stride_a,
                                                 static_cast<int>(c.ldb), p.stride_b, static_cast<int>(c.ldc),
                                                 p.stride_c, static_cast<int>(p.batch));
    return name ? name : "?";
  }

 private:
  std::filesystem::path m_dir;
  void* m_handle = nullptr;
  std::map<DType, void*> m_gemm;
  std::map<DType, HeaderKernelName> m_kernel_name;
};

/// The kernel the dispatch picks for a call, as a launcher (KernelCache).
struct DispatchedKernel {
  std::string label;    // template[params]
  std::string why;      // the dispatch's reason
  bool exact = false;   // a tuned problem
  int splits = 1;       // the header splits K into this many slices (the kernel column runs it unsplit)
  GemmLauncher launch;
};

/// The generic default kernel `k` built with NVRTC for the device, as the header would run it: a
/// database that never measured it (tune measures the tuned families) has no build of it.
BinaryRecord build_generic(const ExportKernel& k, const TemplateDesc& blocktile2d, const std::string& arch) {
  const SourceBundle bundle = blocktile2d.load_source();
  const NvrtcCompiler compiler;
  const CompileRequest request{k.name_expression, &bundle, arch, compiler.options(arch)};
  CompileOutput out = compiler.compile(request);
  if (!out.ok)
    throw InfraError("NVRTC", "build the generic default " + k.name_expression, out.log, __FILE__, __LINE__);
  BinaryRecord b;
  b.template_name = k.template_name;
  b.params = k.params;
  b.arch = arch;
  b.ok = true;
  b.cubin = std::move(out.cubin);
  b.lowered_name = std::move(out.lowered_name);
  b.registers = out.registers;
  b.batched = k.batched;
  b.takes_batch_count = k.takes_batch_count;
  return b;
}

/// The exported kernels bench runs, each loaded once for every call that runs it: its binary from the
/// database, or, for a generic default the database never measured, built with NVRTC. It keeps the
/// binaries alive, so it must not outlive the measurer.
class KernelCache {
 public:
  KernelCache(const ExportModel& model, Store& store, GpuMeasurer& measurer, const TemplateDesc& blocktile2d,
              std::string arch)
      : m_model(model), m_store(store), m_measurer(measurer), m_blocktile2d(blocktile2d), m_arch(std::move(arch)) {}

  /// Kernel `index`'s launcher; throws UsageError saying why when it cannot run here (loaded once:
  /// a kernel that failed fails again with the same reason).
  const GemmLauncher& launcher(int index) {
    if (const auto it = m_launchers.find(index); it != m_launchers.end()) return it->second;
    if (const auto it = m_unusable.find(index); it != m_unusable.end()) throw UsageError(it->second);
    try {
      return m_launchers.emplace(index, load(index)).first->second;
    } catch (const UsageError& e) {
      m_unusable.emplace(index, e.what());
      throw;
    }
  }
  /// Whether kernel `index` was tried and cannot run here.
  bool unusable(int index) const { return m_unusable.count(index) != 0; }
  /// template[params] of kernel `index`.
  std::string label(int index) const {
    const ExportKernel& k = m_model.kernels.at(static_cast<size_t>(index));
    return kernel_label(k.template_name, k.params);
  }

 private:
  GemmLauncher load(int index) {
    const ExportKernel& k = m_model.kernels.at(static_cast<size_t>(index));
    if (k.binary_key.empty()) {  // a generic default this database never measured
      m_binaries.push_back(std::make_unique<BinaryRecord>(build_generic(k, m_blocktile2d, m_arch)));
    } else {
      auto binary = m_store.find_binary(k.binary_key);
      if (!binary || !binary->ok)
        throw UsageError(fmt::format("the binary of {} is missing from the database", label(index)));
      m_binaries.push_back(std::make_unique<BinaryRecord>(std::move(*binary)));
    }
    std::string why_not;
    auto launch = m_measurer.kernel_launcher({m_binaries.back().get(), k.shape, k.requirements, label(index)}, &why_not);
    if (!launch) throw UsageError(fmt::format("{} cannot run here: {}", label(index), why_not));
    return std::move(*launch);
  }

  const ExportModel& m_model;
  Store& m_store;
  GpuMeasurer& m_measurer;
  const TemplateDesc& m_blocktile2d;
  std::string m_arch;
  std::vector<std::unique_ptr<BinaryRecord>> m_binaries;
  std::map<int, GemmLauncher> m_launchers;
  std::map<int, std::string> m_unusable;   // why each kernel that cannot run here cannot
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
  // The GPU first: without one, nothing is opened or created.
  const DeviceInfo device = select_device(resolve_live_device(o.device).index);
  Store store(database_path(global), OpenMode::read);   // only reads: works on a database this user cannot write
  const DeviceRecord db_device = resolve_db_device(store, std::to_string(device.index));
  if (store.winners(db_device.id).empty())
    throw UsageError(fmt::format("no winners stored for {}; run cm-tune tune first", device.name));
  const TemplateDesc blocktile2d = generic_default_template(global);
  const ExportModel model = device_export_model(store, db_device.id, global);
  std::set<DType> dtypes;
  for (const Problem& p : problems) dtypes.insert(p.dtype);
  std::unique_ptr<HeaderLibrary> header;
  if (!o.header.empty()) header = std::make_unique<HeaderLibrary>(o.header, o.name_space, device.arch(), dtypes);

  // The tuner's own measuring code: the same workspaces, validation and interleaved timing.
  TuneSettings settings;
  settings.allow_spills = true;  // time whatever the database holds
  GpuMeasurer measurer(device, settings, std::random_device{}());
  const GemmLauncher cublas = measurer.cublas_launcher();
  const std::vector<SeedBmmVariant> seed = seed_bmm_variants(measurer.stream());
  std::vector<BenchRow> rows;
  KernelCache kernels(model, store, measurer, blocktile2d, device.arch());  // declared after the measurer: dies first
  std::vector<RegretRow> regret_rows;
  for (const Problem& p : problems) {
    BenchRow row;
    row.problem = p;
    row.peak = type_peak(device, p.dtype);
    const CallShape call = tight_call(p);
    const DispatchedKernel winner = load_dispatched(model, call, kernels);
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

  // The header's kernels are built by nvcc and the tuned ones by NVRTC: the two can schedule one
  // source differently, so say where the header strays from what was measured.
  constexpr double k_header_tolerance = 0.03;
  if (header)
    for (const auto& r : rows) {
      const double gap = r.header_tflops / r.winner_tflops - 1.0;
      if (std::abs(gap) > k_header_tolerance)
        spdlog::warn("{}: the header runs {:+.1f}% against the database winner (dispatch: {}); its nvcc build of the "
                     "kernel differs from the NVRTC build that was tuned, or it dispatched another kernel",
                     r.problem.to_string(), 100.0 * gap, r.dispatch_note);
    }

  BenchReport report;
  report.device = device;
  report.rounds = o.rounds;
  report.header = header != nullptr;
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
  sub->add_option("--header", o->header, "Exported header to build (nvcc) and time through its dispatch")
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
