// Reading whole files, with the user-facing error cm-tune gives when one cannot be read.
#pragma once

#include <filesystem>
#include <string>

namespace cmt {

/// The file's bytes; UsageError "cannot read WHAT 'FILE'" when it cannot be read.
std::string read_text_file(const std::filesystem::path& file, const std::string& what);

}  // namespace cmt
