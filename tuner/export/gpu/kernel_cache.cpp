#include "export/gpu/kernel_cache.hpp"

#include <fmt/format.h>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/error.hpp"
#include "core/source_bundle.hpp"
#include "core/types.hpp"

namespace cmt {

namespace {

/// Kernel `k` built with NVRTC from `bundle` for the device, with the tuner's options.
BinaryRecord build(const ExportKernel& k, const SourceBundle& bundle, const std::string& arch, const std::string& what) {
  const NvrtcCompiler compiler;
  const CompileRequest request{k.name_expression, &bundle, arch, compiler.options(arch), {}};
  CompileOutput out = compiler.compile(request);
  if (!out.ok) throw InfraError("NVRTC", "build " + what + " " + k.name_expression, out.log, __FILE__, __LINE__);
  BinaryRecord b;
  // The compile cache's key of this build: the measurer loads each kernel once per key, so two
  // generic defaults (every layout has one) must not share the empty key of a build the compile
  // cache never saw, or the second runs the first's machine code. A rebuilt database binary takes
  // the database's key instead.
  b.key = compile_cache_key(k.template_name, k.name_expression, k.params, source_bundle_hash(bundle), arch,
                            compiler.version(), request.options);
  b.template_name = k.template_name;
  b.params = k.params;
  b.arch = arch;
  b.ok = true;
  b.cubin = std::move(out.cubin);
  b.lowered_name = std::move(out.lowered_name);
  b.registers = out.registers;
  b.batched = k.batched;
  b.takes_batch_count = k.takes_batch_count;
  return b;
}

/// The generic default kernel `k` built for the device, as the header would run it: a database that
/// never measured it (tune measures the tuned families) has no build of it.
BinaryRecord build_generic(const ExportKernel& k, const TemplateDesc& default_tmpl, const std::string& arch) {
  return build(k, default_tmpl.load_source(), arch, "the generic default");
}

}  // namespace

KernelCache::KernelCache(const ExportModel& model, Store& store, GpuMeasurer& measurer, const TemplateDesc& default_tmpl,
                         std::string arch)
    : m_model(model), m_store(store), m_measurer(measurer), m_default_tmpl(default_tmpl), m_arch(std::move(arch)) {}

const GemmLauncher& KernelCache::launcher(int index) {
  if (const auto it = m_launchers.find(index); it != m_launchers.end()) return it->second;
  if (const auto it = m_unusable.find(index); it != m_unusable.end()) throw UsageError(it->second);
  try {
    return m_launchers.emplace(index, load(index)).first->second;
  } catch (const UsageError& e) {
    m_unusable.emplace(index, e.what());
    throw;
  }
}

std::string KernelCache::label(int index) const {
  const ExportKernel& k = m_model.kernels.at(static_cast<size_t>(index));
  return kernel_label(k.template_name, k.params);
}

GemmLauncher KernelCache::load(int index) {
  const ExportKernel& k = m_model.kernels.at(static_cast<size_t>(index));
  if (k.binary_key.empty()) {  // a generic default this database never measured
    m_binaries.push_back(std::make_unique<BinaryRecord>(build_generic(k, m_default_tmpl, m_arch)));
  } else {
    auto binary = m_store.find_binary(k.binary_key);
    if (!binary || !binary->ok)
      throw UsageError(fmt::format("the binary of {} is missing from the database", label(index)));
    if (binary->cubin.empty()) {
      // A copy of the database without its cubins (scripts/gpu/benchmarks.sh saves such copies):
      // the kernel is built again from the source the database keeps, as the tuner built it.
      const auto source = m_store.find_source(k.source_hash);
      if (!source)
        throw UsageError(fmt::format("the database holds neither the machine code nor the source of {}", label(index)));
      // For the architecture it was built for: an arch-specific family's (sm_90a) is not the
      // device's plain one (sm_90), for which its wgmma code compiles to nothing that runs.
      const SourceBundle bundle{source->main_name, source->main_text, source->headers};
      BinaryRecord rebuilt = build(k, bundle, binary->arch.empty() ? m_arch : binary->arch,
                                   "the kernel whose cubin the database dropped");
      rebuilt.key = binary->key;
      binary = std::move(rebuilt);
    }
    m_binaries.push_back(std::make_unique<BinaryRecord>(std::move(*binary)));
  }
  std::string why_not;
  auto launch = m_measurer.kernel_launcher({m_binaries.back().get(), k.shape, k.requirements, label(index)}, &why_not);
  if (!launch) throw UsageError(fmt::format("{} cannot run here: {}", label(index), why_not));
  return std::move(*launch);
}

}  // namespace cmt
