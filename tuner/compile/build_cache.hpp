// Builds kept in a folder between runs, for builds that belong to no database: `export`'s runtime
// library (the generic defaults and the header's own kernels), built for each exported architecture.
// A Compiler in front of another: a hit is read back, a miss compiled and written (atomically, so
// concurrent runs share the folder). Only successful builds are kept.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.hpp"

namespace cmt {

/// The folder cm-tune keeps such builds in: $CMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/cm-tune, else
/// ~/.cache/cm-tune; nullopt when none is set (the builds are then not kept).
std::optional<std::filesystem::path> build_cache_folder();

/// The key of a build: a hash of everything it depends on (the compiler's version, the source bundle,
/// the names, the arch and the options).
std::string build_key(const CompileRequest& request, const std::string& compiler_version);

class CachedCompiler final : public Compiler {
 public:
  /// `folder` nullopt: nothing is kept, every request goes to `inner`.
  CachedCompiler(const Compiler& inner, std::optional<std::filesystem::path> folder);
  std::string version() const override { return m_inner.version(); }
  std::vector<std::string> options(const std::string& arch) const override { return m_inner.options(arch); }
  /// A kept build of the same request (source bundle, names, arch, options, compiler version), else
  /// the inner compiler's, kept when it succeeded. A folder that cannot be written costs only the
  /// keeping.
  CompileOutput compile(const CompileRequest& request) const override;

 private:
  const Compiler& m_inner;
  std::optional<std::filesystem::path> m_folder;
};

}  // namespace cmt
