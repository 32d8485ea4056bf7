#include "export/dispatch.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "export/rules.hpp"
#include "measure/protocol.hpp"

namespace cmt {

namespace {

/// The header's KernelInfo fields the rules read.
struct KernelTiles {
  int tile_m, tile_n, grid_z, problems_per_block;
};

/// The header's KernelInfo fields kernel_serves and generic_kernel read.
struct KernelServes {
  int layout, batched, dtype;
};

/// The header's TunedProblem fields exact_entry reads.
struct EntryKey {
  struct {
    long long m, n, k;
    int layout;
    long long batch;
    int broadcast;
    int dtype;
  } problem;
};

EntryKey entry_key(const Problem& p) {
  return {{p.m, p.n, p.k, rules::layout_index(p.trans_a, p.trans_b), p.batch, broadcast_number(p),
           static_cast<int>(p.dtype)}};
}

/// What kernel_serves reads of every kernel of the model, by index.
std::vector<KernelServes> serving_of(const ExportModel& model) {
  std::vector<KernelServes> serving;
  for (const auto& k : model.kernels)
    serving.push_back({layout_number(k.layout), k.batched ? 1 : 0, static_cast<int>(k.dtype)});
  return serving;
}

bool serves_on(const ExportDevice& dev, const std::vector<KernelServes>& serving, int dtype, int layout,
               int64_t batch) {
  return rules::table_serves(dev.entries.data(), static_cast<int>(dev.entries.size()), dev.models.data(),
                             static_cast<int>(dev.models.size()), serving.data(), dtype, layout, batch);
}

/// Why a call that no tuned kernel of its table computes runs the generic default, and how to serve
/// it: "generic default: no tuned kernel of this table computes f32 tt (tune --layout tt, or the calls
/// you record, to serve it)". `unbatched_served`: the table computes the call's type and layout, but
/// not batched.
std::string not_served_why(const Problem& p, bool unbatched_served, bool has_generic) {
  const std::string layout(p.layout());
  const std::string what = fmt::format("{}{} {}", unbatched_served ? "batched " : "", dtype_name(p.dtype), layout);
  std::string tune;
  if (layout != "nn") tune += " --layout " + layout;
  if (p.dtype != DType::f32) tune += fmt::format(" --dtype {}", dtype_name(p.dtype));
  if (p.batch > 1) tune += fmt::format(" --batch {}", p.batch);
  if (tune.empty()) tune = " --dtype f32";   // f32 nn, unbatched: a table of other types only
  return fmt::format("{}: no tuned kernel of this table computes {} (tune{}, or the calls you record, to serve it){}",
                     has_generic ? "generic default" : "refused", what, tune,
                     has_generic ? "" : "; no generic kernel computes it either");
}

}  // namespace

int layout_number(std::string_view layout) { return rules::layout_index(layout[0] == 't', layout[1] == 't'); }

int broadcast_number(const Problem& p) { return rules::broadcast_bits(p.batch, p.stride_a, p.stride_b); }

CallShape tight_call(const Problem& problem) {
  const Layout t = timing_layout(problem);
  const int64_t bytes = dtype_bytes(problem.dtype);   // strides count elements
  const auto bits =
      static_cast<unsigned long long>(256 | (t.stride_a * bytes) | (t.stride_b * bytes) | (t.stride_c * bytes));
  Problem p = problem;
  p.stride_a = t.stride_a, p.stride_b = t.stride_b, p.stride_c = t.stride_c;
  return {p, t.lda, t.ldb, t.ldc, rules::alignment_of_bits(bits)};
}


bool requirements_met(const Requirements& r, const CallShape& call) {
  return rules::requirements_met(r.align_bytes, r.ld_multiple, call.lda, call.ldb, call.ldc, call.alignment);
}

DispatchChoice choose_class_kernel(const ExportModel& model, size_t device, const CallShape& call) {
  DispatchChoice c;
  const Problem& p = call.problem;
  c.dtype = p.dtype;
  const int layout = rules::layout_index(p.trans_a, p.trans_b);
  const int dtype = static_cast<int>(p.dtype);
  const std::vector<KernelServes> serving = serving_of(model);
  const auto serves = [&](int kernel) {
    const KernelServes& k = serving.at(static_cast<size_t>(kernel));
    return rules::kernel_serves(k.layout, k.batched, k.dtype, layout, p.batch, dtype);
  };
  const int generic = rules::generic_kernel(model.generic_kernels, k_header_dtypes, serving.data(), dtype, layout, p.batch);
  c.kernel = generic;
  if (device >= model.devices.size()) {
    c.served = false;
    c.reason = rules::dispatch_reason_name(rules::DispatchReason::no_table);
    c.why = c.kernel >= 0 ? "nothing tuned for this device: the generic default kernel runs"
                          : fmt::format("nothing tuned for this device, and no generic kernel computes this layout and "
                                        "batch in {}",
                                        dtype_name(p.dtype));
    return c;
  }
  const ExportDevice& dev = model.devices[device];
  c.served = serves_on(dev, serving, dtype, layout, p.batch);
  const auto usable = [&](int kernel) {
    return serves(kernel) && requirements_met(model.kernels.at(static_cast<size_t>(kernel)).requirements, call);
  };
  std::vector<KernelTiles> tiles;
  for (const auto& k : model.kernels)
    tiles.push_back({static_cast<int>(k.shape.tile_m), static_cast<int>(k.shape.tile_n), static_cast<int>(k.shape.grid_z),
                     static_cast<int>(k.shape.problems_per_block)});

  for (const auto& m : dev.models) {
    // Kernels of other types compute other problems: not even runners-up.
    if (model.kernels.at(static_cast<size_t>(m.kernel)).dtype != p.dtype) continue;
    Prediction pr;
    pr.kernel = m.kernel;
    pr.us = rules::model_us(m, tiles.data(), dev.sm_count, p.m, p.n, p.k, p.batch);
    pr.usable = usable(m.kernel);
    pr.in_domain = rules::in_model_domain(m, p.m, p.n, p.k, rules::domain_factor(0));
    c.predictions.push_back(pr);
  }
  std::stable_sort(c.predictions.begin(), c.predictions.end(), [](const Prediction& a, const Prediction& b) {
    if (a.usable != b.usable) return a.usable;
    if (a.in_domain != b.in_domain) return a.in_domain;
    return a.us < b.us;
  });

  std::vector<EntryKey> keys;
  for (const auto& entry : dev.entries) keys.push_back(entry_key(entry.problem));
  const EntryKey call_key = entry_key(p);
  const int e = rules::exact_entry(keys.data(), static_cast<int>(keys.size()), p.m, p.n, p.k, layout, p.batch,
                                   call_key.problem.broadcast, dtype);
  if (e >= 0) {
    const ExportEntry& entry = dev.entries[static_cast<size_t>(e)];
    c.exact = true;
    const bool met = usable(entry.primary);
    c.kernel = rules::entry_kernel(entry.primary, met, entry.portable, generic);
    c.modelled_us = rules::kernel_model_us(dev.models.data(), static_cast<int>(dev.models.size()), tiles.data(),
                                           dev.sm_count, c.kernel, p.m, p.n, p.k, p.batch);
    c.portable_fallback = !met;
    c.reason = rules::dispatch_reason_name(rules::entry_reason(met, entry.portable));
    if (met) {
      c.why = "tuned for this problem: its measured winner runs";
    } else {
      c.why = fmt::format("tuned for this problem, but the call misses the winner's requirements ({}), so the best "
                          "kernel without requirements runs",
                          model.kernels.at(static_cast<size_t>(entry.primary)).requirements.to_string());
      if (entry.portable < 0) c.why += " (none was tuned: the generic default kernel runs)";
    }
    return c;
  }

  double us = 0;
  int pass = 0;
  const int best = rules::best_predicted(dev.models.data(), static_cast<int>(dev.models.size()), tiles.data(),
                                         dev.sm_count, p.m, p.n, p.k, p.batch, usable, &us, &pass);
  if (best < 0) {
    const rules::DispatchReason reason = rules::fallback_reason(
        c.served, rules::models_serve(dev.models.data(), static_cast<int>(dev.models.size()), serving.data(), dtype,
                                      layout, p.batch));
    c.reason = rules::dispatch_reason_name(reason);
    c.modelled_us = rules::kernel_model_us(dev.models.data(), static_cast<int>(dev.models.size()), tiles.data(),
                                           dev.sm_count, generic, p.m, p.n, p.k, p.batch);
    const std::string outcome = generic >= 0 ? "generic default" : "refused (no generic kernel computes it either)";
    const std::string what = fmt::format("{}{} {}", p.batch > 1 ? "batched " : "", dtype_name(p.dtype), p.layout());
    if (reason == rules::DispatchReason::not_served)
      c.why = not_served_why(p, p.batch > 1 && serves_on(dev, serving, dtype, layout, 1), generic >= 0);
    else if (reason == rules::DispatchReason::not_modelled)
      c.why = fmt::format("{}: tuned kernels compute {}, but none has a cost model on this device", outcome, what);
    else
      c.why = fmt::format("{}: the call misses the requirements of every modelled kernel that computes {}", outcome,
                          what);
    return c;
  }
  const ExportKernelModel& m = dev.models[static_cast<size_t>(best)];
  c.kernel = m.kernel;
  c.predicted_us = us;
  c.modelled_us = us;
  c.reason = rules::dispatch_reason_name(rules::DispatchReason::predicted);
  // Split K where the unsplit kernel leaves SMs idle and slices are predicted faster.
  const auto usable_slices = [&](int kernel, int splits) {
    const Requirements& r = model.kernels.at(static_cast<size_t>(kernel)).requirements;
    const KernelServes& s = serving.at(static_cast<size_t>(kernel));
    return rules::slices_usable(s.layout, s.batched, s.dtype, r.align_bytes, r.ld_multiple, layout, dtype,
                                call.alignment, p.m, p.n, p.k, call.lda, call.ldb, splits);
  };
  double split_us = 0;
  const int split = rules::best_split(dev.models.data(), static_cast<int>(dev.models.size()), tiles.data(), dev.sm_count,
                                      dev.bytes_per_us, rules::dtype_bytes_of(dtype), p.m, p.n, p.k, p.batch, best, us,
                                      usable_slices, &c.splits, &split_us);
  if (split >= 0) {
    c.kernel = dev.models[static_cast<size_t>(split)].kernel;
    c.predicted_us = split_us;
    c.modelled_us = split_us;
    c.why = fmt::format("not tuned: K split into {} slices of {} (a strided batch, then their sum), predicted {:.0f}% "
                        "faster than the best unsplit kernel, which leaves SMs idle",
                        c.splits, p.k / c.splits, 100.0 * (us / split_us - 1.0));
    return c;
  }
  const long long factor = rules::domain_factor(pass);
  c.why = factor > 0 ? fmt::format("not tuned: least predicted time of the kernels measured within {}x of this shape "
                                   "in each dimension",
                                   factor)
                     : "not tuned: least predicted time of every kernel (none was measured within 64x of this "
                       "shape, so every model extrapolates)";
  return c;
}

DispatchChoice choose_kernel(const ExportModel& model, size_t device, const CallShape& call) {
  const int storage = rules::opt_in_storage(static_cast<int>(call.problem.dtype));
  if (storage < 0) return choose_class_kernel(model, device, call);
  // An opted-in call: the class's choice where it is predicted faster than its storage type's.
  const DispatchChoice opted = choose_class_kernel(model, device, call);
  CallShape base_call = call;
  base_call.problem.dtype = static_cast<DType>(storage);
  const DispatchChoice base = choose_class_kernel(model, device, base_call);
  const bool runs_class = rules::opt_in_runs_class(opted.kernel, opted.modelled_us, base.kernel, base.modelled_us);
  DispatchChoice c = runs_class ? opted : base;
  c.served = opted.served || base.served;
  c.predictions = opted.predictions;
  c.predictions.insert(c.predictions.end(), base.predictions.begin(), base.predictions.end());
  std::stable_sort(c.predictions.begin(), c.predictions.end(), [](const Prediction& a, const Prediction& b) {
    if (a.usable != b.usable) return a.usable;
    if (a.in_domain != b.in_domain) return a.in_domain;
    return a.us < b.us;
  });
  const std::string cls(dtype_name(call.problem.dtype)), st(dtype_name(base_call.problem.dtype));
  const auto label = [&](int kernel) {
    const ExportKernel& k = model.kernels.at(static_cast<size_t>(kernel));
    return kernel_label(k.template_name, k.params);
  };
  if (runs_class) {
    std::string against;
    if (base.kernel < 0)
      against = fmt::format("no {} kernel computes the call", st);
    else if (base.modelled_us < 0)
      against = fmt::format("the {} path's {} has no prediction", st, label(base.kernel));
    else
      against = fmt::format("predicted {:.1f} us against {:.1f} us for the {} path's {}", opted.modelled_us,
                            base.modelled_us, st, label(base.kernel));
    c.why = fmt::format("{} (opted in): {}; {}", cls, opted.why, against);
    return c;
  }
  const Problem& p = call.problem;
  std::string why_not;
  if (opted.kernel >= 0 && opted.modelled_us >= 0)
    why_not = fmt::format("its {} kernel {} is predicted slower, {:.1f} us against {:.1f} us", cls, label(opted.kernel),
                          opted.modelled_us, base.modelled_us);
  else if (opted.kernel >= 0)
    why_not = fmt::format("its {} kernel {} has no prediction", cls, label(opted.kernel));
  else if (opted.reason == rules::dispatch_reason_name(rules::DispatchReason::no_table))
    why_not = "nothing is tuned for this device";
  else if (opted.reason == rules::dispatch_reason_name(rules::DispatchReason::not_served))
    why_not = fmt::format("no tuned {} kernel of this table computes {}{}", cls, p.batch > 1 ? "batched " : "", p.layout());
  else if (opted.reason == rules::dispatch_reason_name(rules::DispatchReason::not_modelled))
    why_not = fmt::format("no {} kernel that computes it has a cost model", cls);
  else
    why_not = fmt::format("the call misses the requirements of every {} kernel that computes it", cls);
  c.why = fmt::format("the {} path (opted in to {}, but {}): {}", st, cls, why_not, base.why);
  return c;
}

bool table_serves(const ExportModel& model, size_t device, DType dtype, std::string_view layout, bool batched) {
  return serves_on(model.devices.at(device), serving_of(model), static_cast<int>(dtype), layout_number(layout),
                   batched ? 2 : 1);
}

std::string unserved_calls(const ExportModel& model, size_t device) {
  const ExportDevice& dev = model.devices.at(device);
  const std::vector<KernelServes> serving = serving_of(model);
  std::vector<std::string> parts, unserved_types;
  for (int d = 0; d < k_header_dtypes; ++d) {
    std::vector<std::string> layouts;
    bool any_served = false;
    for (int l = 0; l < 4; ++l) {
      const std::string name(k_layout_names[static_cast<size_t>(l)]);
      if (!serves_on(dev, serving, d, l, 1)) {
        layouts.push_back(name);
        continue;
      }
      any_served = true;
      if (!serves_on(dev, serving, d, l, 2)) layouts.push_back(name + " batched");
    }
    const std::string type(dtype_name(static_cast<DType>(d)));
    if (!any_served) {
      unserved_types.push_back(type);
    } else if (!layouts.empty()) {
      std::string part = type + " ";
      for (size_t i = 0; i < layouts.size(); ++i) part += (i ? ", " : "") + layouts[i];
      parts.push_back(part);
    }
  }
  if (!unserved_types.empty()) {
    std::string part;
    for (size_t i = 0; i < unserved_types.size(); ++i) part += (i ? ", " : "") + unserved_types[i];
    parts.push_back(part + " (any layout)");
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

std::vector<DispatchEntry> dispatch_entries(Store& store, int64_t device_id) {
  std::map<Problem, DispatchEntry> by_problem;
  std::map<Problem, WinnerRecord> portable;
  for (auto& w : store.winners(device_id)) {
    if (w.scope == "overall") {
      DispatchEntry& e = by_problem[w.problem];
      e.problem = w.problem;
      e.primary = w;
    } else if (w.scope == "portable") {
      portable[w.problem] = w;
    }
  }
  std::vector<DispatchEntry> out;
  for (auto& [p, e] : by_problem) {
    if (auto it = portable.find(p); it != portable.end()) e.portable = it->second;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cmt
