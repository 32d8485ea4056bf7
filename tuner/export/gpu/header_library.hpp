// The export stage's CUDA part: an exported header built and loaded on the GPU, so `bench` times its
// dispatch as an application calls it.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "core/device_info.hpp"
#include "core/types.hpp"
#include "cuda/kernel_module.hpp"
#include "export/dispatch.hpp"

namespace cmt {

/// The -arch a program builds the exported header with for `device`: its arch-specific variant
/// (sm_90a) on compute capability 9.0, where the header's TMA kernels run, else its arch.
std::string header_build_arch(const DeviceInfo& device);

/// Builds the exported header into a shared library and loads its entry points for the
/// element types asked for (a header of an older cm-tune has sgemm only: asking for f32 alone works
/// with it). A header of machine code builds with the C++ compiler ($CXX, else g++), one of sources with
/// nvcc for `arch`. UsageError for a header that is missing, a folder, does not compile or lacks an entry.
class HeaderLibrary {
 public:
  /// `name_space`: the header's namespace; `arch`: the GPU's, e.g. sm_90.
  HeaderLibrary(const std::string& header, const std::string& name_space, const std::string& arch,
                const std::set<DType>& dtypes);
  /// Removes the build folder; the library stays mapped until the process exits.
  ~HeaderLibrary();
  HeaderLibrary(const HeaderLibrary&) = delete;
  HeaderLibrary& operator=(const HeaderLibrary&) = delete;

  /// The header's {s,d,i}gemm_strided_batched for the arguments' type (sgemm_tf32x3_strided_batched for
  /// tf32x3), as a launcher on `stream`.
  GemmLauncher launcher(DType dtype, cudaStream_t stream) const;
  /// Whether the header holds machine code (the cubins the database timed), not kernel sources.
  bool machine_code() const { return m_machine_code; }
  /// The instantiation the header's dispatch runs for a call on aligned buffers; "?" when it runs none.
  std::string kernel_name(const CallShape& call) const;

 private:
  /// The harness's kernel_name entry of one type.
  using KernelNameEntry = const char* (*)(int, int, int, int, int, int, long long, int, long long, int, long long, int);
  std::filesystem::path m_dir;
  bool m_machine_code = false;
  void* m_handle = nullptr;
  std::map<DType, void*> m_gemm;
  std::map<DType, KernelNameEntry> m_kernel_name;
};

}  // namespace cmt
