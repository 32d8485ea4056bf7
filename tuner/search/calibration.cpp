#include "search/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>


namespace cmt {

namespace {

constexpr int64_t k_min_scale = 64;
constexpr int64_t k_max_scale = 8192;
/// Requested shapes measured again in each layout that was not requested.
constexpr size_t k_transposed_requested = 5;
/// Batches when no batched problem is requested: matrices of 32 to 512, in batches of 16 to 4096.
constexpr int64_t k_default_batch_lo = 16, k_default_batch_hi = 4096;
constexpr int64_t k_default_batch_size_lo = 32, k_default_batch_size_hi = 512;

/// n rounded to a multiple of 16, at least 16.
int64_t round16(double n) { return std::max<int64_t>(16, static_cast<int64_t>(std::llround(n / 16.0)) * 16); }

/// The cube root of M*N*K: the size of the square problem of the same work.
double scale_of(const Problem& p) {
  return std::cbrt(static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k));
}

/// Up to `count` of the problems, spread evenly over their scales (smallest and largest included).
std::vector<Problem> spread_by_scale(std::vector<Problem> problems, size_t count) {
  std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) { return scale_of(a) < scale_of(b); });
  if (problems.size() <= count) return problems;
  std::vector<Problem> out;
  for (size_t i = 0; i < count; ++i) out.push_back(problems[i * (problems.size() - 1) / (count - 1)]);
  return out;
}

