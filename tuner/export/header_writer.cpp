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

#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "tune/compile_service.hpp"

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

std::optional<std::string> quoted_include_of(const std::string& line) {
  static const std::regex k_quoted(R"re(^\s*#\s*include\s*"([^"]+)".*$)re");
  std::smatch m;
  if (std::regex_match(line, m, k_quoted)) return m[1].str();
  return std::nullopt;
}

bool is_angle_include(const std::string& line) {
  static const std::regex k_angle(R"re(^\s*#\s*include\s*<.*$)re");
  return std::regex_match(line, k_angle);
}

bool is_pragma_once(const std::string& line) {
  static const std::regex k_once(R"re(^\s*#\s*pragma\s+once\s*(//.*)?$)re");
  return std::regex_match(line, k_once);
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

bool config_valid(const TemplateDesc& tmpl, const ParamValues& values) {
  try {
    for (const auto& c : tmpl.constraints)
      if (c.check.eval(values) == 0) return false;
    return tmpl.requirements(values).none();
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
    s.text = flatten_source(source->main_name, source->main_text, source->headers);
    m_sources.emplace(hash, std::move(s));
  }

  Store& m_store;
  std::map<std::string, std::string> m_binary_source;   // binary key -> source hash
  std::map<std::string, ExportSource> m_sources;        // by hash
};

/// The faster of two optional winners; ties go to the one seen first (devices come sorted by uuid).
void keep_faster(std::optional<WinnerRecord>& current, const WinnerRecord& candidate) {
  if (!current || candidate.median_ms < current->median_ms) current = candidate;
}

}  // namespace

bool valid_namespace_name(const std::string& text) {
  static const std::regex k_name(R"re(^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$)re");
  return std::regex_match(text, k_name);
}

std::string flatten_source(const std::string& main_name, const std::string& main_text,
                           const std::vector<std::pair<std::string, std::string>>& headers) {
  std::map<std::string, std::string> by_name(headers.begin(), headers.end());
  std::set<std::string> included{main_name};
  std::string out;
  std::function<void(const std::string&, const std::string&)> paste = [&](const std::string& file, const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      if (is_pragma_once(line)) continue;
      if (is_angle_include(line))
        throw UsageError(fmt::format("{}:{}: {}: exported headers only support quoted includes of template files", file,
                                     number, line));
      if (const auto include = quoted_include_of(line)) {
        if (!included.insert(*include).second) continue;   // first occurrence only
        const auto it = by_name.find(*include);
        if (it == by_name.end())
          throw UsageError(fmt::format("{}:{}: #include \"{}\": not part of the stored source bundle", file, number, *include));
        out += fmt::format("// ---- begin {} (included by {}) ----\n", *include, file);
        paste(*include, it->second);
        out += fmt::format("// ---- end {} ----\n", *include);
        continue;
      }
      out += line;
      out += '\n';
    }
  };
  paste(main_name, main_text);
  return out;
}

ParamValues generic_default_params(const TemplateDesc& blocktile2d) {
  // 64x64 tiles of 128 threads, no shared-memory tricks: runs everywhere, and is the first valid
  // blocktile2d candidate of configs/quick.toml.
  const ParamValues preferred = {{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}, {"TN", 4}};
  bool same_params = preferred.size() == blocktile2d.params.size();
  for (size_t i = 0; same_params && i < preferred.size(); ++i) same_params = preferred[i].first == blocktile2d.params[i].name;
  if (same_params && config_valid(blocktile2d, preferred)) return preferred;

  // The descriptor was edited: take the first valid point of its own grid, in odometer order.
  std::vector<size_t> at(blocktile2d.params.size(), 0);
  for (const auto& p : blocktile2d.params)
    if (p.values.empty()) throw UsageError(fmt::format("template {}: parameter {} has no values", blocktile2d.name, p.name));
  while (true) {
    ParamValues values;
    for (size_t i = 0; i < at.size(); ++i) values.emplace_back(blocktile2d.params[i].name, blocktile2d.params[i].values[at[i]]);
    if (config_valid(blocktile2d, values)) return values;
    size_t i = at.size();
    while (i > 0 && ++at[i - 1] == blocktile2d.params[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
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
                                   store.db().file().string()));
  } else {
    for (const int64_t id : options.device_ids) {
      auto d = store.find_device(id);
      if (!d) throw UsageError(fmt::format("device id {} is not in the database", id));
      if (store.winners(id).empty())
        throw UsageError(fmt::format("device {} ({}) has no tuned problems (no winners) in {}; run `cm-tune tune` on it first",
                                     d->name, d->uuid, store.db().file().string()));
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
      keep_faster(m.primary, e.primary);
      if (e.portable) keep_faster(m.portable, *e.portable);
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
    generic.shape = blocktile2d.launch_shape(values);
    generic.requirements = blocktile2d.requirements(values);
    check_name_expression(generic.name_expression);
    generic_source.hash = generic.source_hash;
    generic_source.template_name = blocktile2d.name;
    generic_source.main_name = bundle.main_name;
    for (const auto& h : bundle.headers) generic_source.header_names.push_back(h.first);
    generic_source.text = flatten_source(bundle.main_name, bundle.main_text, bundle.headers);
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
                                 store.db().file().string()));

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

// Declarations the dispatch tables use; placed right before them, inside NS::detail.
constexpr const char* k_table_types = R"cmt(/// A tuned problem: C is M x N, the product's depth is K.
struct TunedProblem {
  int m, n, k;
};

namespace detail {

/// One kernel: its instantiation, launch shape and what it requires of a call.
struct KernelInfo {
  const char* name;     // the instantiation, as tuned
  const char* source;   // namespace of its source bundle, under detail
  int threads;          // 1-D blocks
  int tile_m;           // rows of C per block
  int tile_n;           // columns of C per block
  int dynamic_smem;     // bytes
  int grid_z;           // blocks per tile along z (K split across a cluster)
  int align_bytes;      // A, B and C base addresses must be aligned to this
  int ld_multiple;      // lda, ldb and ldc must be multiples of this
};

/// A tuned problem and its kernels, as indices into k_kernels.
struct Entry {
  TunedProblem problem;
  int primary;          // the fastest kernel
  int portable;         // the fastest without requirements; -1: none (the generic default runs)
};

/// The dispatch table of one device, keyed by what cudaGetDeviceProperties reports.
struct DeviceTable {
  const char* name;
  int cc_major, cc_minor, sm_count;
  const Entry* entries;
  int entry_count;
};

/// Every kernel has the SGEMM contract signature (templates/README.md).
typedef void (*KernelFn)(int, int, int, float, const float*, int, const float*, int, float, float*, int);

)cmt";

// Selection, caching, launching and the public API; after the tables, inside NS::detail.
constexpr const char* k_support_code = R"cmt(
/// Same characters.
inline bool same_name(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

/// The table serving a device: the exact device (name, compute capability, SM count), else the
/// first table of the same compute capability, else -1 (the generic default kernel). Host only.
inline int match_device_table(const char* name, int cc_major, int cc_minor, int sm_count) {
  for (int t = 0; t < k_device_table_count; ++t) {
    const DeviceTable& d = k_device_tables[t];
    if (d.cc_major == cc_major && d.cc_minor == cc_minor && d.sm_count == sm_count && same_name(d.name, name)) return t;
  }
  for (int t = 0; t < k_device_table_count; ++t)
    if (k_device_tables[t].cc_major == cc_major && k_device_tables[t].cc_minor == cc_minor) return t;
  return -1;
}

/// |ln(a/b)|, computed exactly as cm-tune's dispatch does (same doubles, same order).
inline double log_term(int a, int b) { return ::fabs(::log(static_cast<double>(a) / static_cast<double>(b))); }

/// Largest power of two dividing every address, capped at 256.
inline int alignment_of(const void* a, const void* b, const void* c) {
  const size_t bits = reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b) | reinterpret_cast<size_t>(c);
  const size_t lowest = bits & (~bits + 1);
  return (bits == 0 || lowest >= 256) ? 256 : static_cast<int>(lowest);
}

/// The entry of a table nearest to M x N x K in log-distance |ln(M/Mi)|+|ln(N/Ni)|+|ln(K/Ki)|;
/// entries are sorted by (M, N, K), so keeping the first of equals sends ties to the smaller.
/// M, N, K >= 1. Host only, no GPU.
inline const Entry* nearest_entry(int table, int M, int N, int K) {
  if (table < 0 || table >= k_device_table_count) return nullptr;
  const DeviceTable& t = k_device_tables[table];
  const Entry* best = nullptr;
  double best_distance = 0;
  for (int i = 0; i < t.entry_count; ++i) {
    const Entry& e = t.entries[i];
    const double d = log_term(M, e.problem.m) + log_term(N, e.problem.n) + log_term(K, e.problem.k);
    if (best == nullptr || d < best_distance) {
      best = &e;
      best_distance = d;
    }
  }
  return best;
}

/// The kernel (index into k_kernels) sgemm launches on a device served by `table` (-1: none) for
/// this call: the nearest entry's primary kernel when the call meets its requirements, else the
/// entry's portable kernel, else the generic default. `alignment` as alignment_of(A, B, C).
/// Host only, no GPU: tests compare it with cm-tune's choose_kernel.
inline int select(int table, int M, int N, int K, int lda, int ldb, int ldc, int alignment) {
  const Entry* e = nearest_entry(table, M, N, K);
  if (e == nullptr) return k_generic_kernel;
  const KernelInfo& p = k_kernels[e->primary];
  const int multiple = p.ld_multiple > 1 ? p.ld_multiple : 1;
  if (alignment >= p.align_bytes && lda % multiple == 0 && ldb % multiple == 0 && ldc % multiple == 0) return e->primary;
  return e->portable >= 0 ? e->portable : k_generic_kernel;
}

// Per-device state, computed once: which table serves the device, and per kernel whether its
// dynamic shared memory limit was raised. Writes are idempotent, so a race between threads costs
// at most a repeated query; the flags use atomic loads and stores where the compiler has them.
constexpr int k_max_cached_devices = 64;   // higher ordinals are identified on every call

struct DeviceState {
  int table_plus_2;                 // 0: not identified yet; else table + 2
  int smem_raised[k_kernel_count];  // 1: cudaFuncSetAttribute done on this device
};

inline DeviceState* device_state(int device) {
  static DeviceState states[k_max_cached_devices];  // zero-initialized
  return device >= 0 && device < k_max_cached_devices ? &states[device] : nullptr;
}

inline int load_flag(const int* p) {
#if defined(__GNUC__) || defined(__clang__)
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
  return *static_cast<const volatile int*>(p);
#endif
}

inline void store_flag(int* p, int value) {
#if defined(__GNUC__) || defined(__clang__)
  __atomic_store_n(p, value, __ATOMIC_RELEASE);
#else
  *static_cast<volatile int*>(p) = value;
#endif
}

/// The table serving a device (-1: none), identified by name, compute capability and SM count.
inline cudaError_t table_of_device(int device, int* table) {
  DeviceState* state = device_state(device);
  if (state != nullptr) {
    const int cached = load_flag(&state->table_plus_2);
    if (cached != 0) {
      *table = cached - 2;
      return cudaSuccess;
    }
  }
  cudaDeviceProp prop;
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return err;
  *table = match_device_table(prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  if (state != nullptr) store_flag(&state->table_plus_2, *table + 2);
  return cudaSuccess;
}

/// The current device and its table.
inline cudaError_t current_table(int* device, int* table) {
  const cudaError_t err = cudaGetDevice(device);
  if (err != cudaSuccess) return err;
  return table_of_device(*device, table);
}

/// Raises a kernel's dynamic shared memory limit on a device, once, when it needs more than 48 KiB.
inline cudaError_t prepare_kernel(int device, int kernel) {
  const KernelInfo& info = k_kernels[kernel];
  if (info.dynamic_smem <= 48 * 1024) return cudaSuccess;
  DeviceState* state = device_state(device);
  if (state != nullptr && load_flag(&state->smem_raised[kernel]) != 0) return cudaSuccess;
  const cudaError_t err =
      cudaFuncSetAttribute(kernel_function(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, info.dynamic_smem);
  if (err == cudaSuccess && state != nullptr) store_flag(&state->smem_raised[kernel], 1);
  return err;
}

/// C = beta*C on an M x N block without reading A or B; C is not read when beta == 0, so NaN in C
/// does not survive (BLAS semantics). A template so that several -rdc translation units may include it.
template <int Unused = 0>
__global__ void __launch_bounds__(256) scale_kernel(int M, int N, float beta, float* __restrict__ C, int ldc) {
  const long long col = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (col >= N) return;
  for (int row = blockIdx.y; row < M; row += gridDim.y) {
    float* p = C + static_cast<long long>(row) * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

inline cudaError_t launch_scale(int M, int N, float beta, float* C, int ldc, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((N - 1) / 256 + 1), static_cast<unsigned>(M < 65535 ? M : 65535));
  void* args[] = {&M, &N, &beta, &C, &ldc};
  return cudaLaunchKernel(&scale_kernel<>, grid, dim3(256), args, 0, stream);
}

}  // namespace detail

/// Row-major SGEMM, C = alpha * A * B + beta * C with A M x K (lda), B K x N (ldb), C M x N (ldc),
/// on `stream`, using the kernel tuned for the nearest problem on this device. Returns
/// cudaErrorInvalidValue for bad arguments (negative sizes, lda < max(1,K), ldb or ldc < max(1,N),
/// a null pointer that would be used), cudaSuccess without launching anything when M or N is 0,
/// else the status of the launch. alpha == 0 or K == 0 only scales C (A and B are not read);
/// beta == 0 writes C without reading it.
inline cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                         float* C, int ldc, cudaStream_t stream = 0) {
  if (M < 0 || N < 0 || K < 0) return cudaErrorInvalidValue;
  if (lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1)) return cudaErrorInvalidValue;
  if (M == 0 || N == 0) return cudaSuccess;
  if (C == nullptr) return cudaErrorInvalidValue;
  if (alpha == 0.0f || K == 0) {
    if (beta == 1.0f) return cudaSuccess;  // C = C
    return detail::launch_scale(M, N, beta, C, ldc, stream);
  }
  if (A == nullptr || B == nullptr) return cudaErrorInvalidValue;
  int device = 0, table = -1;
  cudaError_t err = detail::current_table(&device, &table);
  if (err != cudaSuccess) return err;
  const int kernel = detail::select(table, M, N, K, lda, ldb, ldc, detail::alignment_of(A, B, C));
  err = detail::prepare_kernel(device, kernel);
  if (err != cudaSuccess) return err;
  const detail::KernelInfo& info = detail::k_kernels[kernel];
  const dim3 grid(static_cast<unsigned>((N - 1) / info.tile_n + 1), static_cast<unsigned>((M - 1) / info.tile_m + 1),
                  static_cast<unsigned>(info.grid_z));
  void* args[] = {&M, &N, &K, &alpha, &A, &lda, &B, &ldb, &beta, &C, &ldc};
  return cudaLaunchKernel(detail::kernel_function(kernel), grid, dim3(static_cast<unsigned>(info.threads)), args,
                          static_cast<size_t>(info.dynamic_smem), stream);
}

/// The name of the dispatch table serving the current device (*name = nullptr: none, the generic
/// default kernel runs there).
inline cudaError_t device_table_name(const char** name) {
  int device = 0, table = -1;
  const cudaError_t err = detail::current_table(&device, &table);
  *name = (err == cudaSuccess && table >= 0) ? detail::k_device_tables[table].name : nullptr;
  return err;
}

/// The problems tuned for the current device: up to `capacity` of them into `problems` (may be
/// null when capacity is 0), and how many there are into *count (0 when no table serves it).
inline cudaError_t tuned_problems(TunedProblem* problems, int capacity, int* count) {
  int device = 0, table = -1;
  *count = 0;
  const cudaError_t err = detail::current_table(&device, &table);
  if (err != cudaSuccess || table < 0) return err;
  const detail::DeviceTable& t = detail::k_device_tables[table];
  for (int i = 0; i < t.entry_count && i < capacity; ++i) problems[i] = t.entries[i].problem;
  *count = t.entry_count;
  return cudaSuccess;
}

/// The kernel sgemm would launch on the current device for a product (alpha != 0, K >= 1) with
/// these arguments; *name is its instantiation, e.g. "cmt_sgemm_multistage<...>".
inline cudaError_t kernel_name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, const float* C,
                               int ldc, const char** name) {
  int device = 0, table = -1;
  *name = nullptr;
  const cudaError_t err = detail::current_table(&device, &table);
  if (err != cudaSuccess) return err;
  if (M < 1 || N < 1 || K < 1) return cudaErrorInvalidValue;
  *name = detail::k_kernels[detail::select(table, M, N, K, lda, ldb, ldc, detail::alignment_of(A, B, C))].name;
  return cudaSuccess;
}

)cmt";

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
  out += k_table_types;
  out += render_dispatch_tables(model);
  out += k_support_code;
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
