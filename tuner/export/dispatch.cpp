#include "export/dispatch.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

namespace cmt {

CallShape tight_call(const Problem& problem) { return {problem, problem.k, problem.n, problem.n, 256}; }

double log_distance(const Problem& a, const Problem& b) {
  const auto term = [](int64_t x, int64_t y) { return std::fabs(std::log(static_cast<double>(x) / static_cast<double>(y))); };
  return term(a.m, b.m) + term(a.n, b.n) + term(a.k, b.k);
}

const DispatchEntry* nearest_entry(const std::vector<DispatchEntry>& entries, const Problem& problem) {
  const DispatchEntry* best = nullptr;
  double best_distance = 0;
  for (const auto& e : entries) {
    const double d = log_distance(problem, e.problem);
    if (!best || d < best_distance || (d == best_distance && e.problem < best->problem)) {
      best = &e;
      best_distance = d;
    }
  }
  return best;
}

bool requirements_met(const Requirements& r, const CallShape& call) {
  const int64_t mult = r.ld_multiple > 1 ? r.ld_multiple : 1;
  return call.alignment >= r.align_bytes && call.lda % mult == 0 && call.ldb % mult == 0 && call.ldc % mult == 0;
}

DispatchChoice choose_kernel(const std::vector<DispatchEntry>& entries, const CallShape& call) {
  DispatchChoice c;
  c.entry = nearest_entry(entries, call.problem);
  if (!c.entry) {
    c.why = "nothing tuned for this device: the generic default kernel runs";
    return c;
  }
  c.distance = log_distance(call.problem, c.entry->problem);
  c.exact = c.entry->problem == call.problem;
  const std::string where = c.exact ? "tuned for this problem"
                                    : fmt::format("nearest tuned problem {} (log-distance {:.3f})",
                                                  c.entry->problem.to_string(), c.distance);
  if (requirements_met(c.entry->primary.requirements, call)) {
    c.kernel = &c.entry->primary;
    c.why = where;
  } else {
    c.kernel = c.entry->portable ? &*c.entry->portable : nullptr;
    c.portable_fallback = true;
    c.why = fmt::format("{}; the call misses the winner's requirements ({}), so its best kernel without "
                        "requirements runs",
                        where, c.entry->primary.requirements.to_string());
    if (!c.kernel) c.why += " (none was tuned: the generic default kernel runs)";
  }
  return c;
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
