// Kernel template descriptors: templates/<name>.toml beside templates/<name>.cuh.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/source_bundle.hpp"
#include "core/types.hpp"
#include "space/expr.hpp"
#include "space/target.hpp"

namespace cmt {

struct ParamDesc {
  std::string name;              // a C++ template argument of the kernel, e.g. "BM"
  std::vector<int64_t> values;   // default candidate values
  std::string help;              // one line
  bool implicit = false;         // TRANS_A, TRANS_B, DTYPE: implied by `layouts` and `dtypes`
};

/// A value computed from the parameters ([derived]), usable by every expression after it.
struct DerivedValue {
  std::string name;              // e.g. "THREADS"
  Expr expr;
};

struct Constraint {
  Expr check;                    // must evaluate non-zero for a valid candidate
  std::string reason;            // readable, e.g. "threads (BM/TM)*(BN/TN) must be <= 1024"
  std::filesystem::path file;    // where it is written: the descriptor or a fragment it includes
};

struct TemplateDesc {
  std::string name;              // e.g. "blocktile2d"; unique across all loaded templates
  std::string kernel;            // C++ kernel template name, e.g. "cmt_sgemm_blocktile2d"
  std::string summary;           // one line
  std::filesystem::path descriptor_path;
  std::filesystem::path source_path;
  std::vector<ParamDesc> params; // in template-argument order
  std::vector<DerivedValue> derived;               // in the order declared
  std::vector<std::filesystem::path> includes;     // constraint fragments, as included
  std::vector<Constraint> constraints;             // the fragments' first, in include order
  Expr threads, tile_m, tile_n, dynamic_smem, grid_z;  // [launch]
  /// [launch] problems_per_block: each block computes its tile of this many consecutive problems of
  /// a batch, and the kernel takes the launch's problem count (`int batch`) after the strides. Only
  /// a batched family may declare it; none: one problem per block, and no such argument.
  std::optional<Expr> problems_per_block;
  /// [launch] tensor_maps = true: the kernel reads A and B through TMA and takes two tensor maps
  /// after the fifteen standard arguments (LaunchShape::tensor_maps says how the launcher builds them).
  bool tensor_maps = false;
  /// arch_specific = true: the kernel uses features of one architecture only (wgmma, setmaxnreg):
  /// it is compiled for the target's arch-specific variant (sm_90 -> sm_90a), whose CUBIN loads on
  /// that architecture alone; its constraints must confine it to that architecture.
  bool arch_specific = false;
  Expr align_bytes, ld_multiple;               // [requires]
  /// Which problems the tuner tries the family on (`applies`, over M, N, K and the parameters);
  /// none: every problem. The kernel is correct everywhere; this only says where it may win.
  std::optional<Expr> applies;
  /// The layouts the kernel computes ("nn", "nt", "tn", "tt"), in the order declared. Beyond "nn",
  /// the kernel takes TRANS_A and TRANS_B as its last two template arguments (implicit params).
  std::vector<std::string> layouts{"nn"};
  /// Whether the kernel takes the batch strides (strided-batched GEMM on grid z).
  bool batched = false;
  /// The element types the kernel computes, in the order declared. Beyond f32 alone, the kernel
  /// takes DTYPE (0 f32, 1 f64, 2 i32; as DType) as its last template argument (an implicit param).
  std::vector<DType> dtypes{DType::f32};
  /// [generic_default]: the point of this family that the exported header runs for every call no
  /// tuned kernel serves, one value per declared parameter in template-argument order (TRANS_A,
  /// TRANS_B and DTYPE follow from each build's layout and type). Exactly one of the loaded
  /// templates declares it (find_generic_default); none: this family is not the generic default.
  std::optional<ParamValues> generic_default;
  /// Whether the kernel takes the launch's problem count after the strides (it declares
  /// [launch] problems_per_block).
  bool takes_batch_count() const { return problems_per_block.has_value(); }

  /// Evaluates one of this descriptor's expressions at a point: names resolve to the parameters,
  /// then the derived values, then the target's DEVICE_* names. `key` names it in errors.
  int64_t eval(const Expr& expr, const ParamValues& values, const Target& target, std::string_view key) const;
  /// The layout a point computes: from TRANS_A and TRANS_B, "nn" for a family without them.
  std::string layout_of(const ParamValues& values) const;
  bool supports_layout(std::string_view layout) const;
  /// The element type a point computes: from DTYPE, f32 for a family without it.
  DType dtype_of(const ParamValues& values) const;
  bool supports_dtype(DType dtype) const;
  /// Whether a point computes this problem at all: its layout and element type, and a batch above 1
  /// only when the family is batched. Unlike `applies`, this is about correctness and is never ignored.
  bool serves(const ParamValues& values, const Problem& problem) const;
  /// Whether `applies` holds for a problem (true without one).
  bool applies_to(const ParamValues& values, const Target& target, const Problem& problem) const;
  /// The position of the first constraint the point fails, or nullopt when it meets them all.
  /// UsageError, naming the constraint and the point, when one cannot be evaluated.
  std::optional<size_t> failed_constraint(const ParamValues& values, const Target& target) const;
  LaunchShape launch_shape(const ParamValues& values, const Target& target) const;
  Requirements requirements(const ParamValues& values, const Target& target) const;
  /// The NVRTC name expression, e.g. "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>".
  std::string name_expression(const ParamValues& values) const;
  /// Reads source_path and its quoted includes (recursively, from the same folder).
  SourceBundle load_source() const;

 private:
  int64_t eval_at(const Expr& expr, const ParamValues& values, const Target& target, const Problem* problem,
                  std::string_view key) const;
};

/// The layout a kernel's parameters say: from TRANS_A and TRANS_B, "nn" without them.
std::string layout_of_params(const ParamValues& values);
/// The element type a kernel's parameters say: from DTYPE, f32 without it.
DType dtype_of_params(const ParamValues& values);

/// Loads one descriptor and the constraint fragments it includes. Errors are UsageError
/// "FILE:LINE: KEY: message", FILE being the fragment for an error in one.
TemplateDesc load_template(const std::filesystem::path& descriptor);
/// Loads every *.toml descriptor in each folder (not its subfolders, where fragments live); sorted by
/// name; duplicate names are an error.
std::vector<TemplateDesc> load_templates(const std::vector<std::filesystem::path>& folders);
/// The template that declares [generic_default] (the exported header's generic default kernel), or
/// nullptr when none does. UsageError naming both when two do.
const TemplateDesc* find_generic_default(const std::vector<TemplateDesc>& templates);
/// The folder of the built-in templates: $CMTUNE_TEMPLATES, else the source tree's templates/.
std::filesystem::path default_templates_dir();

}  // namespace cmt
