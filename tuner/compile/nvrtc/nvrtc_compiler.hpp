// Run-time compilation of kernel template instances to CUBIN with NVRTC: the Compiler of the
// pipeline's compile stage.
#pragma once

#include <string>
#include <vector>

#include "compile/compiler.hpp"

namespace cmt {

class NvrtcCompiler final : public Compiler {
 public:
  std::string version() const override;
  /// --gpu-architecture=ARCH, C++17 and ptxas -v for the resource report; no line info (its size).
  std::vector<std::string> options(const std::string& arch) const override;
  CompileOutput compile(const CompileRequest& request) const override;
};

/// "13.0"
std::string nvrtc_version_string();
/// Architectures NVRTC can emit CUBIN for, as "sm_XY".
std::vector<std::string> nvrtc_supported_archs();
/// Throws UsageError naming the arch and the supported ones when NVRTC cannot target it.
void check_arch(const std::string& arch);

/// Parses "Used N registers", "N bytes spill stores", "N bytes spill loads" from a ptxas log.
void parse_ptxas_resources(const std::string& log, int& registers, int& spill_stores, int& spill_loads);

}  // namespace cmt
