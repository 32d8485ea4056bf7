#include "export/regret.hpp"

#include <algorithm>
#include <stdexcept>

namespace cmt {

std::vector<int> regret_candidates(const DispatchChoice& choice) {
  if (choice.kernel < 0) return {};
  std::vector<int> out{choice.kernel};
  for (const Prediction& p : choice.predictions)
    if (p.usable) out.push_back(p.kernel);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

RegretRow regret_row(const Problem& problem, int chosen, int splits, double chosen_us, const std::map<int, double>& times,
                     const std::vector<int>& failed) {
  if (times.find(chosen) == times.end()) throw std::logic_error("regret_row: the chosen kernel was not timed");
  RegretRow row;
  row.problem = problem;
  row.chosen = chosen;
  row.splits = splits;
  row.chosen_us = chosen_us;
  row.timed = times.size();
  row.failed = failed;
  row.best = chosen;
  row.best_us = chosen_us;
  for (const auto& [kernel, us] : times) {
    if (std::find(failed.begin(), failed.end(), kernel) != failed.end()) continue;
    if (us < row.best_us) {
      row.best = kernel;
      row.best_us = us;
    }
  }
  row.regret = row.chosen_us / row.best_us;
  return row;
}

Spread regret_spread(const std::vector<RegretRow>& rows) {
  std::vector<double> values;
  for (const RegretRow& r : rows) values.push_back(r.regret);
  return spread_of(std::move(values));
}

}  // namespace cmt
