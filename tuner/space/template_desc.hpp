// Kernel template descriptors: templates/<name>.toml beside templates/<name>.cuh.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "space/expr.hpp"

namespace cmt {

struct ParamDesc {
  std::string name;              // a C++ template argument of the kernel, e.g. "BM"
  std::vector<int64_t> values;   // default candidate values
  std::string help;              // one line
};

struct Constraint {
  Expr check;                    // must evaluate non-zero for a valid candidate
  std::string reason;            // readable, e.g. "threads (BM/TM)*(BN/TN) must be <= 1024"
};

/// The source of a template with everything it includes (quoted includes, resolved in its folder).
struct SourceBundle {
  std::string main_name;                                  // e.g. "blocktile2d.cuh"
  std::string main_text;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text), sorted by name
};

struct TemplateDesc {
  std::string name;              // e.g. "blocktile2d"; unique across all loaded templates
  std::string kernel;            // C++ kernel template name, e.g. "cmt_sgemm_blocktile2d"
  std::string summary;           // one line
  std::filesystem::path descriptor_path;
  std::filesystem::path source_path;
  std::vector<ParamDesc> params; // in template-argument order
  std::vector<Constraint> constraints;
  Expr threads, tile_m, tile_n, dynamic_smem, grid_z;  // [launch]
  Expr align_bytes, ld_multiple;               // [requires]

  LaunchShape launch_shape(const ParamValues& values) const;
  Requirements requirements(const ParamValues& values) const;
  /// The NVRTC name expression, e.g. "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>".
  std::string name_expression(const ParamValues& values) const;
  /// Reads source_path and its quoted includes (recursively, from the same folder).
  SourceBundle load_source() const;
};

/// Loads one descriptor. Errors are UsageError "FILE:LINE: KEY: message".
TemplateDesc load_template(const std::filesystem::path& descriptor);
/// Loads every *.toml descriptor in each folder; sorted by name; duplicate names are an error.
std::vector<TemplateDesc> load_templates(const std::vector<std::filesystem::path>& folders);
/// The folder of the built-in templates: $CMTUNE_TEMPLATES, else the source tree's templates/.
std::filesystem::path default_templates_dir();

}  // namespace cmt
