#include "compile/nvrtc/nvrtc_compiler.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <regex>

#include "core/error.hpp"
#include "cuda/check.hpp"

namespace cmt {

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  CMT_NVRTC_CHECK(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> nvrtc_supported_archs() {
  int count = 0;
  CMT_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<size_t>(count));
  CMT_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  std::vector<std::string> out;
  for (int a : archs) out.push_back(fmt::format("sm_{}", a));
  return out;
}

void check_arch(const std::string& arch) {
  const auto supported = nvrtc_supported_archs();
  std::string base = arch;
  if (!base.empty() && (base.back() == 'a' || base.back() == 'f')) base.pop_back();  // sm_90a: arch-specific
  if (std::find(supported.begin(), supported.end(), base) == supported.end())
    throw UsageError(fmt::format("unsupported --arch '{}': NVRTC {} emits CUBIN for {}", arch, nvrtc_version_string(),
                                 fmt::join(supported, ", ")));
}

std::string NvrtcCompiler::version() const { return nvrtc_version_string(); }

std::vector<std::string> NvrtcCompiler::options(const std::string& arch) const {
  // No --generate-line-info: it made each cubin 3.3x larger (the PTX text embedded for SASS-to-PTX
  // correlation, 58% of the bytes, plus the line tables) without changing the machine code, and
  // nothing reads it: measuring needs none, and the profiling scripts (scripts/gpu, scripts/diag)
  // read ncu's metrics, not its source page.
  if (arch.rfind("compute_", 0) == 0) return {"--gpu-architecture=" + arch, "--std=c++17"};   // PTX: no ptxas
  return {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v"};
}

void parse_ptxas_resources(const std::string& log, int& registers, int& spill_stores, int& spill_loads) {
  std::smatch m;
  static const std::regex k_regs(R"(Used (\d+) registers)");
  static const std::regex k_spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  if (std::regex_search(log, m, k_regs)) registers = std::stoi(m[1]);
  if (std::regex_search(log, m, k_spills)) {
    spill_stores = std::stoi(m[1]);
    spill_loads = std::stoi(m[2]);
  }
}

namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    if (p) nvrtcDestroyProgram(p);
    delete p;
  }
};

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  CMT_NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &size));
  std::string log(size, '\0');
  if (size > 0) CMT_NVRTC_CHECK(nvrtcGetProgramLog(prog, log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

CompileOutput NvrtcCompiler::compile(const CompileRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  CompileOutput out;
  const SourceBundle& src = *request.source;

  // The instantiation is requested through a name expression; NVRTC returns its lowered name.
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : src.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram(nullptr));
  CMT_NVRTC_CHECK(nvrtcCreateProgram(prog.get(), src.main_text.c_str(), src.main_name.c_str(),
                                     static_cast<int>(header_texts.size()), header_texts.data(), header_names.data()));
  CMT_NVRTC_CHECK(nvrtcAddNameExpression(*prog, request.name_expression.c_str()));
  for (const auto& name : request.more_names) CMT_NVRTC_CHECK(nvrtcAddNameExpression(*prog, name.c_str()));

  std::vector<const char*> options;
  for (const auto& o : request.options) options.push_back(o.c_str());
  const nvrtcResult status = nvrtcCompileProgram(*prog, static_cast<int>(options.size()), options.data());
  out.log = program_log(*prog);
  if (status == NVRTC_SUCCESS) {
    const char* lowered = nullptr;
    CMT_NVRTC_CHECK(nvrtcGetLoweredName(*prog, request.name_expression.c_str(), &lowered));
    out.lowered_name = lowered;
    for (const auto& name : request.more_names) {
      CMT_NVRTC_CHECK(nvrtcGetLoweredName(*prog, name.c_str(), &lowered));
      out.more_lowered.emplace_back(lowered);
    }
    size_t size = 0;
    if (request.arch.rfind("compute_", 0) == 0) {   // a virtual arch: PTX, which the driver compiles
      CMT_NVRTC_CHECK(nvrtcGetPTXSize(*prog, &size));
      out.cubin.resize(size);
      CMT_NVRTC_CHECK(nvrtcGetPTX(*prog, out.cubin.data()));
    } else {
      CMT_NVRTC_CHECK(nvrtcGetCUBINSize(*prog, &size));
      out.cubin.resize(size);
      CMT_NVRTC_CHECK(nvrtcGetCUBIN(*prog, out.cubin.data()));
    }
    out.ok = size > 0;
    if (!out.ok) out.log += "\nNVRTC produced no CUBIN (is the arch a real sm_XY?)";
    parse_ptxas_resources(out.log, out.registers, out.spill_stores, out.spill_loads);
  } else if (status != NVRTC_ERROR_COMPILATION) {
    out.log = fmt::format("{}\n{}", nvrtcGetErrorString(status), out.log);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace cmt
