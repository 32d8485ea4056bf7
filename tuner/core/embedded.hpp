// Files compiled into the binary at build time (tuner/embed_files.cmake): the database migrations,
// the exported header's run-time code and the macros its includes define.
#pragma once

#include <string_view>
#include <vector>

namespace cmt {

struct EmbeddedFile {
  std::string_view name;  // relative to the folder it was embedded from, e.g. "0001_initial.sql"
  std::string_view text;
};

/// db/migrations/*.sql, sorted by name.
const std::vector<EmbeddedFile>& embedded_migrations();
/// tuner/export/runtime/*, sorted by name.
const std::vector<EmbeddedFile>& embedded_header_runtime();
/// One file, header_macros.txt: the sorted names of the macros that the exported header's includes
/// define as nvcc sees them, one per line (tuner/header_macros.cmake); empty when the build had no nvcc.
const std::vector<EmbeddedFile>& embedded_header_macros();

}  // namespace cmt
