// cm-tune bench: the database winner, the exported header's dispatch and cuBLAS, interleaved.
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <random>
#include <spdlog/spdlog.h>

#include "cli/app.hpp"
#include "cli/sizes.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/device.hpp"
#include "export/dispatch.hpp"
#include "measure/gpu_measurer.hpp"

namespace cmt::cli {

namespace {

struct BenchOptions {
  std::string device = "0";
  std::string sizes;
  OperandOptions operands;
  std::string header;
  std::string name_space = "cmtune";
  int rounds = 100;
  bool json = false;
};

/// The harness's entry: sgemm_strided_batched with op flags as ints (1: transposed).
using HeaderSgemm = cudaError_t (*)(int, int, int, int, int, float, const float*, int, long long, const float*, int,
                                    long long, float, float*, int, long long, int, cudaStream_t);

/// Builds the exported header into a shared library with nvcc and loads its sgemm entry point.
class HeaderLibrary {
 public:
  HeaderLibrary(const std::string& header, const std::string& name_space, const std::string& arch) {
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
          << "static ns::Op op(int t) { return t ? ns::Op::T : ns::Op::N; }\n"
          << "extern \"C\" cudaError_t cmt_bench_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float* a,\n"
          << "    int lda, long long sa, const float* b, int ldb, long long sb, float beta, float* c, int ldc, long long sc,\n"
          << "    int batch, cudaStream_t s) {\n"
          << "  return ns::sgemm_strided_batched(op(ta), op(tb), m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,\n"
          << "                                   batch, s);\n}\n"
          << "extern \"C\" const char* cmt_bench_kernel_name(int ta, int tb, int m, int n, int k, int lda, long long sa,\n"
          << "    int ldb, long long sb, int ldc, long long sc, int batch) {\n"
          << "  const float* p = reinterpret_cast<const float*>(256);  // aligned as cudaMalloc's buffers\n"
          << "  const char* name = nullptr;\n"
          << "  return ns::kernel_name(op(ta), op(tb), m, n, k, p, lda, sa, p, ldb, sb, p, ldc, sc, batch, &name) == cudaSuccess\n"
          << "      ? name : nullptr;\n}\n";
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
    m_sgemm = reinterpret_cast<HeaderSgemm>(dlsym(m_handle, "cmt_bench_sgemm"));
    if (!m_sgemm) throw UsageError("the compiled header has no cmt_bench_sgemm");
    m_kernel_name = reinterpret_cast<KernelName>(dlsym(m_handle, "cmt_bench_kernel_name"));
    if (!m_kernel_name) throw UsageError("the compiled header has no cmt_bench_kernel_name");
  }
  ~HeaderLibrary() {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);  // the library stays mapped until exit
  }
  HeaderSgemm sgemm() const { return m_sgemm; }
  /// The instantiation the header's dispatch runs for a call on aligned buffers.
  std::string kernel_name(const CallShape& c) const {
    const Problem& p = c.problem;
    const char* name = m_kernel_name(p.trans_a, p.trans_b, static_cast<int>(p.m), static_cast<int>(p.n),
                                     static_cast<int>(p.k), static_cast<int>(c.lda), p.stride_a, static_cast<int>(c.ldb),
                                     p.stride_b, static_cast<int>(c.ldc), p.stride_c, static_cast<int>(p.batch));
    return name ? name : "?";
  }

