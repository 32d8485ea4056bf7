// Fitting the dispatch's cost model (docs/EXPORT.md, "How the dispatch predicts"): per kernel and
// device, the coefficients of the features in export/runtime/dispatch_rules.h, from the kernel's
// measured trials. The header carries the fitted coefficients; nothing is fitted at run time.
#pragma once

#include <vector>

#include "core/types.hpp"
#include "export/export_model.hpp"

namespace cmt {

/// (ModelPoint, one measurement a model is fitted on, is in export/export_model.hpp: devices keep them.)

/// Fits one kernel's model to its points (at least one; several of one problem keep the fastest).
/// Non-negative coefficients minimising the weighted squared relative error, over every subset of the
/// features; the subset with the best Akaike score wins (a term must earn its place), ties to the
/// smaller subset. `kernel` and `blocks_per_sm` are copied into the result.
ExportKernelModel fit_kernel_model(std::vector<ModelPoint> points, const LaunchShape& shape, int kernel,
                                   int blocks_per_sm, int sm_count);

/// The model's predicted microseconds for a kernel of this launch shape at a problem.
double predict_us(const ExportKernelModel& model, const LaunchShape& shape, int sm_count, const Problem& problem);

}  // namespace cmt
