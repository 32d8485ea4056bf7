// Files compiled into the binary at build time (tuner/embed_files.cmake): the database migrations,
// the exported header's run-time code and the macros its includes define.
#pragma once

#include <stdexcept>
#include <string>
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
/// The text of tuner/export/runtime/NAME; std::logic_error when this binary did not embed it.
inline std::string_view embedded_header_runtime_file(std::string_view name) {
  for (const EmbeddedFile& f : embedded_header_runtime())
    if (f.name == name) return f.text;
  throw std::logic_error("export/runtime/" + std::string(name) + " is not embedded in this binary");
}
/// Two files, one name per line, each empty when the build had no nvcc: header_macros.txt, the
/// macros the exported header's includes define as nvcc sees them (tuner/header_macros.cmake), and
/// header_globals.txt, the names they declare at global scope (tuner/header_globals.py).
const std::vector<EmbeddedFile>& embedded_header_macros();

}  // namespace cmt
