// The compile stage's seam: what turns one template instantiation into a CUBIN. NVRTC implements
// it (compile/nvrtc/nvrtc_compiler.hpp); the pipeline and the compile cache see only this interface.
#pragma once

#include <string>
#include <vector>

#include "core/source_bundle.hpp"

namespace cmt {

struct CompileRequest {
  std::string name_expression;       // e.g. "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>"
  const SourceBundle* source = nullptr;
  std::string arch;                  // "sm_90" (CUBIN), or "compute_75" (PTX, for the driver to compile)
  std::vector<std::string> options;  // the full option list (Compiler::options)
  /// More instantiations of the same source to build into the same binary (export's runtime library).
  std::vector<std::string> more_names;
};

struct CompileOutput {
  bool ok = false;
  std::string log;                   // compiler and assembler messages
  std::vector<char> cubin;           // the CUBIN; for a compute_XY arch, the PTX text (NUL-terminated)
  std::string lowered_name;          // the kernel's symbol in the cubin
  std::vector<std::string> more_lowered;  // the symbols of CompileRequest::more_names, in order
  int registers = -1;                // -1 when not reported
  int spill_stores = -1;
  int spill_loads = -1;
  double seconds = 0.0;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  /// The compiler's version, part of every compile-cache key (e.g. "13.0").
  virtual std::string version() const = 0;
  /// Every option an instantiation is compiled with for `arch`, also part of the cache key.
  virtual std::vector<std::string> options(const std::string& arch) const = 0;
  /// Compiles one instantiation. A compile error is returned (ok = false, log); only failures of
  /// the compiler itself throw InfraError. Called from several threads at once.
  virtual CompileOutput compile(const CompileRequest& request) const = 0;
};

}  // namespace cmt
