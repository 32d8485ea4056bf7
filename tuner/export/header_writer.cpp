#include "export/header_writer.hpp"

#include <algorithm>
#include <climits>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "core/embedded.hpp"
#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "space/space.hpp"
#include "tune/ranking.hpp"

namespace cmt {

namespace {

constexpr size_t k_namespace_hex_digits = 12;   // src_<first 12 hex digits of the bundle hash>

std::string source_namespace(const std::string& hash) { return "src_" + hash.substr(0, k_namespace_hex_digits); }

/// Text safe inside a // comment: control characters (a newline would end the comment) become '?'.
std::string comment_text(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

/// A C string literal; octal escapes keep the output ASCII and unambiguous.
std::string c_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f || ch == '?') {  // '?' too: no trigraphs
      out += fmt::format("\\{:03o}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

int to_int(int64_t value, const std::string& what) {
  if (value < INT_MIN || value > INT_MAX) throw UsageError(fmt::format("{} = {} does not fit an int", what, value));
  return static_cast<int>(value);
}

/// "namespace a { namespace b {" and the matching closing braces for "a::b".
std::pair<std::string, std::string> namespace_braces(const std::string& name_space) {
  std::string open, close;
  size_t start = 0;
  while (true) {
    const size_t end = name_space.find("::", start);
    const std::string part = name_space.substr(start, end == std::string::npos ? std::string::npos : end - start);
    open += fmt::format("namespace {} {{\n", part);
    close = fmt::format("}}  // namespace {}\n", part) + close;
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return {open, close};
}

/// Macros a flattened source #defines, in order of first definition; undefined after the bundle so
/// that two versions of a helper never clash and nothing leaks into the includer's code.
std::vector<std::string> defined_macros(const std::string& text) {
  static const std::regex k_define(R"re(^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*).*$)re");
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, k_define) && std::find(out.begin(), out.end(), m[1].str()) == out.end())
      out.push_back(m[1].str());
  }
  return out;
}

/// Name expressions are pasted into C++ code: accept only what a template instantiation needs.
void check_name_expression(const std::string& expression) {
  static const std::regex k_instantiation(R"re(^[A-Za-z_][A-Za-z0-9_]*(<[-A-Za-z0-9_, ]*>)?$)re");
  if (!std::regex_match(expression, k_instantiation))
    throw UsageError(fmt::format("winner name expression '{}' is not a kernel template instantiation", expression));
}

/// A point the generic default may use: it meets every constraint and needs nothing of its inputs.
bool generic_candidate(const TemplateDesc& tmpl, const ParamValues& values) {
  try {
    return !tmpl.failed_constraint(values, portable_target()) && tmpl.requirements(values, portable_target()).none();
  } catch (const UsageError&) {
    return false;
  }
}

using KernelKey = std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

KernelKey kernel_key(const ExportKernel& k) {
  return {k.source_hash,       k.name_expression, k.shape.threads, k.shape.tile_m, k.shape.tile_n, k.shape.dynamic_smem,
          k.shape.grid_z, k.requirements.align_bytes, k.requirements.ld_multiple};
}

/// Reads winners into export kernels, caching binaries and sources by key.
class KernelCollector {
 public:
  explicit KernelCollector(Store& store) : m_store(store) {}

  /// The kernel of a winner; UsageError when its binary or source is gone from the database.
  ExportKernel kernel_of(const WinnerRecord& w, const std::string& device_name) {
    check_name_expression(w.name_expression);
    auto it = m_binary_source.find(w.binary_key);
    if (it == m_binary_source.end()) {
      const auto binary = m_store.find_binary(w.binary_key);
      if (!binary)
        throw UsageError(fmt::format(
            "winner {}[{}] for {} on {} names binary {}, which is not in the database's compile cache; re-run "
            "`cm-tune tune` on that problem to rebuild it",
            w.template_name, w.params, w.problem.to_string(), device_name, w.binary_key));
      it = m_binary_source.emplace(w.binary_key, binary->source_hash).first;
    }
    add_source(it->second, w, device_name);
    ExportKernel k;
    k.source_hash = it->second;
    k.template_name = w.template_name;
    k.params = w.params;
    k.name_expression = w.name_expression;
    k.shape = w.shape;
    k.requirements = w.requirements;
    return k;
  }

