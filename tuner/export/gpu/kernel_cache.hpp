// The export stage's CUDA part: the exported kernels loaded on the GPU, each once, as `bench` runs
// them (the dispatched kernel, and with --regret every kernel a call can run).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/kernel_module.hpp"
#include "export/export_model.hpp"
#include "measure/gpu/gpu_measurer.hpp"
#include "space/template_desc.hpp"
#include "store/records.hpp"
#include "store/store.hpp"

namespace cmt {

/// The exported kernels bench runs, each loaded once for every call that runs it: its binary from the
/// database, or, for a generic default the database never measured, built with NVRTC. It keeps the
/// binaries alive, so it must not outlive the measurer.
class KernelCache {
 public:
  /// `default_tmpl`: the template that declares the generic default; `arch`: the GPU's, e.g. sm_90.
  KernelCache(const ExportModel& model, Store& store, GpuMeasurer& measurer, const TemplateDesc& default_tmpl,
              std::string arch);

  /// Kernel `index`'s launcher; throws UsageError saying why when it cannot run here (loaded once:
  /// a kernel that failed fails again with the same reason).
  const GemmLauncher& launcher(int index);
  /// Whether kernel `index` was tried and cannot run here.
  bool unusable(int index) const { return m_unusable.count(index) != 0; }
  /// template[params] of kernel `index`.
  std::string label(int index) const;

 private:
  GemmLauncher load(int index);

  const ExportModel& m_model;
  Store& m_store;
  GpuMeasurer& m_measurer;
  const TemplateDesc& m_default_tmpl;
  std::string m_arch;
  std::vector<std::unique_ptr<BinaryRecord>> m_binaries;
  std::map<int, GemmLauncher> m_launchers;
  std::map<int, std::string> m_unusable;   // why each kernel that cannot run here cannot
};

}  // namespace cmt
