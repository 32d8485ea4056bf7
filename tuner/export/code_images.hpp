// The machine code of a header of machine code (`export --form binary`, the default): per kernel, the
// cubin each device table measured it as, read from the database's compile cache, and the runtime
// library (the generic defaults and the header's own kernels, export/runtime/header_kernels.cuh)
// built with the Compiler: a cubin per table architecture, and PTX for every other GPU.
#pragma once

#include <string>
#include <vector>

#include "compile/compiler.hpp"
#include "export/export_model.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"

namespace cmt {

/// The PTX target of the runtime library: the oldest architecture NVRTC 13 compiles for, which the
/// driver compiles for any newer GPU.
constexpr const char* k_runtime_ptx_arch = "compute_75";

/// One image: a cubin of one architecture, or PTX.
struct CodeImageBytes {
  std::string arch;            // "sm_90", "sm_90a", "compute_75"
  std::vector<char> bytes;
  std::string binary_key;      // its compile cache key: the database's for a measured kernel
  std::string hash;            // hash_hex of the bytes
  std::string what;            // for the header's comment: "kernel 3" or "runtime library"
};

struct HeaderCode {
  std::vector<CodeImageBytes> images;
  /// Per function (the kernels in ExportModel::kernels order, then the k_header_helpers), its symbol
  /// and the images that hold it.
  std::vector<std::string> symbols;
  std::vector<std::vector<int>> function_images;
};

/// The header's own kernels, by helper number (the header's k_helper_scale + type, k_helper_split_sum
/// + type): name expressions in the runtime library.
const std::vector<std::string>& header_helper_names();

/// The runtime library's source: the generic default template's bundle and header_kernels.cuh.
SourceBundle runtime_library_source(const TemplateDesc& default_tmpl);

/// Collects the header's machine code. A build whose cubin the database dropped is built again from the
/// source it keeps, by the same NVRTC version (which gives the same bytes). UsageError when a kernel's
/// build is missing, or its cubin is dropped and this NVRTC cannot rebuild it, naming it and `export
/// --form source`; InfraError when the runtime library does not build.
HeaderCode collect_header_code(Store& store, const ExportModel& model, const TemplateDesc& default_tmpl,
                               const Compiler& compiler);

}  // namespace cmt