/// The calibration shapes of the requested problems of one element type.
std::vector<CalibrationShape> shapes_of_type(const std::vector<Problem>& requested) {
  const DType dtype = requested.front().dtype;
  double lo_scale = 1e30, hi_scale = 0;
  for (const auto& p : requested) {
    lo_scale = std::min(lo_scale, scale_of(p));
    hi_scale = std::max(hi_scale, scale_of(p));
  }
  const int64_t lo = std::clamp<int64_t>(round16(lo_scale), k_min_scale, k_max_scale);
  const int64_t hi = std::clamp<int64_t>(round16(hi_scale), lo, k_max_scale);
  const int64_t mid = round16(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi)));

  // Every layout gets the same shapes, the requested problems' layouts first: a header serves the
  // calls of every layout, and a layout that was not tuned is fitted on what calibration measures
  // of it (the leaders' builds of that layout). The whole-space searches stay in the requested
  // layouts.
  std::vector<std::pair<bool, bool>> layouts, requested_layouts;
  for (const auto& p : requested)
    if (std::find(layouts.begin(), layouts.end(), std::make_pair(p.trans_a, p.trans_b)) == layouts.end())
      layouts.emplace_back(p.trans_a, p.trans_b);
  requested_layouts = layouts;
  for (const std::string_view l : k_layout_names)
    if (std::find(layouts.begin(), layouts.end(), std::make_pair(l[0] == 't', l[1] == 't')) == layouts.end())
      layouts.emplace_back(l[0] == 't', l[1] == 't');
  std::vector<CalibrationShape> out;
  const auto add = [&](int64_t m, int64_t n, int64_t k, const char* shape_class, bool full_search = false,
                       int64_t batch = 1, bool broadcast_b = false) {
    for (const auto& [ta, tb] : layouts) {
      const bool requested_layout =
          std::find(requested_layouts.begin(), requested_layouts.end(), std::make_pair(ta, tb)) != requested_layouts.end();
      Problem p = Problem::make(std::max<int64_t>(m, 1), std::max<int64_t>(n, 1), std::max<int64_t>(k, 1), ta, tb, batch, dtype);
      if (broadcast_b) p.stride_b = 0;
      if (std::find(requested.begin(), requested.end(), p) != requested.end()) continue;
      if (std::any_of(out.begin(), out.end(), [&](const auto& s) { return s.problem == p; })) continue;
      out.push_back({p, shape_class, full_search && requested_layout});
    }
  };
  // Ragged squares: between the smallest and the largest scale, off every tile multiple, and one
  // just past the largest (a last tile row and column of one).
  for (const double f : {0.0, 0.25, 0.5, 0.75}) {
    const double s = std::exp(std::log(static_cast<double>(lo)) + f * (std::log(static_cast<double>(hi)) - std::log(static_cast<double>(lo))));
    const int64_t n = round16(s * 1.09) + 3;
    add(n, n, n, "ragged", f >= 0.5);
  }
  add(hi + 1, hi + 1, hi + 1, "ragged");
  // Rectangles: one short dimension at a time, and a wide output over a short K.
  add(mid, hi, hi, "rectangular");
  add(hi, mid, hi, "rectangular");
  add(hi, hi, mid, "rectangular");
  add(lo, 2 * hi, hi, "rectangular");
  // GEMV-like: a few rows or columns over a long K.
  add(1, hi, hi, "skinny");
  add(8, hi, hi / 2, "skinny");
  add(hi, 1, hi, "skinny");
  add(hi, 8, hi / 2, "skinny");
  add(24, hi, hi, "skinny");
  // Small K: the time goes into writing C.
  add(hi, hi, 1, "small-k");
  add(hi, hi, 12, "small-k");
  add(2 * hi, hi, 64, "small-k");
  // Large K with a small output: too few tiles for the SMs unless K is split.
  add(lo + 32, lo, 12 * hi, "large-k");
  add(2 * lo, lo, 4 * hi, "large-k");
  add(mid, mid, 4 * hi, "large-k");
  // Tiny: launch-bound.
  add(lo / 4, lo / 4, lo / 4, "tiny");
  add(lo / 8 + 7, lo / 16 + 3, lo / 4 + 9, "tiny");
  // The requested shapes themselves in the layouts that were not requested (a few, spread over
  // their scales): the calls a project makes most often, in its other layouts.
  std::vector<Problem> unbatched;
  for (const auto& p : requested)
    if (p.batch == 1) unbatched.push_back(p);
  for (const Problem& p : spread_by_scale(unbatched, k_transposed_requested)) add(p.m, p.n, p.k, "layouts");
  // Batches: ragged matrices between their smallest and largest per-matrix size, the small ones in
  // the largest batch and the large ones in the smallest, a flat rectangle, and B broadcast. The
  // sizes and counts of the requested batched problems; without any, 32 to 512 (at most an eighth
  // of the largest scale) in batches of 16 to 4096, so that an unbatched tune serves batches too.
  int64_t b_lo = 0, b_hi = 0;
  double s_lo = 1e30, s_hi = 0;
  for (const auto& p : requested) {
    if (p.batch < 2) continue;
    b_lo = b_lo == 0 ? p.batch : std::min(b_lo, p.batch);
    b_hi = std::max(b_hi, p.batch);
    s_lo = std::min(s_lo, scale_of(p));
    s_hi = std::max(s_hi, scale_of(p));
  }
  if (b_hi == 0) {
    b_lo = k_default_batch_lo;
    b_hi = k_default_batch_hi;
    s_lo = static_cast<double>(k_default_batch_size_lo);
    s_hi = static_cast<double>(std::clamp<int64_t>(hi / 8, k_default_batch_size_lo, k_default_batch_size_hi));
  }
  // Ragged sizes (off every multiple of 4) and aligned ones (multiples of 16): kernels that read 16
  // bytes at a time run only on the aligned, and need batched measurements as much as the others.
  const auto ragged = [](double size) { return std::clamp<int64_t>(std::llround(size * 1.09) + 3, 8, 2048); };
  const auto aligned = [](double size) { return std::clamp<int64_t>(round16(size), 16, 2048); };
  const double s_mid = std::sqrt(s_lo * s_hi);
  const int64_t b_mid = std::max<int64_t>(2, std::llround(std::sqrt(static_cast<double>(b_lo) * static_cast<double>(b_hi))));
  b_hi = std::max<int64_t>(b_hi, 2);
  b_lo = std::max<int64_t>(b_lo, 2);
  add(ragged(s_lo), ragged(s_lo), ragged(s_lo), "batched", false, b_hi);
  add(aligned(s_lo), aligned(s_lo), aligned(s_lo), "batched", false, b_hi);
  add(ragged(s_mid), ragged(s_mid), ragged(s_mid), "batched", false, b_mid);
  add(ragged(s_hi), ragged(s_hi), ragged(s_hi), "batched", false, b_lo);
  add(aligned(s_hi), aligned(s_hi), aligned(s_hi), "batched", false, b_lo);
  add(aligned(2 * s_mid), aligned(2 * s_mid), aligned(s_mid / 2), "batched", false, b_mid);
  add(aligned(s_mid), aligned(s_mid), aligned(s_mid), "batched", false, b_mid, true);
  return out;
}

}  // namespace