  std::map<std::string, ExportSource>& sources() { return m_sources; }

 private:
  void add_source(const std::string& hash, const WinnerRecord& w, const std::string& device_name) {
    if (m_sources.count(hash)) return;
    const auto source = m_store.find_source(hash);
    if (!source)
      throw UsageError(fmt::format(
          "winner {}[{}] for {} on {} was compiled from source bundle {}, which is not in the database; re-run "
          "`cm-tune tune` on that problem",
          w.template_name, w.params, w.problem.to_string(), device_name, hash));
    ExportSource s;
    s.hash = hash;
    s.template_name = source->template_name;
    s.main_name = source->main_name;
    for (const auto& h : source->headers) s.header_names.push_back(h.first);
    s.text = flatten_source(SourceBundle{source->main_name, source->main_text, source->headers});
    m_sources.emplace(hash, std::move(s));
  }

  Store& m_store;
  std::map<std::string, std::string> m_binary_source;   // binary key -> source hash
  std::map<std::string, ExportSource> m_sources;        // by hash
};

/// The faster of two optional winners; ties go to the one seen first (devices come sorted by uuid).
/// Of two winners of one problem on devices that share a table, keeps the one whose trial ranks first
/// (tune/ranking.hpp); ties keep the one seen first (devices come sorted by uuid).
void keep_better(Store& store, std::optional<WinnerRecord>& current, const WinnerRecord& candidate) {
  if (!current) {
    current = candidate;
    return;
  }
  // Winners reference their trials (a foreign key), so both exist.
  const auto challenger = store.find_trial(candidate.trial_id);
  const auto holder = store.find_trial(current->trial_id);
  if (challenger && holder && ranks_before(*challenger, *holder)) current = candidate;
}

}  // namespace

bool valid_namespace_name(const std::string& text) {
  static const std::regex k_name(R"re(^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$)re");
  return std::regex_match(text, k_name);
}

ParamValues generic_default_params(const TemplateDesc& blocktile2d) {
  // 64x64 tiles of 128 threads, no shared-memory tricks: runs everywhere, and is the first valid
  // blocktile2d candidate of configs/quick.toml.
  const ParamValues preferred = {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}, {"TN", 4}};
  bool same_params = preferred.size() == blocktile2d.params.size();
  for (size_t i = 0; same_params && i < preferred.size(); ++i) same_params = preferred[i].first == blocktile2d.params[i].name;
  if (same_params && generic_candidate(blocktile2d, preferred)) return preferred;

  // The descriptor was edited: take the first valid point of its own grid.
  std::vector<std::vector<int64_t>> lists;
  for (const auto& p : blocktile2d.params) lists.push_back(p.values);
  std::optional<ParamValues> first;
  walk_grid(blocktile2d, lists, [&](const ParamValues& values) {
    if (generic_candidate(blocktile2d, values)) first = values;
    return !first;
  });
  if (first) return *first;
  throw UsageError(fmt::format("template {} ({}) has no valid configuration without input requirements for the generic "
                               "default kernel",
                               blocktile2d.name, blocktile2d.descriptor_path.string()));
}

