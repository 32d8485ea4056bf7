#include "export/export_model.hpp"

#include <algorithm>
#include <climits>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include "core/device_info.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "export/cost_model.hpp"
#include "export/dispatch.hpp"
#include "export/rules.hpp"
#include "space/space.hpp"
#include "space/target.hpp"
#include "record/ranking.hpp"

namespace cmt {

std::string source_namespace(const std::string& hash) { return "src_" + hash.substr(0, k_namespace_hex_digits); }

bool header_computes(DType dtype) {
  const int d = static_cast<int>(dtype);
  return d < k_header_dtypes || rules::opt_in_storage(d) >= 0;
}

std::string header_routine(DType dtype) {
  const TypeInfo& t = type_info(dtype);
  return t.opt_in ? fmt::format("{}gemm_{}", t.routine, t.name) : fmt::format("{}gemm", t.routine);
}

std::string header_kernel_name_function(DType dtype) {
  const TypeInfo& t = type_info(dtype);
  return t.opt_in ? fmt::format("kernel_name_{}", t.name) : "kernel_name";
}

namespace {

int to_int(int64_t value, const std::string& what) {
  if (value < INT_MIN || value > INT_MAX) throw UsageError(fmt::format("{} = {} does not fit an int", what, value));
  return static_cast<int>(value);
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

using KernelKey = std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, int64_t>;

KernelKey kernel_key(const ExportKernel& k) {
  return {k.source_hash,    k.name_expression,           k.shape.threads,           k.shape.tile_m,
          k.shape.tile_n,   k.shape.dynamic_smem,        k.shape.grid_z,            k.shape.problems_per_block,
          k.requirements.align_bytes, k.requirements.ld_multiple, static_cast<int64_t>(k.dtype)};
}

/// "f64" or "f64, i32".
std::string dtype_names(const std::vector<DType>& dtypes) {
  std::string out;
  for (const DType d : dtypes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
  return out;
}

/// What export keeps of a winner's binary: its source bundle and the arguments its kernel takes.
struct BinaryFacts {
  std::string source_hash;
  bool batched = false;
  bool takes_batch_count = false;
};

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
      it = m_binary_source.emplace(w.binary_key, BinaryFacts{binary->source_hash, binary->batched, binary->takes_batch_count})
               .first;
    }
    add_source(it->second.source_hash, w, device_name);
    ExportKernel k;
    k.source_hash = it->second.source_hash;
    k.batched = it->second.batched;
    k.takes_batch_count = it->second.takes_batch_count;
    const ParamValues params = params_from_string(w.params);
    k.layout = layout_of_params(params);
    k.dtype = dtype_of_params(params);
    // The header launches a kernel with the pointers of its entry point's type: a kernel of another
    // type would read the operands as the wrong type.
    if (k.dtype != w.problem.dtype)
      throw UsageError(fmt::format("winner {}[{}] for {} on {} computes {}, not {}; the database is inconsistent: re-run "
                                   "`cm-tune tune` on that problem",
                                   w.template_name, w.params, w.problem.to_string(), device_name, dtype_name(k.dtype),
                                   dtype_name(w.problem.dtype)));
    k.template_name = w.template_name;
    k.params = w.params;
    k.name_expression = w.name_expression;
    k.shape = w.shape;
    k.requirements = w.requirements;
    k.binary_key = w.binary_key;
    return k;
  }

  std::map<std::string, ExportSource>& sources() { return m_sources; }
  /// Hashes whose stored source no longer hashes to them.
  const std::set<std::string>& mismatched() const { return m_mismatched; }

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
    // Sources are stored under their hash, so one edited in the file would be pasted into the
    // header silently. Not flattened: its text may not even parse.
    if (!Store::matches_its_hash(*source))
      m_mismatched.insert(hash);
    else
      s.text = flatten_source(SourceBundle{source->main_name, source->main_text, source->headers});
    m_sources.emplace(hash, std::move(s));
  }