std::vector<CalibrationShape> calibration_shapes(const std::vector<Problem>& problems) {
  // Each element type the problems have, in the order of its first problem, calibrated on its own.
  std::vector<DType> dtypes;
  for (const Problem& p : problems)
    if (std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end()) dtypes.push_back(p.dtype);
  std::vector<CalibrationShape> out;
  for (const DType d : dtypes) {
    std::vector<Problem> requested;
    for (const Problem& p : problems)
      if (p.dtype == d) requested.push_back(p);
    for (auto& s : shapes_of_type(requested)) out.push_back(std::move(s));
  }
  return out;
}

std::vector<CalibrationCandidate> calibration_candidates(const std::vector<std::vector<TrialRecord>>& ranked_per_problem,
                                                         const std::vector<Candidate>& candidates, int leaders,
                                                         const std::vector<Problem>& requested, const Target& target) {
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < candidates.size(); ++i) by_id.emplace(candidates[i].id(), i);
  std::map<size_t, bool> chosen;  // index -> leader
  const auto take = [&](const TrialRecord& t) {
    if (auto it = by_id.find(kernel_label(t.template_name, t.params)); it != by_id.end()) chosen[it->second] = true;
  };
  for (const auto& ranked : ranked_per_problem) {
    for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(std::max(leaders, 0)); ++i) take(ranked[i]);
    const auto portable = std::find_if(ranked.begin(), ranked.end(), [](const auto& t) { return t.requirements.none(); });
    if (portable != ranked.end()) take(*portable);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!c.tmpl || !c.tmpl->applies) continue;
    const bool shape_specific = std::any_of(requested.begin(), requested.end(), [&](const Problem& p) {
      return c.tmpl->serves(c.values, p) && !c.tmpl->applies_to(c.values, target, p);
    });
    if (shape_specific) chosen.emplace(i, false);
  }
  std::vector<CalibrationCandidate> out;
  for (const auto& [index, leader] : chosen) out.push_back({index, leader});
  return out;
}

CalibrationPlan calibration_plan(const std::vector<CalibrationShape>& shapes,
                                 const std::vector<std::vector<TrialRecord>>& ranked_per_problem,
                                 const std::vector<Candidate>& candidates, int leaders,
                                 const std::vector<Problem>& requested, const Target& target) {
  CalibrationPlan plan;
  std::vector<std::string> layouts;
  for (const auto& s : shapes) {
    if (s.full_search) continue;
    plan.problems.push_back(s.problem);
    if (std::find(layouts.begin(), layouts.end(), s.problem.layout()) == layouts.end())
      layouts.emplace_back(s.problem.layout());
  }
  // The chosen candidates, then their builds of every other layout the shapes have: a layout nobody
  // tuned is served by the leaders of the tuned ones, measured in it.
  Target every_layout = target;
  every_layout.layouts.assign(std::begin(k_layout_names), std::end(k_layout_names));
  std::set<std::string> taken;
  const auto take = [&](const Candidate& c, bool leader) {
    if (!taken.insert(c.id()).second) return;
    plan.candidates.push_back(c);
    plan.ignore_applies.push_back(leader);
  };
  const std::vector<CalibrationCandidate> chosen =
      calibration_candidates(ranked_per_problem, candidates, leaders, requested, target);
  for (const CalibrationCandidate& c : chosen) take(candidates[c.index], c.leader);
  for (const CalibrationCandidate& c : chosen)
    for (const std::string& layout : layouts)
      if (auto variant = layout_variant(candidates[c.index], layout, every_layout)) take(*variant, c.leader);
  plan.problems.erase(std::remove_if(plan.problems.begin(), plan.problems.end(),
                                     [&](const Problem& p) {
                                       return std::none_of(plan.candidates.begin(), plan.candidates.end(),
                                                           [&](const Candidate& c) { return c.tmpl->serves(c.values, p); });
                                     }),
                      plan.problems.end());
  return plan;
}

}  // namespace cmt
