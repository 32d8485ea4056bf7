// `cm-tune export`: renders the database's winners as one self-contained CUDA header with the
// kernel sources, dispatch tables and a host entry point NS::sgemm (see docs/EXPORT.md).
#pragma once

#include <cstdint>
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
};

/// One tuned problem of a device table; kernels are indices into ExportModel::kernels.
struct ExportEntry {
  Problem problem;
  int primary = 0;
  int portable = -1;             // -1: no kernel without requirements was tuned (generic default)
};

/// One dispatch table: the database devices sharing (name, compute capability, SM count).
struct ExportDevice {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::vector<DeviceRecord> records;   // merged database devices, sorted by uuid
  std::vector<ExportEntry> entries;    // sorted by problem
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

/// Everything the header holds, sorted so that rendering is deterministic.
struct ExportModel {
  std::string tool_version;            // CMTUNE_VERSION
  std::string content_hash;            // Store::content_hash()
  std::vector<ExportSource> sources;   // sorted by hash
  std::vector<ExportKernel> kernels;   // [k_generic_kernel_index] is the generic default; the rest sorted
  std::vector<ExportDevice> devices;   // sorted by (name, cc, SM count)
};

/// Index of the generic default kernel in ExportModel::kernels (and k_generic_kernel in the header).
constexpr int k_generic_kernel_index = 0;

struct ExportOptions {
  std::string name_space = "cmtune";   // C++ namespace of the header, e.g. "cmtune" or "app::gemm"
  std::vector<int64_t> device_ids;     // database device ids to export; empty: every device with winners
};

/// Whether text is a C++ namespace name: identifiers joined by "::".
bool valid_namespace_name(const std::string& text);

/// Parameters of the generic default kernel: a fixed blocktile2d config valid on any arch, or the
/// first valid point of the descriptor's grid if an edited descriptor rejects it.
ParamValues generic_default_params(const TemplateDesc& blocktile2d);

/// Reads the winners, their sources and the devices. UsageError when nothing is tuned, a device id has
/// no winners, or a winner's binary or source is missing from the database.
ExportModel build_export_model(Store& store, const ExportOptions& options, const TemplateDesc& blocktile2d);

/// The dispatch-table section alone (kernel table, device tables, kernel functions), as in the header.
std::string render_dispatch_tables(const ExportModel& model);

/// The whole header.
std::string render_header(const ExportModel& model, const std::string& name_space);

/// build_export_model + render_header.
std::string export_header(Store& store, const ExportOptions& options, const TemplateDesc& blocktile2d);

}  // namespace cmt