  Store& m_store;
  std::map<std::string, BinaryFacts> m_binary_source;   // by binary key
  std::map<std::string, ExportSource> m_sources;        // by hash
  std::set<std::string> m_mismatched;
};

/// UsageError naming a stored source that no longer matches its hash, and every exported template
/// compiled from it, so the header never carries a source other than the one that was measured.
void check_source_hashes(const KernelCollector& collector, const std::vector<ExportKernel>& kernels) {
  for (const std::string& hash : collector.mismatched()) {
    std::set<std::string> templates;
    for (const auto& k : kernels)
      if (k.source_hash == hash) templates.insert(k.template_name);
    if (templates.empty()) continue;   // no exported kernel uses it
    std::string names;
    for (const auto& t : templates) names += (names.empty() ? "" : ", ") + t;
    throw UsageError(fmt::format(
        "the database's source for template{} {} does not match its hash {} (the database was modified outside "
        "cm-tune); refusing to use it",
        templates.size() == 1 ? "" : "s", names, hash));
  }
}

/// The faster of two optional winners; ties go to the one seen first (devices come sorted by uuid).
/// Of two winners of one problem on devices that share a table, keeps the one whose trial ranks first
/// (record/ranking.hpp); ties keep the one seen first (devices come sorted by uuid).
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

/// Fits the cost models of a device table (dev.models; dev.model_points, what each was fitted on):
/// per exported kernel measured on one of its devices, fitted to every passing trial of it there (its
/// re-timed median where it has one) of the types `wanted` takes.
/// A kernel computes one element type, so its trials are all of that type, and each point is weighed
/// against the fastest trial of its own problem (type included).
template <class Wanted>
void fit_device_models(Store& store, ExportDevice& dev,
                                                 const std::map<KernelKey, int>& index_of,
                                                 std::vector<ExportKernel>& kernels,
                                                 const std::map<std::string, std::string>& binary_sources,
                                                 const Wanted& wanted) {
  const SmLimits sm = sm_limits(dev.cc_major, dev.cc_minor);
  std::map<int, std::vector<ModelPoint>> points;
  std::map<int, int> blocks_per_sm;
  std::vector<std::vector<TrialRecord>> trials;
  std::map<Problem, double> fastest_us;  // over every passing trial of the device, exported or not
  for (const DeviceRecord& record : dev.records) {
    trials.push_back(store.trials(record.id));
    for (const TrialRecord& t : trials.back()) {
      if (!passed(t) || !wanted(t.problem.dtype)) continue;
      const double us = rank_time(t) * 1e3;  // the time trials rank by (record/ranking.hpp)
      auto [it, inserted] = fastest_us.emplace(t.problem, us);
      if (!inserted) it->second = std::min(it->second, us);
    }
  }
  for (const auto& record_trials : trials) {
    for (const TrialRecord& t : record_trials) {
      if (!passed(t) || !wanted(t.problem.dtype)) continue;
      const auto source = binary_sources.find(t.binary_key);
      if (source == binary_sources.end()) continue;
      ExportKernel k;
      k.source_hash = source->second;
      k.name_expression = t.name_expression;
      k.shape = t.shape;
      k.requirements = t.requirements;
      k.dtype = t.problem.dtype;   // what the kernel computes: tune runs a kernel on problems of its type only
      const auto index = index_of.find(kernel_key(k));
      if (index == index_of.end()) continue;
      // A generic default that was also measured: its build is in the compile cache (bench times it).
      ExportKernel& exported = kernels[static_cast<size_t>(index->second)];
      if (exported.binary_key.empty()) exported.binary_key = t.binary_key;
      dev.kernel_binaries.emplace(index->second, t.binary_key);
      const double us = rank_time(t) * 1e3;  // the time trials rank by (record/ranking.hpp)
      const double competitive = fastest_us.at(t.problem) / us;
      points[index->second].push_back({t.problem, us, competitive * competitive});
      blocks_per_sm.emplace(index->second,
                            resident_blocks(sm, t.shape.threads, t.registers, t.smem_bytes > 0 ? t.smem_bytes : t.shape.dynamic_smem));
    }
  }
  dev.models.clear();
  dev.model_points.clear();
  for (auto& [index, kernel_points] : points) {
    dev.models.push_back(fit_kernel_model(kernel_points, kernels[static_cast<size_t>(index)].shape, index,
                                          blocks_per_sm.at(index), dev.sm_count));
    dev.model_points.push_back(std::move(kernel_points));
  }
}

}  // namespace

