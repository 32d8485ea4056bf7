#include "export/model_check.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <set>
#include <stdexcept>

#include "core/dtype.hpp"
#include "export/cost_model.hpp"
#include "export/dispatch.hpp"

namespace cmt {

namespace {

/// "NVIDIA H100 80GB HBM3, f64 " where the model has several tables or the table several types or
/// one other than f32; empty otherwise.
std::string check_label(const ExportModel& model, const std::vector<HeldOutCheck>& checks, const HeldOutCheck& c) {
  const bool types = c.dtype != DType::f32 || std::count_if(checks.begin(), checks.end(), [&](const HeldOutCheck& x) {
                                                 return x.device == c.device;
                                               }) > 1;
  std::string label;
  if (model.devices.size() > 1) label = model.devices[c.device].name;
  if (types) label += (label.empty() ? "" : ", ") + std::string(dtype_name(c.dtype));
  return label.empty() ? "" : label + " ";
}

/// A kernel's measured time at a problem: the fastest of its points there, as the fit keeps it.
std::optional<double> measured_at(const std::vector<ModelPoint>& points, const Problem& p) {
  std::optional<double> us;
  for (const ModelPoint& point : points)
    if (point.problem == p && (!us || point.us < *us)) us = point.us;
  return us;
}

/// Model `i` of a table fitted on its points without p's, as export fits it (same points, weights and
/// occupancy); nullopt when p was its only problem.
std::optional<ExportKernelModel> refit_without(const ExportModel& model, const ExportDevice& dev, size_t i,
                                               const Problem& p) {
  std::vector<ModelPoint> rest;
  for (const ModelPoint& point : dev.model_points[i])
    if (!(point.problem == p)) rest.push_back(point);
  if (rest.empty()) return std::nullopt;
  const ExportKernelModel& m = dev.models[i];
  return fit_kernel_model(std::move(rest), model.kernels.at(static_cast<size_t>(m.kernel)).shape, m.kernel,
                          m.blocks_per_sm, dev.sm_count);
}

HeldOutPoint held_out_point(const ExportModel& model, const ExportDevice& dev, const ExportKernelModel& held,
                            const Problem& p, double measured_us) {
  HeldOutPoint point;
  point.kernel = held.kernel;
  point.predicted_us = predict_us(held, model.kernels.at(static_cast<size_t>(held.kernel)).shape, dev.sm_count, p);
  point.measured_us = measured_us;
  point.relative_error = std::fabs(point.predicted_us - measured_us) / measured_us;
  return point;
}

const ExportDevice& device_of(const ExportModel& model, size_t device) {
  const ExportDevice& dev = model.devices.at(device);
  if (dev.model_points.size() != dev.models.size())
    throw std::logic_error("the held-out check needs the points every model was fitted on (build_export_model)");
  return dev;
}

}  // namespace

Spread spread_of(std::vector<double> values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
  };
  s.median = quantile(0.5);
  s.p90 = quantile(0.9);
  s.max = values.back();
  return s;
}

