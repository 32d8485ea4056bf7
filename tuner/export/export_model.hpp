// What an exported header holds, read from the database: its kernels, their sources, and per
// device the tuned problems and every kernel's fitted cost model (export/cost_model.hpp). `query`,
// `bench` and the header writer all work from this one model, so they decide alike.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"

namespace cmt {

/// One kernel of the header: one instantiation of one source bundle.
struct ExportKernel {
  std::string source_hash;       // bundle hash (SourceRecord::hash)
  std::string template_name;
  std::string params;            // params_to_string
  std::string name_expression;   // e.g. "cmt_sgemm_blocktile2d<64, 64, 8, 8, 4>"
  LaunchShape shape;
  Requirements requirements;
  std::string binary_key;        // its NVRTC build in the compile cache (empty: a generic default never measured)
  std::string layout = "nn";     // the layout it computes (its TRANS_A, TRANS_B)
  DType dtype = DType::f32;      // the element type it computes (its DTYPE; f32 without one)
  bool batched = false;          // takes the batch strides (strided-batched calls)
  bool takes_batch_count = false;  // and the launch's problem count after them (problems_per_block)
};

/// One tuned problem of a device table; kernels are indices into ExportModel::kernels.
struct ExportEntry {
  Problem problem;
  int primary = 0;
  int portable = -1;             // -1: no kernel without requirements was tuned (generic default)
};

/// One kernel's cost model on one device (the header's KernelModel): predicted microseconds are
/// coef . model_features(shape) (export/runtime/dispatch_rules.h), trusted within a factor of two of
/// the shapes it was measured on.
struct ExportKernelModel {
  int kernel = 0;                      // index into ExportModel::kernels
  int blocks_per_sm = 1;               // resident blocks per SM on this device (occupancy)
  double coef[4] = {0, 0, 0, 0};
  int64_t min_m = 0, max_m = 0, min_n = 0, max_n = 0, min_k = 0, max_k = 0;
  int points = 0;                      // distinct problems it was fitted on
  double rms_relative_error = 0;       // of the fit on those points
};

/// One measurement of a kernel: a problem, its time in microseconds, and how much the fit should
/// heed it. export_model weighs a point by (fastest time at the problem / this time)^2: the model
/// must be right where its kernel competes, and only roughly where another kernel wins by far.
struct ModelPoint {
  Problem problem;
  double us = 0;
  double weight = 1.0;
};

/// One dispatch table: the database devices sharing (name, compute capability, SM count).
struct ExportDevice {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::vector<DeviceRecord> records;   // merged database devices, sorted by uuid
  std::vector<ExportEntry> entries;    // sorted by problem
  std::vector<ExportKernelModel> models;  // one per kernel measured on this device, by kernel index
  /// The memory bandwidth split K's sum is predicted with (bytes per microsecond): a streaming
  /// kernel's share of the first device record's theoretical DRAM bandwidth; 0 (K is never split)
  /// when the record has no memory clock or bus width.
  double bytes_per_us = 0;
  /// Per kernel measured on this device (index into ExportModel::kernels), the compile cache key of the
  /// build it was measured as: the machine code a header of machine code embeds for the device.
  std::map<int, std::string> kernel_binaries;
  /// What each model was fitted on, parallel to models (export/cost_model.hpp, fit_kernel_model): the
  /// held-out check (export/model_check.hpp) refits them without one problem. Not in the header.
  std::vector<std::vector<ModelPoint>> model_points;
};

/// A source bundle flattened into one text.
struct ExportSource {
  std::string hash;
  std::string template_name;
  std::string main_name;
  std::vector<std::string> header_names;
  std::string text;                    // flattened: includes inlined, #pragma once dropped
  bool from_database = true;           // a winner was compiled from it
  bool from_templates_folder = false;  // the generic default's bundle, read from the templates folder
};

/// The share of the theoretical DRAM bandwidth a streaming kernel reaches (H100: about 80%).
constexpr double k_streaming_bandwidth_share = 0.8;

/// Index of the f32 NN generic default kernel in ExportModel::kernels.
constexpr int k_generic_kernel_index = 0;
/// The element types of the header's entry points (sgemm, dgemm and igemm), in DType order: the rows
/// of its generic default kernels (ExportModel::generic_kernels, the header's k_generic_kernels).
constexpr int k_header_dtypes = 3;
/// Whether the header computes a type: one of its entry points' element types, or an opt-in precision
/// class whose calls fall back to such a type's dispatch (the dispatch rules' opt_in_storage: tf32x3,
/// through sgemm_tf32x3 and, with CMTUNE_SGEMM_TF32X3, sgemm). A class has no generic default.
bool header_computes(DType dtype);
/// The header's routine of a type: "sgemm", "dgemm", "igemm", or for an opt-in class its storage
/// type's with the class's name, "sgemm_tf32x3" (the five entry points add "_strided_batched" and so
/// on); and the function that says which kernel it runs: "kernel_name", or "kernel_name_tf32x3".
std::string header_routine(DType dtype);
std::string header_kernel_name_function(DType dtype);

/// Everything the header holds, sorted so that rendering is deterministic.
struct ExportModel {
  std::string tool_version;            // CMTUNE_VERSION
  std::string content_hash;            // Store::content_hash()
  std::vector<ExportSource> sources;   // sorted by hash
  /// The generic defaults first (one per element type and layout, type-major), then the rest sorted.
  std::vector<ExportKernel> kernels;
  /// Per element type (DType order: f32, f64, i32) and layout (nn, nt, tn, tt), the index of its
  /// generic default kernel, or -1 when the generic template has no build of that type and layout
  /// (calls of it that nothing tuned serves are refused).
  int generic_kernels[k_header_dtypes][4] = {{k_generic_kernel_index, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}};
  std::vector<ExportDevice> devices;   // sorted by (name, cc, SM count)
};


struct ExportOptions {
  std::string name_space = "cmtune";   // C++ namespace of the header, e.g. "cmtune" or "app::gemm"
  std::vector<int64_t> device_ids;     // database device ids to export; empty: every device with winners
  /// Element types whose tuned winners go into the tables (and whose trials fit the cost models);
  /// empty: every type. The entry points of all types exist anyway, running the generic defaults.
  std::vector<DType> dtypes;
};

/// Parameters of the generic default kernel of a layout and element type: the point the template's
/// [generic_default] declares (valid on any arch), or the first valid point of the descriptor's grid
/// if a constraint rejects it in that layout and type; with TRANS_A and TRANS_B when the descriptor
/// has layouts, and DTYPE when it has types beyond f32. nullopt when it lacks the layout or the type;
/// UsageError when it declares no [generic_default].
std::optional<ParamValues> generic_default_params(const TemplateDesc& generic, std::string_view layout = "nn",
                                                  DType dtype = DType::f32);

/// The database devices of one device table: `device_id`, then every other device of its model
/// (model_identity: name, compute capability, SM count) that has winners, as export merges them (the
/// same model in other hosts, or a run's shards on other GPUs). `query`, `bench` and `report` build
/// the one table they decide from with these as ExportOptions::device_ids.
std::vector<int64_t> table_device_ids(Store& store, int64_t device_id);

/// Reads the winners, their sources and the devices. UsageError when nothing is tuned (of the types
/// options.dtypes names), a device id has no winners, a winner's binary or source is missing from the
/// database, or a winner's kernel computes another element type than its problem.
ExportModel build_export_model(Store& store, const ExportOptions& options, const TemplateDesc& default_tmpl);

/// The namespace, under the header's detail, of a source bundle: src_ and a prefix of its hash.
constexpr size_t k_namespace_hex_digits = 12;
std::string source_namespace(const std::string& hash);

}  // namespace cmt