std::optional<ParamValues> generic_default_params(const TemplateDesc& generic, std::string_view layout, DType dtype) {
  if (!generic.generic_default)
    throw UsageError(fmt::format("template {} ({}) declares no [generic_default], the point the exported header's "
                                 "generic default kernel runs",
                                 generic.name, generic.descriptor_path.string()));
  if (!generic.supports_layout(layout) || !generic.supports_dtype(dtype)) return std::nullopt;
  // The descriptor's point (blocktile2d: 64x64 tiles of 128 threads, no shared-memory tricks, which
  // runs everywhere), in this layout and type.
  ParamValues preferred = *generic.generic_default;
  const bool layouts = generic.layouts != std::vector<std::string>{"nn"};
  if (layouts) {
    preferred.emplace_back("TRANS_A", layout[0] == 't' ? 1 : 0);
    preferred.emplace_back("TRANS_B", layout[1] == 't' ? 1 : 0);
  }
  // The build of this type, for a family that computes other types than f32 alone.
  if (generic.dtypes != std::vector<DType>{DType::f32}) preferred.emplace_back("DTYPE", static_cast<int64_t>(dtype));
  if (generic_candidate(generic, preferred)) return preferred;

  // The point fails a constraint in this layout or type: take the first valid point of the grid.
  std::vector<std::vector<int64_t>> lists;
  for (const auto& p : generic.params) lists.push_back(p.values);
  std::optional<ParamValues> first;
  walk_grid(generic, lists, [&](const ParamValues& values) {
    if (generic.layout_of(values) == layout && generic.dtype_of(values) == dtype && generic_candidate(generic, values))
      first = values;
    return !first;
  });
  if (first) return *first;
  throw UsageError(fmt::format("template {} ({}) has no valid {} {} configuration without input requirements for the "
                               "generic default kernel",
                               generic.name, generic.descriptor_path.string(), layout, dtype_name(dtype)));
}

std::vector<int64_t> table_device_ids(Store& store, int64_t device_id) {
  std::vector<int64_t> ids = {device_id};
  if (const auto self = store.find_device(device_id))
    for (const auto& d : store.devices())
      if (d.id != device_id && model_identity(d) == model_identity(*self) && !store.winners(d.id).empty())
        ids.push_back(d.id);
  return ids;
}