 private:
  std::filesystem::path m_dir;
  void* m_handle = nullptr;
  HeaderSgemm m_sgemm = nullptr;
  using KernelName = const char* (*)(int, int, int, int, int, int, long long, int, long long, int, long long, int);
  KernelName m_kernel_name = nullptr;
};

struct BenchRow {
  Problem problem;
  std::string winner;            // template[params] that the dispatch picks (the header's choice too)
  std::string dispatch_note;
  bool tuned = false;            // the problem was tuned; else the cost model chose
  std::string header_kernel;     // template[params] the header dispatched, when it differs
  double winner_tflops = 0, header_tflops = 0, cublas_tflops = 0;
  bool winner_valid = false, header_valid = false;
};

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

int run_bench(const GlobalOptions& global, const BenchOptions& o) {
  const auto problems = apply_operand_options(parse_sizes(o.sizes), o.operands);
  require_supported_types(problems, "bench");
  // The GPU first: without one, nothing is opened or created.
  const DeviceInfo device = select_device(resolve_live_device(o.device).index);
  Store store(database_path(global), OpenMode::read);   // only reads: works on a database this user cannot write
  const DeviceRecord db_device = resolve_db_device(store, std::to_string(device.index));
  if (store.winners(db_device.id).empty())
    throw UsageError(fmt::format("no winners stored for {}; run cm-tune tune first", device.name));
  const ExportModel model = device_export_model(store, db_device.id, global);
  std::unique_ptr<HeaderLibrary> header;
  if (!o.header.empty()) header = std::make_unique<HeaderLibrary>(o.header, o.name_space, device.arch());

  // The tuner's own measuring code: the same workspaces, validation and interleaved timing.
  TuneSettings settings;
  settings.allow_spills = true;  // time whatever the database holds
  GpuMeasurer measurer(device, settings, std::random_device{}());
  const GemmLauncher cublas = measurer.cublas_launcher();
  GemmLauncher header_launch;
  if (header) {
    const HeaderSgemm fn = header->sgemm();
    const cudaStream_t stream = measurer.stream();
    header_launch = [fn, stream](const GemmArgs& a) {
      // bench refuses other types than f32 (require_supported_types): the header's entry is SGEMM.
      return fn(a.trans_a, a.trans_b, a.m, a.n, a.k, a.alpha.f32(), a.a_as<float>(), a.lda, a.stride_a, a.b_as<float>(),
                a.ldb, a.stride_b, a.beta.f32(), a.c_as<float>(), a.ldc, a.stride_c, a.batch, stream);
    };
  }
  std::vector<BenchRow> rows;
  std::vector<BinaryRecord> binaries;  // the kernels stay loaded while the measurer lives
  binaries.reserve(problems.size());
  for (const Problem& p : problems) {
    BenchRow row;
    row.problem = p;
    const CallShape call = tight_call(p);
    const DispatchChoice choice = choose_kernel(model, 0, call);
    row.dispatch_note = choice.why;
    row.tuned = choice.exact;
    if (choice.kernel < 0) throw UsageError(fmt::format("{}: {}", p.to_string(), choice.why));
    const ExportKernel& k = model.kernels.at(static_cast<size_t>(choice.kernel));
    row.winner = fmt::format("{}[{}]", k.template_name, k.params);
    if (k.binary_key.empty())
      throw UsageError(fmt::format("{}: the dispatch runs the generic default kernel ({}), which is not in the database; "
                                   "tune this device first",
                                   p.to_string(), choice.why));
    auto binary = store.find_binary(k.binary_key);
    if (!binary || !binary->ok) throw UsageError(fmt::format("the binary of {} is missing from the database", row.winner));
    binaries.push_back(std::move(*binary));
    std::string why_not;
    const auto winner = measurer.kernel_launcher({&binaries.back(), k.shape, k.requirements, row.winner}, &why_not);
    if (!winner) throw UsageError(fmt::format("{}: {} cannot run here: {}", p.to_string(), row.winner, why_not));

    if (header) {
      const std::string ran = header->kernel_name(call);
      row.header_kernel = ran;
      for (const auto& mk : model.kernels)
        if (mk.name_expression == ran) row.header_kernel = fmt::format("{}[{}]", mk.template_name, mk.params);
    }
    row.winner_valid = measurer.validate(*winner, p).passed;
    if (header) row.header_valid = measurer.validate(header_launch, p).passed;
    std::vector<GemmLauncher> launches{*winner, cublas};
    if (header) launches.push_back(header_launch);
    const auto results = measurer.time_interleaved(launches, p, o.rounds);
    for (const auto& r : results)
      if (r.status != cudaSuccess) throw InfraError("CUDA", "bench launch", cudaGetErrorString(r.status), __FILE__, __LINE__);
    row.winner_tflops = gflops(p.flops(), results[0].stats.median) / 1e3;
    row.cublas_tflops = gflops(p.flops(), results[1].stats.median) / 1e3;
    if (header) row.header_tflops = gflops(p.flops(), results[2].stats.median) / 1e3;
    rows.push_back(row);
    spdlog::info("{}: winner {:.2f} TF/s, cuBLAS {:.2f} TF/s{}", p.to_string(), row.winner_tflops, row.cublas_tflops,
                 header ? fmt::format(", header {:.2f} TF/s", row.header_tflops) : "");
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

  std::vector<double> winner_ratios, header_ratios;
  for (const auto& r : rows) {
    winner_ratios.push_back(r.winner_tflops / r.cublas_tflops);
    if (header) header_ratios.push_back(r.header_tflops / r.cublas_tflops);
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
      out.push_back({{"problem", r.problem.to_string()},
                     {"winner", r.winner},
                     {"tuned", r.tuned},
                     {"dispatch", r.dispatch_note},
                     {"winner_tflops", r.winner_tflops},
                     {"winner_valid", r.winner_valid},
                     {"cublas_tflops", r.cublas_tflops},
                     {"winner_ratio", r.winner_tflops / r.cublas_tflops},
                     {"header_kernel", r.header_kernel},
                     {"header_tflops", header ? nlohmann::json(r.header_tflops) : nlohmann::json()},
                     {"header_valid", header ? nlohmann::json(r.header_valid) : nlohmann::json()},
                     {"header_ratio", header ? nlohmann::json(r.header_tflops / r.cublas_tflops) : nlohmann::json()},
                     {"header_vs_winner", header ? nlohmann::json(r.header_tflops / r.winner_tflops) : nlohmann::json()}});
    print_json({{"device", device.name},
                {"driver", device.driver_version},
                {"runtime", device.runtime_version},
                {"rounds", o.rounds},
                {"rows", out},
                {"geomean_winner_ratio", geomean(winner_ratios)},
                {"geomean_header_ratio", header ? nlohmann::json(geomean(header_ratios)) : nlohmann::json()}});
  } else {
    fmt::print("{} ({}), driver {}, runtime {}, median of {} interleaved rounds, L2 flushed\n", device.name, device.arch(),
               device.driver_version, device.runtime_version, o.rounds);
    fmt::print("{:<18} {:>9} {:>9} {:>9} {:>8} {:>8}  {}\n", "problem", "kernel", "header", "cuBLAS", "k/cuBLAS",
               "h/cuBLAS", "dispatched kernel (* = chosen by the cost model: not tuned)");
    for (const auto& r : rows)
      fmt::print("{:<18} {:>9.2f} {:>9} {:>9.2f} {:>7.3f}x {:>8}  {}{}{}\n", r.problem.to_string() + (r.tuned ? "" : " *"),
                 r.winner_tflops,
                 header ? fmt::format("{:.2f}", r.header_tflops) : "-", r.cublas_tflops, r.winner_tflops / r.cublas_tflops,
                 header ? fmt::format("{:.3f}x", r.header_tflops / r.cublas_tflops) : "-", r.winner,
                 r.header_kernel.empty() || r.header_kernel == r.winner ? "" : fmt::format("  (header ran {})", r.header_kernel),
                 r.winner_valid && (!header || r.header_valid) ? "" : "  (VALIDATION FAILED)");
    fmt::print("{:<18} {:>9} {:>9} {:>9} {:>7.3f}x {:>8}\n", "geomean", "", "", "", geomean(winner_ratios),
               header ? fmt::format("{:.3f}x", geomean(header_ratios)) : "-");
  }
  for (const auto& r : rows)
    if (!r.winner_valid || (header && !r.header_valid)) return 1;
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
  sub->add_option("--namespace", o->name_space, "Namespace of the header's sgemm")->capture_default_str();
  sub->add_option("--rounds", o->rounds, "Interleaved rounds (samples per implementation), at least 5")
      ->capture_default_str()
      ->check(whole_number(5, std::numeric_limits<int>::max()));
  sub->add_flag("--json", o->json, "Machine-readable output");
  add_db_option(*sub, global);
  sub->callback([&action, &global, o] { action = [&global, o] { return run_bench(global, *o); }; });
}

}  // namespace cmt::cli
