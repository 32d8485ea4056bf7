#include "compile/build_cache.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/source_bundle.hpp"

namespace cmt {

namespace {

constexpr char k_magic[] = "cm-tune build 1";

std::optional<std::filesystem::path> env_path(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::filesystem::path(value);
}

/// A kept build: the magic line, the lowered names (one per line, the request's first), a blank line,
/// then the binary's bytes.
std::string serialize(const CompileOutput& out) {
  std::string text = std::string(k_magic) + "\n" + out.lowered_name + "\n";
  for (const auto& name : out.more_lowered) text += name + "\n";
  text += "\n";
  text.append(out.cubin.begin(), out.cubin.end());
  return text;
}

std::optional<CompileOutput> deserialize(const std::string& text, size_t names) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != k_magic) return std::nullopt;
  CompileOutput out;
  if (!std::getline(in, out.lowered_name) || out.lowered_name.empty()) return std::nullopt;
  for (size_t i = 0; i < names; ++i) {
    if (!std::getline(in, line) || line.empty()) return std::nullopt;
    out.more_lowered.push_back(line);
  }
  if (!std::getline(in, line) || !line.empty()) return std::nullopt;
  const auto start = static_cast<size_t>(in.tellg());
  if (start >= text.size()) return std::nullopt;
  out.cubin.assign(text.begin() + static_cast<std::ptrdiff_t>(start), text.end());
  out.ok = true;
  out.log = "(kept build)";
  return out;
}

}  // namespace

std::optional<std::filesystem::path> build_cache_folder() {
  if (auto dir = env_path("CMTUNE_CACHE_DIR")) return dir;
  if (auto dir = env_path("XDG_CACHE_HOME")) return *dir / "cm-tune";
  if (auto dir = env_path("HOME")) return *dir / ".cache" / "cm-tune";
  return std::nullopt;
}

CachedCompiler::CachedCompiler(const Compiler& inner, std::optional<std::filesystem::path> folder)
    : m_inner(inner), m_folder(std::move(folder)) {}

std::string build_key(const CompileRequest& request, const std::string& compiler_version) {
  Hasher h;
  h.field(compiler_version).field(source_bundle_hash(*request.source)).field(request.arch);
  h.field(request.name_expression).field(static_cast<int64_t>(request.more_names.size()));
  for (const auto& name : request.more_names) h.field(name);
  h.field(static_cast<int64_t>(request.options.size()));
  for (const auto& option : request.options) h.field(option);
  return h.hex();
}

CompileOutput CachedCompiler::compile(const CompileRequest& request) const {
  if (!m_folder) return m_inner.compile(request);
  const std::filesystem::path file = *m_folder / (build_key(request, m_inner.version()) + ".build");
  std::ifstream in(file, std::ios::binary);
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    if (auto kept = deserialize(text.str(), request.more_names.size())) return std::move(*kept);
  }
  CompileOutput out = m_inner.compile(request);
  if (!out.ok || out.more_lowered.size() != request.more_names.size()) return out;
  std::error_code ec;
  std::filesystem::create_directories(*m_folder, ec);
  try {
    write_file_atomically(file, serialize(out));
  } catch (const UsageError&) {   // a folder that cannot be written: the build is just not kept
  }
  return out;
}

}  // namespace cmt
