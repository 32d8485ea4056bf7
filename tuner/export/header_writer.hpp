// `cm-tune export`: renders the database's winners as one self-contained CUDA header with the
// kernel sources, dispatch tables and a host entry point NS::sgemm (see docs/EXPORT.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "space/template_desc.hpp"
#include "export/export_model.hpp"
#include "store/store.hpp"

namespace cmt {

/// Whether text is a C++ namespace name: identifiers joined by "::".
bool valid_namespace_name(const std::string& text);

/// The dispatch-table section alone (kernel table, device tables, kernel functions), as in the header.
std::string render_dispatch_tables(const ExportModel& model);

/// The whole header.
std::string render_header(const ExportModel& model, const std::string& name_space);

/// build_export_model + render_header.
std::string export_header(Store& store, const ExportOptions& options, const TemplateDesc& blocktile2d);

}  // namespace cmt