ExportModel build_export_model(Store& store, const ExportOptions& options, const TemplateDesc& blocktile2d) {
  ExportModel model;
  model.tool_version = CMTUNE_VERSION;
  model.content_hash = store.content_hash();

  // Devices to export, sorted by uuid so that merges and ties are deterministic.
  std::vector<DeviceRecord> devices;
  if (options.device_ids.empty()) {
    for (auto& d : store.devices())
      if (!store.winners(d.id).empty()) devices.push_back(std::move(d));
    if (devices.empty())
      throw UsageError(fmt::format("database {} has no tuned problems (no winners) to export; run `cm-tune tune` first",
                                   store.file().string()));
  } else {
    for (const int64_t id : options.device_ids) {
      auto d = store.find_device(id);
      if (!d) throw UsageError(fmt::format("device id {} is not in the database", id));
      if (store.winners(id).empty())
        throw UsageError(fmt::format("device {} ({}) has no tuned problems (no winners) in {}; run `cm-tune tune` on it first",
                                     d->name, d->uuid, store.file().string()));
      devices.push_back(std::move(*d));
    }
  }
  std::sort(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.uuid < b.uuid; });
  devices.erase(std::unique(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.uuid == b.uuid; }),
                devices.end());

  // Group by what the header can see at run time, merging per problem the faster winners.
  using Identity = std::tuple<std::string, int, int, int>;
  struct Merged {
    std::optional<WinnerRecord> primary, portable;
  };
  std::map<Identity, std::pair<std::vector<DeviceRecord>, std::map<Problem, Merged>>> groups;
  for (const auto& d : devices) {
    auto& group = groups[Identity{d.name, d.cc_major, d.cc_minor, d.sm_count}];
    group.first.push_back(d);
    for (const auto& e : dispatch_entries(store, d.id)) {
      Merged& m = group.second[e.problem];
      keep_better(store, m.primary, e.primary);
      if (e.portable) keep_better(store, m.portable, *e.portable);
    }
  }

  // Kernels: the generic default first, then the winners' kernels sorted and listed once each.
  KernelCollector collector(store);
  ExportKernel generic;
  ExportSource generic_source;
  {
    const ParamValues values = generic_default_params(blocktile2d);
    const SourceBundle bundle = blocktile2d.load_source();
    generic.source_hash = source_bundle_hash(bundle);
    generic.template_name = blocktile2d.name;
    generic.params = params_to_string(values);
    generic.name_expression = blocktile2d.name_expression(values);
    generic.shape = blocktile2d.launch_shape(values, portable_target());
    generic.requirements = blocktile2d.requirements(values, portable_target());
    check_name_expression(generic.name_expression);
    generic_source.hash = generic.source_hash;
    generic_source.template_name = blocktile2d.name;
    generic_source.main_name = bundle.main_name;
    for (const auto& h : bundle.headers) generic_source.header_names.push_back(h.first);
    generic_source.text = flatten_source(bundle);
    generic_source.from_database = false;
    generic_source.from_templates_folder = true;
  }
  std::map<KernelKey, ExportKernel> tuned;
  struct PendingEntry {
    Problem problem;
    KernelKey primary;
    std::optional<KernelKey> portable;
  };
  std::vector<std::pair<ExportDevice, std::vector<PendingEntry>>> pending;
  for (auto& [identity, group] : groups) {
    ExportDevice dev;
    std::tie(dev.name, dev.cc_major, dev.cc_minor, dev.sm_count) = identity;
    dev.records = group.first;
    std::vector<PendingEntry> entries;
    for (const auto& [problem, merged] : group.second) {
      if (!merged.primary) continue;   // only a portable winner: nothing to dispatch to first
      if (problem.m < 1 || problem.n < 1 || problem.k < 1)
        throw UsageError(fmt::format("tuned problem {} on {} has a dimension below 1", problem.to_string(), dev.name));
      to_int(problem.m, "M");
      to_int(problem.n, "N");
      to_int(problem.k, "K");
      PendingEntry pe;
      pe.problem = problem;
      const ExportKernel primary = collector.kernel_of(*merged.primary, dev.name);
      pe.primary = kernel_key(primary);
      tuned.emplace(pe.primary, primary);
      if (merged.portable) {
        const ExportKernel portable = collector.kernel_of(*merged.portable, dev.name);
        pe.portable = kernel_key(portable);
        tuned.emplace(*pe.portable, portable);
      }
      entries.push_back(std::move(pe));
    }
    if (!entries.empty()) pending.emplace_back(std::move(dev), std::move(entries));
  }
  if (pending.empty())
    throw UsageError(fmt::format("database {} has no tuned problems (no winners) to export; run `cm-tune tune` first",
                                 store.file().string()));

  // The generic default's bundle, unless a winner was compiled from the very same one.
  if (auto it = collector.sources().find(generic_source.hash); it != collector.sources().end())
    it->second.from_templates_folder = true;
  else
    collector.sources().emplace(generic_source.hash, std::move(generic_source));

  std::map<KernelKey, int> index_of;
  model.kernels.push_back(generic);
  index_of[kernel_key(generic)] = k_generic_kernel_index;
  std::vector<ExportKernel> sorted;
  for (auto& [key, k] : tuned)
    if (!index_of.count(key)) sorted.push_back(k);
  std::sort(sorted.begin(), sorted.end(), [](const ExportKernel& a, const ExportKernel& b) {
    return std::make_tuple(a.template_name, a.params, kernel_key(a)) < std::make_tuple(b.template_name, b.params, kernel_key(b));
  });
  for (auto& k : sorted) {
    index_of[kernel_key(k)] = static_cast<int>(model.kernels.size());
    model.kernels.push_back(std::move(k));
  }
  for (const auto& k : model.kernels) {
    for (const int64_t v : {k.shape.threads, k.shape.tile_m, k.shape.tile_n, k.shape.dynamic_smem, k.shape.grid_z,
                            k.requirements.align_bytes, k.requirements.ld_multiple})
      to_int(v, "a launch shape or requirement of " + k.name_expression);
    if (k.shape.threads <= 0 || k.shape.tile_m <= 0 || k.shape.tile_n <= 0 || k.shape.grid_z <= 0)
      throw UsageError(fmt::format("kernel {} has an invalid launch shape", k.name_expression));
  }

  for (auto& [dev, entries] : pending) {
    for (const auto& pe : entries) {
      ExportEntry e;
      e.problem = pe.problem;
      e.primary = index_of.at(pe.primary);
      e.portable = pe.portable ? index_of.at(*pe.portable) : -1;
      dev.entries.push_back(e);
    }
    model.devices.push_back(std::move(dev));
  }

  // Sources actually used, by hash; namespaces use a hash prefix, which must stay unique.
  std::set<std::string> used;
  for (const auto& k : model.kernels) used.insert(k.source_hash);
  std::set<std::string> prefixes;
  for (auto& [hash, s] : collector.sources()) {
    if (!used.count(hash)) continue;
    if (hash.size() < k_namespace_hex_digits || !prefixes.insert(source_namespace(hash)).second)
      throw InfraError("cm-tune", "export", fmt::format("source hash {} is too short or not unique in its first {} digits",
                                                        hash, k_namespace_hex_digits),
                       __FILE__, __LINE__);
    model.sources.push_back(s);
  }
  return model;
}