std::vector<HeldOutCheck> check_held_out(const ExportModel& model) {
  std::vector<HeldOutCheck> checks;
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = device_of(model, d);
    // The table the dispatch would see with P untuned: no entries (only an entry of P itself could
    // decide a call of P), and each model as fitted without P.
    ExportModel work;
    work.kernels = model.kernels;
    for (int t = 0; t < k_header_dtypes; ++t)
      std::copy(std::begin(model.generic_kernels[t]), std::end(model.generic_kernels[t]), std::begin(work.generic_kernels[t]));
    ExportDevice table;
    table.name = dev.name;
    table.cc_major = dev.cc_major;
    table.cc_minor = dev.cc_minor;
    table.sm_count = dev.sm_count;
    work.devices.push_back(table);
    std::vector<ExportKernelModel>& models = work.devices[0].models;

    std::set<Problem> problems;
    for (const auto& points : dev.model_points)
      for (const ModelPoint& point : points) problems.insert(point.problem);
    std::map<DType, HeldOutCheck> by_type;
    std::map<DType, std::map<int, std::vector<double>>> kernel_errors;
    for (const Problem& p : problems) {
      HeldOutProblem out;
      out.problem = p;
      std::map<int, double> measured;   // by kernel
      models.clear();
      for (size_t i = 0; i < dev.models.size(); ++i) {
        const auto us = measured_at(dev.model_points[i], p);
        if (!us) {
          models.push_back(dev.models[i]);   // fitted on the same points without P: the same model
          continue;
        }
        measured[dev.models[i].kernel] = *us;
        if (const auto held = refit_without(model, dev, i, p)) {
          models.push_back(*held);
          out.points.push_back(held_out_point(model, dev, *held, p, *us));
        }
      }
      // Among P's own type's kernels: a class's check judges its models, not its fallback to the
      // storage type's kernels, which were measured on other problems.
      const DispatchChoice choice = choose_class_kernel(work, 0, tight_call(p));
      out.chosen = choice.kernel;
      out.chosen_predicted_us = choice.predicted_us;
      for (const auto& [kernel, us] : measured)
        if (out.best < 0 || us < out.best_us) out.best = kernel, out.best_us = us;
      if (const auto it = measured.find(out.chosen); out.chosen >= 0 && it != measured.end()) {
        out.chosen_us = it->second;
        out.regret = it->second / out.best_us;
      }
      for (const HeldOutPoint& point : out.points) {
        if (point.kernel == out.chosen) out.chosen_error = point.relative_error;
        kernel_errors[p.dtype][point.kernel].push_back(point.relative_error);
      }
      HeldOutCheck& check = by_type[p.dtype];
      check.device = d;
      check.dtype = p.dtype;
      check.problems.push_back(std::move(out));
    }
    for (auto& [dtype, check] : by_type) {
      std::vector<double> errors, regrets;
      for (const HeldOutProblem& hp : check.problems) {
        for (const HeldOutPoint& point : hp.points) errors.push_back(point.relative_error);
        if (hp.regret)
          regrets.push_back(*hp.regret);
        else
          ++check.unmeasured_choices;
      }
      check.model_error = spread_of(std::move(errors));
      check.regret = spread_of(std::move(regrets));
      for (auto& [kernel, errs] : kernel_errors[dtype]) check.kernel_error[kernel] = spread_of(std::move(errs));
      checks.push_back(std::move(check));
    }
  }
  return checks;
}

std::vector<HeldOutPoint> kernel_held_out(const ExportModel& model, size_t device, int kernel) {
  const ExportDevice& dev = device_of(model, device);
  std::vector<HeldOutPoint> out;
  for (size_t i = 0; i < dev.models.size(); ++i) {
    if (dev.models[i].kernel != kernel) continue;
    std::set<Problem> problems;
    for (const ModelPoint& point : dev.model_points[i]) problems.insert(point.problem);
    for (const Problem& p : problems)
      if (const auto held = refit_without(model, dev, i, p))
        out.push_back(held_out_point(model, dev, *held, p, *measured_at(dev.model_points[i], p)));
  }
  return out;
}

std::string held_out_summary(const ExportModel& model, const std::vector<HeldOutCheck>& checks, const HeldOutCheck& c) {
  if (c.model_error.count == 0 && c.regret.count == 0)
    return fmt::format("{}held-out check (leave one shape out, {} shape{}): no kernel was measured at two of them, so "
                       "there is nothing to check",
                       check_label(model, checks, c), c.problems.size(), c.problems.size() == 1 ? "" : "s");
  const std::string error =
      c.model_error.count == 0
          ? "model error: no kernel was measured at two shapes"
          : fmt::format("model error median {:.1f}%, 90th pct {:.1f}%, max {:.1f}%", 100 * c.model_error.median,
                        100 * c.model_error.p90, 100 * c.model_error.max);
  const std::string regret = c.regret.count == 0 ? "dispatch regret: no chosen kernel was measured where it was chosen"
                                                 : fmt::format("dispatch regret median {:.2f}, 90th pct {:.2f}, max {:.2f}",
                                                               c.regret.median, c.regret.p90, c.regret.max);
  const std::string unmeasured =
      c.unmeasured_choices == 0 ? ""
                                : fmt::format(" ({} shape{}: the chosen kernel was not measured there)",
                                              c.unmeasured_choices, c.unmeasured_choices == 1 ? "" : "s");
  return fmt::format("{}held-out check (leave one shape out, {} shape{}): {}; {}{}", check_label(model, checks, c),
                     c.problems.size(), c.problems.size() == 1 ? "" : "s", error, regret, unmeasured);
}

}  // namespace cmt
