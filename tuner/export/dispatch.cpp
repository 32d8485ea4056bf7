#include "export/dispatch.hpp"

#include <fmt/format.h>
#include <map>
#include <math.h>  // ::log and ::fabs, as the rules want them

namespace cmt {

namespace rules {
#include "export/runtime/dispatch_rules.h"
}  // namespace rules

CallShape tight_call(const Problem& problem) { return {problem, problem.k, problem.n, problem.n, 256}; }

double log_distance(const Problem& a, const Problem& b) { return rules::log_distance(a.m, a.n, a.k, b.m, b.n, b.k); }

const DispatchEntry* nearest_entry(const std::vector<DispatchEntry>& entries, const Problem& problem) {
  const int i = rules::nearest_entry(entries.data(), static_cast<int>(entries.size()), problem.m, problem.n, problem.k);
  return i < 0 ? nullptr : &entries[static_cast<size_t>(i)];
}

bool requirements_met(const Requirements& r, const CallShape& call) {
  return rules::requirements_met(r.align_bytes, r.ld_multiple, call.lda, call.ldb, call.ldc, call.alignment);
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
  // Kernel indices for the rule: 0 the primary, 1 the portable one, -1 the generic default.
  const bool met = requirements_met(c.entry->primary.requirements, call);
  const int kernel = rules::entry_kernel(0, met, c.entry->portable ? 1 : -1, -1);
  c.kernel = kernel == 0 ? &c.entry->primary : kernel == 1 ? &*c.entry->portable : nullptr;
  c.portable_fallback = !met;
  if (met) {
    c.why = where;
  } else {
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
