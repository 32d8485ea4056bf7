#include "export/code_images.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "compile/build_cache.hpp"
#include "core/embedded.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"

namespace cmt {

namespace {

/// The namespace the runtime library puts the header's own kernels in, apart from the template's names.
constexpr const char* k_runtime_namespace = "cmt_header_runtime";

CodeImageBytes image_of(std::string arch, std::vector<char> bytes, std::string key, std::string what) {
  CodeImageBytes image;
  image.hash = hash_hex(std::string_view(bytes.data(), bytes.size()));
  image.arch = std::move(arch);
  image.bytes = std::move(bytes);
  image.binary_key = std::move(key);
  image.what = std::move(what);
  return image;
}

/// The plain architecture of a device table: what the runtime library is built for on it.
std::string table_arch(const ExportDevice& dev) { return fmt::format("sm_{}{}", dev.cc_major, dev.cc_minor); }

}  // namespace

const std::vector<std::string>& header_helper_names() {
  static const std::vector<std::string> k_names = [] {
    std::vector<std::string> out;
    for (const char* kernel : {"scale_kernel", "split_sum_kernel"})
      for (const char* type : {"float", "double", "int"})
        out.push_back(fmt::format("{}::{}<{}>", k_runtime_namespace, kernel, type));
    return out;
  }();
  return k_names;
}

SourceBundle runtime_library_source(const TemplateDesc& default_tmpl) {
  const SourceBundle generic = default_tmpl.load_source();
  SourceBundle out;
  out.main_name = "cmt_header_runtime.cu";
  out.main_text = fmt::format("#include \"{}\"\nnamespace {} {{\n#include \"header_kernels.cuh\"\n}}\n",
                              generic.main_name, k_runtime_namespace);
  out.headers = generic.headers;
  out.headers.emplace_back(generic.main_name, generic.main_text);
  out.headers.emplace_back("header_kernels.cuh", std::string(embedded_header_runtime_file("header_kernels.cuh")));
  std::sort(out.headers.begin(), out.headers.end());
  return out;
}

HeaderCode collect_header_code(Store& store, const ExportModel& model, const TemplateDesc& default_tmpl,
                               const Compiler& compiler) {
  HeaderCode code;
  const size_t kernels = model.kernels.size();
  code.symbols.resize(kernels + header_helper_names().size());
  code.function_images.resize(code.symbols.size());

  // The runtime library: every generic default and the helpers in one build per architecture.
  std::vector<int> generics;
  for (const auto& row : model.generic_kernels)
    for (const int k : row)
      if (k >= 0 && std::find(generics.begin(), generics.end(), k) == generics.end()) generics.push_back(k);
  std::sort(generics.begin(), generics.end());
  const SourceBundle runtime = runtime_library_source(default_tmpl);
  CompileRequest request;
  request.source = &runtime;
  request.name_expression = header_helper_names().front();
  request.more_names.assign(header_helper_names().begin() + 1, header_helper_names().end());
  for (const int k : generics) request.more_names.push_back(model.kernels[static_cast<size_t>(k)].name_expression);
  std::set<std::string> archs;
  for (const ExportDevice& dev : model.devices) archs.insert(table_arch(dev));
  std::vector<std::string> targets(archs.begin(), archs.end());
  targets.emplace_back(k_runtime_ptx_arch);
  std::vector<CompileRequest> requests;
  requests.reserve(targets.size());   // the builds hold references to them
  std::vector<std::future<CompileOutput>> builds;
  for (const std::string& arch : targets) {
    requests.push_back(request);
    requests.back().arch = arch;
    requests.back().options = compiler.options(arch);
    builds.push_back(std::async(std::launch::async, [&compiler, &r = requests.back()] { return compiler.compile(r); }));
  }
  std::vector<int> runtime_images;
  std::vector<std::string> lowered;
  for (size_t i = 0; i < targets.size(); ++i) {
    CompileOutput out = builds[i].get();
    if (!out.ok)
      throw InfraError("NVRTC", "build the header's runtime library for " + targets[i], out.log, __FILE__, __LINE__);
    lowered.assign({out.lowered_name});
    lowered.insert(lowered.end(), out.more_lowered.begin(), out.more_lowered.end());
    runtime_images.push_back(static_cast<int>(code.images.size()));
    code.images.push_back(
        image_of(targets[i], std::move(out.cubin), build_key(requests[i], compiler.version()), "runtime library"));
  }
  for (size_t h = 0; h < header_helper_names().size(); ++h) {
    code.symbols[kernels + h] = lowered[h];
    code.function_images[kernels + h] = runtime_images;
  }

  // Each kernel's builds as the device tables measured them; those whose cubin the database dropped
  // are built after the walk, on every core.
  struct Rebuild {
    int image;
    std::shared_ptr<SourceBundle> bundle;
    CompileRequest request;
  };
  std::vector<Rebuild> rebuilds;
  std::map<std::string, int> image_of_key;
  for (size_t k = 0; k < kernels; ++k) {
    const ExportKernel& kernel = model.kernels[k];
    const auto generic = std::find(generics.begin(), generics.end(), static_cast<int>(k));
    std::set<std::string> keys;
    for (const ExportDevice& dev : model.devices)
      if (const auto it = dev.kernel_binaries.find(static_cast<int>(k)); it != dev.kernel_binaries.end())
        keys.insert(it->second);
    if (generic != generics.end())
      code.symbols[k] = lowered[header_helper_names().size() + static_cast<size_t>(generic - generics.begin())];
    for (const std::string& key : keys) {
      auto found = image_of_key.find(key);
      if (found == image_of_key.end()) {
        auto binary = store.find_binary(key);
        if (!binary || !binary->ok)
          throw UsageError(fmt::format("the build of {}[{}] ({}) is missing from the database; re-run `cm-tune tune`, "
                                       "or `cm-tune export --form source` for a header of sources",
                                       kernel.template_name, kernel.params, key));
        std::string what = fmt::format("kernel {}", k);
        if (binary->cubin.empty()) {
          // A copy without its cubins (`db vacuum`, or a saved copy): built again from the source the
          // database keeps, for the arch it was built for, by the same NVRTC, which gives the same bytes.
          const auto source = store.find_source(binary->source_hash);
          if (!source || binary->nvrtc_version != compiler.version())
            throw UsageError(fmt::format(
                "the database holds no machine code of {}[{}] (its cubins were dropped) and {}; export from the "
                "database that has them, or `cm-tune export --form source` for a header of sources",
                kernel.template_name, kernel.params,
                !source ? "not its source either"
                        : fmt::format("NVRTC {} built it, not this NVRTC {}", binary->nvrtc_version, compiler.version())));
          auto bundle = std::make_shared<SourceBundle>(SourceBundle{source->main_name, source->main_text, source->headers});
          rebuilds.push_back({static_cast<int>(code.images.size()), bundle,
                              CompileRequest{kernel.name_expression, bundle.get(), binary->arch,
                                             compiler.options(binary->arch), {}}});
          what += " (built again: the database dropped its cubin)";
        }
        if (!code.symbols[k].empty() && code.symbols[k] != binary->lowered_name) continue;   // another build's names
        code.symbols[k] = binary->lowered_name;
        found = image_of_key.emplace(key, static_cast<int>(code.images.size())).first;
        code.images.push_back(image_of(binary->arch, binary->cubin, key, what));
      }
      code.function_images[k].push_back(found->second);
    }
    if (generic != generics.end())
      code.function_images[k].insert(code.function_images[k].end(), runtime_images.begin(), runtime_images.end());
    if (code.function_images[k].empty())
      throw UsageError(fmt::format("no device table measured {}[{}], so the database holds no build of it; re-run "
                                   "`cm-tune tune`, or `cm-tune export --form source` for a header of sources",
                                   kernel.template_name, kernel.params));
  }
  const size_t lanes = std::max(1u, std::thread::hardware_concurrency());
  for (size_t first = 0; first < rebuilds.size(); first += lanes) {
    std::vector<std::future<CompileOutput>> outs;
    for (size_t i = first; i < rebuilds.size() && i < first + lanes; ++i)
      outs.push_back(std::async(std::launch::async, [&compiler, &r = rebuilds[i]] { return compiler.compile(r.request); }));
    for (size_t i = first; i < first + outs.size(); ++i) {
      CompileOutput out = outs[i - first].get();
      if (!out.ok)
        throw InfraError("NVRTC", "build again " + rebuilds[i].request.name_expression + ", whose cubin the database dropped",
                         out.log, __FILE__, __LINE__);
      CodeImageBytes& image = code.images[static_cast<size_t>(rebuilds[i].image)];
      image = image_of(image.arch, std::move(out.cubin), image.binary_key, image.what);
    }
  }
  return code;
}

}  // namespace cmt
