// Calibration: after the requested problems are tuned, their leading kernels (and the families
// that serve only some shapes, such as GEMV-like ones) are measured on a small set of shapes of
// every class, so the exported dispatch's cost model (export/cost_model.hpp) is fitted on shapes
// unlike the requested ones too. Which shapes and which kernels is decided here; run_tune measures
// them like any other problem.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "space/space.hpp"
#include "store/records.hpp"

namespace cmt {

/// A calibration shape and the class it stands for.
struct CalibrationShape {
  Problem problem;
  std::string shape_class;   // "ragged", "rectangular", "skinny", "small-k", "large-k", "tiny", "batched"
  /// Searched over the whole space, not only the leaders: two mid-range ragged squares, whose
  /// best tiles (shapes that fit the SMs off every power of two) the requested squares never find.
  bool full_search = false;
};

/// The calibration shapes for a set of requested problems: a few per class, scaled to the range of
/// the requested problems' sizes (their cube roots of M*N*K, kept within 64..8192), without the
/// requested problems themselves. Deterministic: the same problems give the same shapes. Only the
/// f32 problems count (the exported header, whose cost model this feeds, dispatches FP32 only): a
/// run of f64 or i32 problems alone has no calibration shapes.
std::vector<CalibrationShape> calibration_shapes(const std::vector<Problem>& requested);

/// A candidate calibration measures. A leader is measured on every calibration shape, also where
/// its family's `applies` is false: the exported dispatch may run it at any shape, so its model
/// must see the shapes it does not serve well.
struct CalibrationCandidate {
  size_t index = 0;   // into the candidates
  bool leader = false;
};

/// Which candidates calibration measures: of each requested problem's passing trials, the
/// `leaders` best (tune/ranking.hpp) and the best without input requirements (leaders); and every
/// candidate of a family that declares `applies` (it serves only some shapes, and is measured
/// where it applies). Sorted by index, each once.
std::vector<CalibrationCandidate> calibration_candidates(const std::vector<std::vector<TrialRecord>>& trials_per_problem,
                                                         const std::vector<Candidate>& candidates, int leaders);

}  // namespace cmt