ExportModel build_export_model(Store& store, const ExportOptions& options, const TemplateDesc& default_tmpl) {
  const auto wanted = [&options](DType d) {
    if (!header_computes(d)) return false;  // its winners stay in the database
    return options.dtypes.empty() || std::find(options.dtypes.begin(), options.dtypes.end(), d) != options.dtypes.end();
  };
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
  std::set<DType> tuned_types;   // of every winner, exported or not: for the error below
  for (const auto& d : devices) {
    auto& group = groups[model_identity(d)];
    group.first.push_back(d);
    for (const auto& e : dispatch_entries(store, d.id)) {
      tuned_types.insert(e.problem.dtype);
      if (!wanted(e.problem.dtype)) continue;   // --dtype leaves this type's winners out
      Merged& m = group.second[e.problem];
      keep_better(store, m.primary, e.primary);
      if (e.portable) keep_better(store, m.portable, *e.portable);
    }
  }

  // Kernels: the generic defaults first (one per element type and layout the generic template has, type-major),
  // then the winners' kernels sorted and listed once each.
  KernelCollector collector(store);
  std::vector<ExportKernel> generics;
  ExportSource generic_source;
  {
    const SourceBundle bundle = default_tmpl.load_source();
    for (int d = 0; d < k_header_dtypes; ++d) {
      const DType dtype = static_cast<DType>(d);
      for (const std::string_view layout : k_layout_names) {
        const auto values = generic_default_params(default_tmpl, layout, dtype);
        if (!values) continue;
        ExportKernel generic;
        generic.source_hash = source_bundle_hash(bundle);
        generic.template_name = default_tmpl.name;
        generic.params = params_to_string(*values);
        generic.name_expression = default_tmpl.name_expression(*values);
        generic.shape = default_tmpl.launch_shape(*values, portable_target());
        generic.requirements = default_tmpl.requirements(*values, portable_target());
        generic.layout = std::string(layout);
        generic.dtype = dtype;
        generic.batched = default_tmpl.batched;
        generic.takes_batch_count = default_tmpl.takes_batch_count();
        check_name_expression(generic.name_expression);
        generics.push_back(std::move(generic));
      }
    }
    if (generics.empty() || generics.front().layout != "nn" || generics.front().dtype != DType::f32)
      throw UsageError(fmt::format("template {} ({}) does not compute the nn layout in f32, which the generic default "
                                   "kernel needs",
                                   default_tmpl.name, default_tmpl.descriptor_path.string()));
    generic_source.hash = source_bundle_hash(bundle);
    generic_source.template_name = default_tmpl.name;
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
    const DeviceRecord& first = dev.records.front();
    dev.bytes_per_us = k_streaming_bandwidth_share * 2.0 * first.memory_clock_khz * 1e3 * (first.memory_bus_bits / 8.0) / 1e6;
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
  if (pending.empty() && !tuned_types.empty() && !options.dtypes.empty()) {
    throw UsageError(fmt::format("database {} has no tuned problems of type {} (--dtype) to export; its tuned "
                                 "problems are of type {}",
                                 store.file().string(), dtype_names(options.dtypes),
                                 dtype_names(std::vector<DType>(tuned_types.begin(), tuned_types.end()))));
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
  for (const ExportKernel& generic : generics) {
    const int index = static_cast<int>(model.kernels.size());
    model.generic_kernels[static_cast<int>(generic.dtype)][layout_number(generic.layout)] = index;
    index_of[kernel_key(generic)] = index;
    model.kernels.push_back(generic);
  }
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
  check_source_hashes(collector, model.kernels);
  for (const auto& k : model.kernels) {
    for (const int64_t v : {k.shape.threads, k.shape.tile_m, k.shape.tile_n, k.shape.dynamic_smem, k.shape.grid_z,
                            k.shape.problems_per_block, k.requirements.align_bytes, k.requirements.ld_multiple})
      to_int(v, "a launch shape or requirement of " + k.name_expression);
    if (k.shape.threads <= 0 || k.shape.tile_m <= 0 || k.shape.tile_n <= 0 || k.shape.grid_z <= 0 ||
        k.shape.problems_per_block <= 0 || k.shape.problems_per_block > k_max_problems_per_block ||
        (k.shape.problems_per_block != 1 && !k.takes_batch_count))
      throw UsageError(fmt::format("kernel {} has an invalid launch shape", k.name_expression));
  }

  const std::map<std::string, std::string> binary_sources = store.binary_sources();
  for (auto& [dev, entries] : pending) {
    for (const auto& pe : entries) {
      ExportEntry e;
      e.problem = pe.problem;
      e.primary = index_of.at(pe.primary);
      e.portable = pe.portable ? index_of.at(*pe.portable) : -1;
      dev.entries.push_back(e);
    }
    fit_device_models(store, dev, index_of, model.kernels, binary_sources, wanted);
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

}  // namespace cmt