std::string render_dispatch_tables(const ExportModel& model) {
  std::string out;
  out += "// ---- dispatch tables (generated) ----\n";
  out += fmt::format("constexpr int k_generic_kernel = {};\n", k_generic_kernel_index);
  out += fmt::format("constexpr int k_kernel_count = {};\n", model.kernels.size());
  out += "constexpr KernelInfo k_kernels[k_kernel_count] = {\n";
  out += "    // name, source namespace, threads, tile_m, tile_n, dynamic_smem, grid_z, align_bytes, ld_multiple\n";
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const ExportKernel& k = model.kernels[i];
    out += fmt::format("    {{{}, \"{}\", {}, {}, {}, {}, {}, {}, {}}},  // {}: {}{}[{}]\n", c_string(k.name_expression),
                       source_namespace(k.source_hash), k.shape.threads, k.shape.tile_m, k.shape.tile_n,
                       k.shape.dynamic_smem, k.shape.grid_z, k.requirements.align_bytes, k.requirements.ld_multiple, i,
                       static_cast<int>(i) == k_generic_kernel_index ? "generic default, " : "", k.template_name,
                       comment_text(k.params));
  }
  out += "};\n\n";
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("// {} (sm_{}{}, {} SMs)\n", comment_text(dev.name), dev.cc_major, dev.cc_minor, dev.sm_count);
    out += fmt::format("constexpr Entry k_entries_{}[] = {{\n", d);
    out += "    // {M, N, K}, primary kernel, portable kernel (-1: none tuned, the generic default runs)\n";
    for (const auto& e : dev.entries)
      out += fmt::format("    {{{{{}, {}, {}}}, {}, {}}},\n", e.problem.m, e.problem.n, e.problem.k, e.primary, e.portable);
    out += "};\n";
  }
  out += fmt::format("\nconstexpr int k_device_table_count = {};\n", model.devices.size());
  out += "constexpr DeviceTable k_device_tables[k_device_table_count] = {\n";
  out += "    // name, cc major, cc minor, SM count, entries (sorted by M, N, K), entry count\n";
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("    {{{}, {}, {}, {}, k_entries_{}, {}}},\n", c_string(dev.name), dev.cc_major, dev.cc_minor,
                       dev.sm_count, d, dev.entries.size());
  }
  out += "};\n\n";
  out += "/// The function of k_kernels[index]; nullptr for an index out of range.\n";
  out += "inline KernelFn kernel_function(int index) {\n";
  out += "  switch (index) {\n";
  for (size_t i = 0; i < model.kernels.size(); ++i)
    out += fmt::format("    case {}: return &{}::{};\n", i, source_namespace(model.kernels[i].source_hash),
                       model.kernels[i].name_expression);
  out += "    default: return nullptr;\n";
  out += "  }\n";
  out += "}\n";
  out += "// ---- end of dispatch tables ----\n";
  return out;
}

