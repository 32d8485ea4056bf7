#include "export/gpu/header_library.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <random>
#include <spdlog/spdlog.h>
#include <system_error>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "export/header_check.hpp"

namespace cmt {

namespace {

/// The harness's entries, one per element type T: {s,d,i}gemm_strided_batched with op flags as ints
/// (1: transposed).
template <class T>
using HeaderGemm = cudaError_t (*)(int, int, int, int, int, T, const T*, int, long long, const T*, int, long long, T, T*,
                                   int, long long, int, cudaStream_t);

}  // namespace

std::string header_build_arch(const DeviceInfo& device) {
  return device.cc_major == 9 && device.cc_minor == 0 ? device.arch() + "a" : device.arch();
}

HeaderLibrary::HeaderLibrary(const std::string& header, const std::string& name_space, const std::string& arch,
                             const std::set<DType>& dtypes) {
  const auto header_path = std::filesystem::absolute(header);
  if (!std::filesystem::exists(header_path)) throw UsageError(fmt::format("--header {} does not exist", header));
  if (std::filesystem::is_directory(header_path))
    throw UsageError(fmt::format("--header {} is a folder, not an exported header", header));
  // A header of machine code builds with the C++ compiler, as a program that includes it would; one of
  // sources needs nvcc.
  const bool machine_code = is_machine_code_header(read_text_file(header_path, "the header"));
  m_machine_code = machine_code;
  const std::string harness = machine_code ? "harness.cpp" : "harness.cu";
  m_dir = std::filesystem::temp_directory_path() / fmt::format("cm-tune-bench-{}", std::random_device{}());
  std::filesystem::create_directories(m_dir);
  {
    std::ofstream src(m_dir / harness);
    src << fmt::format("#include \"{}\"\n", header_path.string())
        << fmt::format("namespace ns = {};\n", name_space)
        << "static ns::Op op(int t) { return t ? ns::Op::T : ns::Op::N; }\n";
    for (const DType d : dtypes) {
      // sgemm, dgemm, igemm, or an opt-in class's routine (sgemm_tf32x3, with kernel_name_tf32x3).
      const std::string t(type_info(d).c_type);
      src << fmt::format(
          "extern \"C\" cudaError_t cmt_bench_{x}(int ta, int tb, int m, int n, int k, {t} alpha, const {t}* a,\n"
          "    int lda, long long sa, const {t}* b, int ldb, long long sb, {t} beta, {t}* c, int ldc, long long sc,\n"
          "    int batch, cudaStream_t s) {{\n"
          "  return ns::{x}_strided_batched(op(ta), op(tb), m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,\n"
          "                                   batch, s);\n}}\n"
          "extern \"C\" const char* cmt_bench_{x}_kernel_name(int ta, int tb, int m, int n, int k, int lda,\n"
          "    long long sa, int ldb, long long sb, int ldc, long long sc, int batch) {{\n"
          "  const {t}* p = reinterpret_cast<const {t}*>(256);  // aligned as cudaMalloc's buffers\n"
          "  const char* name = nullptr;\n"
          "  return ns::{kn}(op(ta), op(tb), m, n, k, p, lda, sa, p, ldb, sb, p, ldc, sc, batch, &name) == cudaSuccess\n"
          "      ? name : nullptr;\n}}\n",
          fmt::arg("x", header_routine(d)), fmt::arg("t", t), fmt::arg("kn", header_kernel_name_function(d)));
    }
  }
  const char* cuda_home_env = std::getenv("CUDA_HOME");
  const std::string cuda_home = cuda_home_env ? cuda_home_env : "/usr/local/cuda";
  const std::string log = (m_dir / "build.log").string();
  std::string cmd;
  std::string compiler;
  if (machine_code) {
    // The runtime linked statically into the harness, as nvcc links it by default.
    const char* cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "g++";
    cmd = fmt::format("{} -std=c++17 -O2 -fPIC -shared -I{}/include -o {} {} -L{}/lib64 -lcudart_static -ldl -lpthread "
                      "-lrt > {} 2>&1",
                      compiler, cuda_home, (m_dir / "harness.so").string(), (m_dir / harness).string(), cuda_home, log);
    spdlog::info("building the header with {}", compiler);
  } else {
    compiler = "nvcc";
    cmd = fmt::format("{}/bin/nvcc -std=c++17 -O3 -arch={} -Xcompiler -fPIC -shared -o {} {} > {} 2>&1", cuda_home, arch,
                      (m_dir / "harness.so").string(), (m_dir / harness).string(), log);
    spdlog::info("building the header with nvcc for {}", arch);
  }
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    throw UsageError(fmt::format("the header {} does not compile with {}: {}", header, compiler, text.substr(0, 2000)));
  }
  m_handle = dlopen((m_dir / "harness.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m_handle) throw UsageError(fmt::format("cannot load the compiled header: {}", dlerror()));
  for (const DType d : dtypes) {
    const std::string gemm = fmt::format("cmt_bench_{}", header_routine(d));
    const std::string name = fmt::format("cmt_bench_{}_kernel_name", header_routine(d));
    void* g = dlsym(m_handle, gemm.c_str());
    void* n = dlsym(m_handle, name.c_str());
    if (!g || !n) throw UsageError(fmt::format("the compiled header has no {}", header_routine(d)));
    m_gemm[d] = g;
    m_kernel_name[d] = reinterpret_cast<KernelNameEntry>(n);
  }
}

HeaderLibrary::~HeaderLibrary() {
  std::error_code ec;
  std::filesystem::remove_all(m_dir, ec);  // the library stays mapped until exit
}

GemmLauncher HeaderLibrary::launcher(DType dtype, cudaStream_t stream) const {
  void* fn = m_gemm.at(dtype);
  return [fn, stream](const GemmArgs& a) {
    return visit_storage_type(a.dtype, [&](auto zero) {
      using T = decltype(zero);
      return reinterpret_cast<HeaderGemm<T>>(fn)(a.trans_a, a.trans_b, a.m, a.n, a.k, a.alpha.as<T>(), a.a_as<T>(),
                                                 a.lda, a.stride_a, a.b_as<T>(), a.ldb, a.stride_b, a.beta.as<T>(),
                                                 a.c_as<T>(), a.ldc, a.stride_c, a.batch, stream);
    });
  };
}

std::string HeaderLibrary::kernel_name(const CallShape& c) const {
  const Problem& p = c.problem;
  const char* name = m_kernel_name.at(p.dtype)(p.trans_a, p.trans_b, static_cast<int>(p.m), static_cast<int>(p.n),
                                               static_cast<int>(p.k), static_cast<int>(c.lda), p.stride_a,
                                               static_cast<int>(c.ldb), p.stride_b, static_cast<int>(c.ldc),
                                               p.stride_c, static_cast<int>(p.batch));
  return name ? name : "?";
}

}  // namespace cmt
