// Run-time compilation of one kernel template instance to CUBIN with NVRTC.
#pragma once

#include <string>
#include <vector>

#include "space/template_desc.hpp"

namespace cmt {

struct CompileRequest {
  std::string name_expression;         // e.g. "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>"
  const SourceBundle* source = nullptr;
  std::string arch;                    // "sm_90"
  std::vector<std::string> options;    // full NVRTC option list (see compile_options)
};

struct CompileOutput {
  bool ok = false;
  std::string log;                     // NVRTC and ptxas messages
  std::vector<char> cubin;
  std::string lowered_name;
  int registers = -1;                  // from ptxas -v, -1 when not reported
  int spill_stores = -1;
  int spill_loads = -1;
  double seconds = 0.0;
};

/// "13.0"
std::string nvrtc_version_string();
/// Architectures NVRTC can emit CUBIN for, as "sm_XY".
std::vector<std::string> nvrtc_supported_archs();
/// Throws UsageError naming the arch and the supported ones when NVRTC cannot target it.
void check_arch(const std::string& arch);
/// The options cm-tune compiles every candidate with, for one arch.
std::vector<std::string> compile_options(const std::string& arch);

/// Compiles one instance. A compile error is returned (ok=false, log), never thrown; only NVRTC
/// API failures throw InfraError. Thread-safe.
CompileOutput nvrtc_compile(const CompileRequest& request);

/// Parses "Used N registers", "N bytes spill stores", "N bytes spill loads" from a ptxas log.
void parse_ptxas_resources(const std::string& log, int& registers, int& spill_stores, int& spill_loads);

}  // namespace cmt