namespace {

/// The embedded file export/runtime/NAME: the header's run-time code, pasted as it is.
std::string_view runtime_file(std::string_view name) {
  for (const EmbeddedFile& f : embedded_header_runtime())
    if (f.name == name) return f.text;
  throw std::logic_error(fmt::format("export/runtime/{} is not embedded in this binary", name));
}

const char* source_origin(const ExportSource& s) {
  if (s.from_database && s.from_templates_folder) return "the database and the templates folder (generic default)";
  return s.from_templates_folder ? "the templates folder (generic default)" : "the database";
}

bool uses_cp_async(const ExportSource& source) { return source.text.find("cp.async") != std::string::npos; }

std::string bundle_files(const ExportSource& s) {
  std::string out = s.main_name;
  if (!s.header_names.empty()) {
    out += " (+ ";
    for (size_t i = 0; i < s.header_names.size(); ++i) out += (i ? ", " : "") + s.header_names[i];
    out += ")";
  }
  return out;
}

}  // namespace

std::string render_header(const ExportModel& model, const std::string& name_space) {
  if (!valid_namespace_name(name_space))
    throw UsageError(fmt::format("--namespace '{}' is not a C++ namespace name (identifiers joined by ::)", name_space));
  const auto [ns_open, ns_close] = namespace_braces(name_space);
  const ExportKernel& generic = model.kernels.at(k_generic_kernel_index);
  bool cp_async = false;
  for (const auto& s : model.sources) cp_async = cp_async || uses_cp_async(s);

  std::string out;
  // Provenance: nothing time-dependent, so the same database gives the same bytes.
  out += "// SGEMM kernels tuned by cm-tune, with their dispatch: generated by `cm-tune export`, do not edit.\n";
  out += "// The same database, templates folder and options always give this exact file (see docs/EXPORT.md).\n";
  out += "//\n";
  out += fmt::format("// cm-tune version:       {}\n", model.tool_version);
  out += fmt::format("// Database content hash: {}\n", model.content_hash);
  out += fmt::format("// Namespace:             {}\n", name_space);
  out += "//\n";
  out += fmt::format("// Device tables ({}), matched at run time by name, compute capability and SM count:\n",
                     model.devices.size());
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("//   [{}] {}: sm_{}{}, {} SMs, {} tuned problem{}\n", d, comment_text(dev.name), dev.cc_major,
                       dev.cc_minor, dev.sm_count, dev.entries.size(), dev.entries.size() == 1 ? "" : "s");
    for (const auto& r : dev.records)
      out += fmt::format("//       {}: driver {}, runtime {}, NVRTC {}\n", comment_text(r.uuid), r.driver_version,
                         r.runtime_version, comment_text(r.nvrtc_version));
  }
  out += "//\n";
  out += "// Kernel sources (namespace under detail, files, bundle hash):\n";
  for (const auto& s : model.sources)
    out += fmt::format("//   {}  {}  {}  (from {})\n", source_namespace(s.hash), comment_text(bundle_files(s)), s.hash,
                       source_origin(s));
  out += "//\n";
  out += fmt::format("// Generic default kernel (devices without a table): {}[{}],\n", generic.template_name, generic.params);
  out += fmt::format("//   from the templates folder, not the database (source hash {}).\n", generic.source_hash);
  out += "//\n";
  out += fmt::format("// Use: {}::sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream), row-major, like cublasSgemm.\n",
                     name_space);
  out += "// Needs only the CUDA runtime (<cuda_runtime.h>, which also provides log/fabs); compile with nvcc, C++14 or newer";
  out += cp_async ? ",\n// for sm_80 or newer (the tuned kernels use cp.async).\n" : ".\n";
  out += "#pragma once\n\n";
  out += "#include <cuda_runtime.h>\n\n";
  if (cp_async) {
    out += "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n";
    out += "#error \"this header's tuned kernels use cp.async: compile it for sm_80 or newer (e.g. -arch=sm_80)\"\n";
    out += "#endif\n\n";
  }

  for (const auto& s : model.sources) {
    const std::string src_ns = source_namespace(s.hash);
    out += "// ==============================================================================================\n";
    out += fmt::format("// Source bundle {}: {}\n", src_ns, comment_text(bundle_files(s)));
    out += fmt::format("// hash {}, from {}\n", s.hash, source_origin(s));
    out += "// ==============================================================================================\n";
    out += ns_open;
    out += "namespace detail {\n";
    out += fmt::format("namespace {} {{\n\n", src_ns);
    out += s.text;
    if (!s.text.empty() && s.text.back() != '\n') out += '\n';
    out += fmt::format("\n}}  // namespace {}\n", src_ns);
    out += "}  // namespace detail\n";
    out += ns_close;
    for (const auto& macro : defined_macros(s.text)) out += fmt::format("#undef {}\n", macro);
    out += "\n";
  }

  out += "// ==============================================================================================\n";
  out += "// Dispatch\n";
  out += "// ==============================================================================================\n";
  out += ns_open;
  out += "\n";
  out += runtime_file("header_types.cuh");
  out += "\nnamespace detail {\n\n";
  out += "// ---- dispatch rules (shared with cm-tune's `query`) ----\n";
  out += runtime_file("dispatch_rules.h");
  out += "// ---- end of dispatch rules ----\n\n";
  out += render_dispatch_tables(model);
  out += "\n}  // namespace detail\n\n";
  out += runtime_file("header_api.cuh");
  out += ns_close;
  return out;
}

std::string export_header(Store& store, const ExportOptions& options, const TemplateDesc& blocktile2d) {
  if (!valid_namespace_name(options.name_space))
    throw UsageError(
        fmt::format("--namespace '{}' is not a C++ namespace name (identifiers joined by ::)", options.name_space));
  return render_header(build_export_model(store, options, blocktile2d), options.name_space);
}

}  // namespace cmt
