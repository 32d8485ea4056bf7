#include "export/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "export/rules.hpp"

namespace cmt {

namespace {

constexpr int k_terms = rules::k_model_terms;
using Features = std::array<double, k_terms>;

/// Huber's loss on the relative error: squared up to 25%, linear beyond. On the README tune's
/// database (H100), leaving one shape out, it took the dispatch's 90th-percentile regret from 1.24
/// (least squares) to 1.09; 5-15% gave 1.12-1.16 and 40% 1.14 on the FP64 tune's.
constexpr double k_huber_delta = 0.25;
/// Refits with the robust weights of the last fit; they settle within a few.
constexpr int k_reweightings = 12;

Features features_of(const LaunchShape& shape, int blocks_per_sm, int sm_count, const Problem& p) {
  Features f{};
  rules::model_features(p.m, p.n, p.k, p.batch, static_cast<int>(shape.tile_m), static_cast<int>(shape.tile_n),
                        static_cast<int>(shape.grid_z), static_cast<int>(shape.problems_per_block), blocks_per_sm,
                        sm_count, f.data());
  return f;
}

/// Solves the k x k system a x = b by Gaussian elimination with partial pivoting; nullopt when singular.
std::optional<std::vector<double>> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    if (std::fabs(a[pivot][col]) < 1e-12) return std::nullopt;
    std::swap(a[pivot], a[col]);
    std::swap(b[pivot], b[col]);
    for (size_t r = col + 1; r < n; ++r) {
      const double factor = a[r][col] / a[col][col];
      for (size_t c = col; c < n; ++c) a[r][c] -= factor * a[col][c];
      b[r] -= factor * b[col];
    }
  }
  std::vector<double> x(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t c = i + 1; c < n; ++c) s -= a[i][c] * x[c];
    x[i] = s / a[i][i];
  }
  return x;
}

}  // namespace

ExportKernelModel fit_kernel_model(std::vector<ModelPoint> points, const LaunchShape& shape, int kernel,
                                   int blocks_per_sm, int sm_count) {
  if (points.empty()) throw std::logic_error("fit_kernel_model needs at least one point");
  // One point per problem: the fastest.
  std::map<Problem, ModelPoint> best;
  for (const auto& p : points) {
    auto [it, inserted] = best.emplace(p.problem, p);
    if (!inserted && p.us < it->second.us) it->second = p;
  }
  std::vector<Features> rows;
  std::vector<double> times, weights;
  double weight_sum = 0;
  ExportKernelModel model;
  model.kernel = kernel;
  model.blocks_per_sm = std::max(blocks_per_sm, 1);
  bool first = true;
  for (const auto& [problem, point] : best) {
    rows.push_back(features_of(shape, model.blocks_per_sm, sm_count, problem));
    times.push_back(point.us);
    weights.push_back(point.weight > 0 && std::isfinite(point.weight) ? point.weight : 1.0);
    weight_sum += weights.back();
    model.min_m = first ? problem.m : std::min(model.min_m, problem.m);
    model.max_m = first ? problem.m : std::max(model.max_m, problem.m);
    model.min_n = first ? problem.n : std::min(model.min_n, problem.n);
    model.max_n = first ? problem.n : std::max(model.max_n, problem.n);
    model.min_k = first ? problem.k : std::min(model.min_k, problem.k);
    model.max_k = first ? problem.k : std::max(model.max_k, problem.k);
    first = false;
  }
  const size_t n = rows.size();
  model.points = static_cast<int>(n);

  // Every subset of the terms, smaller subsets first and the work term first among equals: with
  // fewer points than terms several subsets fit exactly, and the simplest (work alone) is kept.
  static const int k_order[] = {0b0010, 0b0001, 0b1000, 0b0100, 0b0011, 0b0110, 0b1010, 0b0101,
                                0b1001, 0b1100, 0b0111, 0b1011, 0b1110, 0b1101, 0b1111};
  double best_score = std::numeric_limits<double>::infinity();
  for (const int mask : k_order) {
    std::vector<int> terms;
    for (int t = 0; t < k_terms; ++t)
      if (mask & (1 << t)) terms.push_back(t);
    const size_t k = terms.size();
    if (k > n) continue;
    // How far the fit with coefficients c (of `terms`) misses point i: |predicted / measured - 1|.
    const auto miss = [&](const std::vector<double>& c, size_t i) {
      double t = 0;
      for (size_t a = 0; a < k; ++a) t += c[a] * rows[i][static_cast<size_t>(terms[a])];
      return std::fabs(t / times[i] - 1.0);
    };
    // Weighted least squares on relative error (rows scaled by 1/t, target 1, each row weighted),
    // made robust by iterative reweighting with Huber's loss: a point the features cannot explain
    // (a thin edge the kernel computes cheaply, a ragged size it reads slowly) is heeded less the
    // further the fit misses it, instead of dragging every other prediction towards it.
    std::vector<double> eff = weights;
    std::optional<std::vector<double>> x;
    for (int it = 0; it < k_reweightings; ++it) {
      std::vector<std::vector<double>> ata(k, std::vector<double>(k, 0.0));
      std::vector<double> atb(k, 0.0);
      for (size_t i = 0; i < n; ++i) {
        for (size_t a = 0; a < k; ++a) {
          const double fa = rows[i][static_cast<size_t>(terms[a])] / times[i];
          atb[a] += eff[i] * fa;
          for (size_t b = 0; b < k; ++b) ata[a][b] += eff[i] * fa * rows[i][static_cast<size_t>(terms[b])] / times[i];
        }
      }
      auto solved = solve(ata, atb);
      // A reweighted fit leaving the non-negative coefficients keeps the last one that did not.
      if (!solved || std::any_of(solved->begin(), solved->end(), [](double v) { return !(v >= 0.0) || !std::isfinite(v); }))
        break;
      x = std::move(solved);
      for (size_t i = 0; i < n; ++i) {
        const double r = miss(*x, i);
        eff[i] = weights[i] * (r <= k_huber_delta ? 1.0 : k_huber_delta / r);
      }
    }
    if (!x) continue;
    double rss = 0, squares = 0;
    for (size_t i = 0; i < n; ++i) {
      const double r = miss(*x, i);
      rss += weights[i] * (r <= k_huber_delta ? r * r : k_huber_delta * (2.0 * r - k_huber_delta));  // Huber, x2
      squares += weights[i] * r * r;
    }
    rss *= static_cast<double>(n) / weight_sum;  // the weighted mean loss, per point
    // Akaike's criterion with the mean squared error floored at 0.1% rms: exact fits do not win by
    // -infinity, and each term must buy its keep.
    const double score = static_cast<double>(n) * std::log(std::max(rss / static_cast<double>(n), 1e-6)) + 2.0 * static_cast<double>(k);
    if (score < best_score) {
      best_score = score;
      for (int t = 0; t < k_terms; ++t) model.coef[t] = 0.0;
      for (size_t a = 0; a < k; ++a) model.coef[terms[a]] = (*x)[a];
      model.rms_relative_error = std::sqrt(squares / weight_sum);
    }
  }
  return model;
}

double predict_us(const ExportKernelModel& model, const LaunchShape& shape, int sm_count, const Problem& problem) {
  const Features f = features_of(shape, model.blocks_per_sm, sm_count, problem);
  return rules::predicted_us(model.coef, f.data());
}

}  // namespace cmt
