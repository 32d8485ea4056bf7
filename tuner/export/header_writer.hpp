// `cm-tune export`: renders the database's winners as one self-contained CUDA header with the
// kernel sources, dispatch tables and a host entry point NS::sgemm (see docs/EXPORT.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "space/template_desc.hpp"
#include "export/code_images.hpp"
#include "export/export_model.hpp"
#include "store/store.hpp"

namespace cmt {

/// Why text cannot name the header's namespace, or nullopt when it can: it must be identifiers joined
/// by "::", none a C++20 keyword or alternative token (class, and, not, ...) and none reserved to the
/// compiler (containing __, _ and an uppercase letter first, or _ first at global scope). The reason
/// names the offending part, e.g. "'class' is a C++ keyword".
std::optional<std::string> namespace_name_problem(const std::string& text);

/// Whether text is a usable C++ namespace name (namespace_name_problem finds nothing).
bool valid_namespace_name(const std::string& text);

/// UsageError "--namespace 'TEXT': 'PART' REASON, ..." unless text is a usable namespace name.
void check_namespace_name(const std::string& text);

/// The provenance lines that say a header's form (is_machine_code_header reads the first).
constexpr const char* k_form_machine_code =
    "// Form:                  machine code (the cubins tune timed, and PTX for other GPUs)\n";
constexpr const char* k_form_sources = "// Form:                  kernel sources (compiled by the program's nvcc)\n";

/// The dispatch-table section alone (kernel table, device tables), as in the header.
std::string render_dispatch_tables(const ExportModel& model);

/// The whole header: of machine code where `code` is given (collect_header_code), which any C++
/// compiler builds; else of kernel sources, which the program's nvcc compiles.
std::string render_header(const ExportModel& model, const std::string& name_space, const HeaderCode* code = nullptr);

/// build_export_model + render_header, of kernel sources.
std::string export_header(Store& store, const ExportOptions& options, const TemplateDesc& default_tmpl);

}  // namespace cmt
