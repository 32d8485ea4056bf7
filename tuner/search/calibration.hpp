// Calibration: after the requested problems are tuned, their leading kernels (and the families
// that serve only some shapes, such as GEMV-like ones), and their builds of every other layout, are
// measured on a small set of shapes of every class, layout and batch, so the exported dispatch's
// cost model (export/cost_model.hpp) is fitted on shapes unlike the requested ones too, and one
// tune serves every layout and batch. Which shapes and which kernels is decided here (the search
// stage: what to measure); the driver (tune/tuner.cpp) measures them in passes like any other problem.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "space/space.hpp"
#include "space/target.hpp"
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

/// The calibration shapes for a set of requested problems, per element type they have (each type's
/// from its own problems): a few per class, scaled to the range of the requested problems' sizes
/// (their cube roots of M*N*K, kept within 64..8192), without the requested problems themselves;
/// in every layout, the requested ones first, with up to five requested shapes again in each layout
/// not requested (class "layouts"); and strided batches in every layout (of the requested batched
/// problems' sizes and counts, or without any, matrices of 32 to 512 in batches of 16 to 4096;
/// ragged and aligned sizes, one with B broadcast). The whole-space searches stay in the requested layouts. Deterministic: the
/// same problems give the same shapes.
std::vector<CalibrationShape> calibration_shapes(const std::vector<Problem>& requested);

/// A candidate calibration measures. A leader is measured on every calibration shape, also where
/// its family's `applies` is false: the exported dispatch may run it at any shape, so its model
/// must see the shapes it does not serve well.
struct CalibrationCandidate {
  size_t index = 0;   // into the candidates
  bool leader = false;
};

/// Which candidates calibration measures: of each requested problem's passing trials, best first
/// (`ranked_per_problem`: the one ranking's order, record/ranking.hpp, which the driver applies), the
/// `leaders` first and the first without input requirements (leaders); and every
/// shape-specific candidate: of a family that declares `applies`, one that does not apply to some
/// requested problem (it serves only some shapes, and is measured where it applies; a candidate
/// that applies to every requested problem was measured on them, and leads or not as any other).
/// Sorted by index, each once.
std::vector<CalibrationCandidate> calibration_candidates(const std::vector<std::vector<TrialRecord>>& ranked_per_problem,
                                                         const std::vector<Candidate>& candidates, int leaders,
                                                         const std::vector<Problem>& requested, const Target& target);

/// What calibration measures after the whole-space shapes: the candidates calibration_candidates
/// chooses, then their builds of every other layout the shapes (not full_search) have
/// (layout_variant, for a target of every layout), each once, with whether each is measured also
/// where its family does not apply (a leader and its builds); and those shapes, but for the ones none
/// of the candidates computes (a layout or batch no chosen family takes).
struct CalibrationPlan {
  std::vector<Candidate> candidates;
  std::vector<bool> ignore_applies;   // parallel to candidates
  std::vector<Problem> problems;
};
CalibrationPlan calibration_plan(const std::vector<CalibrationShape>& shapes,
                                 const std::vector<std::vector<TrialRecord>>& ranked_per_problem,
                                 const std::vector<Candidate>& candidates, int leaders,
                                 const std::vector<Problem>& requested, const Target& target);

}  // namespace cmt
