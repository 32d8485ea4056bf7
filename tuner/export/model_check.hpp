// The cost model checked on data it was not fitted on (docs/EXPORT.md, "How far to trust the
// predictions"): leave one shape out. For each measured problem P of a device table, every exported
// kernel's model is refitted without P's trials (fit_kernel_model, the same points and weights), and
// the dispatch rules (choose_class_kernel, as if P had not been tuned) choose a kernel at P from the refitted
// models. The held-out predictions are compared with the kernels' measured times at P, and the chosen
// kernel's measured time with the fastest exported kernel's: the regret.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "export/export_model.hpp"

namespace cmt {

/// One kernel's model refitted without a problem, against its measured time there.
struct HeldOutPoint {
  int kernel = 0;              // index into ExportModel::kernels
  double predicted_us = 0;     // by its model fitted on its other problems
  double measured_us = 0;      // its fastest passing trial at the problem (the time the fit reads)
  double relative_error = 0;   // |predicted - measured| / measured
};

/// One measured problem of a device table, left out.
struct HeldOutProblem {
  Problem problem;
  /// The kernel the dispatch runs at the problem had it not been tuned, from the refitted models;
  /// -1: no kernel computes it.
  int chosen = -1;
  std::optional<double> chosen_predicted_us;   // nullopt: no model chose it (the generic default runs)
  std::optional<double> chosen_us;             // its measured time there; nullopt: not measured there
  std::optional<double> chosen_error;          // its held-out model's relative error there
  int best = -1;                               // the fastest exported kernel measured there
  double best_us = 0;
  std::optional<double> regret;                // chosen_us / best_us; nullopt when chosen_us is
  std::vector<HeldOutPoint> points;            // every kernel measured there that has a held-out model
};

/// Median, 90th percentile and maximum of a list (linear interpolation between order statistics).
struct Spread {
  size_t count = 0;   // 0: the other fields mean nothing
  double median = 0;
  double p90 = 0;
  double max = 0;
};
Spread spread_of(std::vector<double> values);

/// The check of one device table and element type.
struct HeldOutCheck {
  size_t device = 0;                     // index into ExportModel::devices
  DType dtype = DType::f32;
  std::vector<HeldOutProblem> problems;  // every problem some exported kernel of this type was measured on, sorted
  Spread model_error;                    // over every held-out point of every problem
  Spread regret;                         // over the problems whose chosen kernel was measured there
  size_t unmeasured_choices = 0;         // problems whose chosen kernel was not measured there (no regret)
  /// Per kernel, the median relative error of its held-out predictions (over the problems it was
  /// measured on and has a model without).
  std::map<int, Spread> kernel_error;
};

/// Leave-one-shape-out over every device table of the model, one check per table and element type
/// (tables in order, types in DType order). Reads only the model (its devices' model_points).
std::vector<HeldOutCheck> check_held_out(const ExportModel& model);

/// The check's summary line, as `export` prints it and `report` shows it: "held-out check (leave one
/// shape out, N shapes): model error median ..., 90th pct ..., max ...; dispatch regret median ...",
/// prefixed by the table's device where the model has several tables, and by the element type where
/// the table has several checks or its type is not f32.
std::string held_out_summary(const ExportModel& model, const std::vector<HeldOutCheck>& checks, const HeldOutCheck& c);

/// The held-out points of one kernel on device table `device`: its model refitted without each
/// problem it was measured on (none where that leaves no points), predicting that problem. What
/// `query` reports beside a prediction.
std::vector<HeldOutPoint> kernel_held_out(const ExportModel& model, size_t device, int kernel);

}  // namespace cmt
