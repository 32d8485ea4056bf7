#include "record/ranking.hpp"

#include <algorithm>
#include <map>

#include "core/stats.hpp"

namespace cmt {

namespace {

WinnerRecord make_winner(const TrialRecord& t, const std::string& scope, double ratio) {
  WinnerRecord w;
  w.device_id = t.device_id;
  w.problem = t.problem;
  w.scope = scope;
  w.trial_id = t.id;
  w.template_name = t.template_name;
  w.params = t.params;
  w.name_expression = t.name_expression;
  w.median_ms = rank_time(t);
  w.gflops = gflops(t.problem.flops(), w.median_ms);
  w.ratio_to_cublas = ratio;
  w.requirements = t.requirements;
  w.shape = t.shape;
  w.binary_key = t.binary_key;
  return w;
}

}  // namespace

double rank_time(const TrialRecord& t) { return t.retime_median_ms.value_or(t.median_ms.value_or(1e30)); }

bool ranks_before(const TrialRecord& a, const TrialRecord& b) {
  if (a.retime_median_ms.has_value() != b.retime_median_ms.has_value()) return a.retime_median_ms.has_value();
  if (rank_time(a) != rank_time(b)) return rank_time(a) < rank_time(b);
  return a.id < b.id;  // a tie goes to the trial recorded first, whatever order the caller holds them in
}

std::vector<TrialRecord> ranked_passing(std::vector<TrialRecord> trials) {
  trials.erase(std::remove_if(trials.begin(), trials.end(), [](const TrialRecord& t) { return !passed(t); }),
               trials.end());
  std::stable_sort(trials.begin(), trials.end(), ranks_before);
  return trials;
}

std::vector<WinnerRecord> choose_winners(const std::vector<TrialRecord>& trials,
                                         const std::optional<BaselineRecord>& baseline) {
  const TrialRecord* overall = nullptr;
  const TrialRecord* portable = nullptr;
  std::map<std::string, const TrialRecord*> per_template;
  for (const auto& t : trials) {
    if (!passed(t)) continue;
    const auto better = [&](const TrialRecord* current) { return !current || ranks_before(t, *current); };
    if (better(overall)) overall = &t;
    if (t.requirements.none() && better(portable)) portable = &t;
    if (better(per_template[t.template_name])) per_template[t.template_name] = &t;
  }
  const auto ratio = [&](const TrialRecord& t) {
    if (t.retime_median_ms && t.ratio_to_cublas) return *t.ratio_to_cublas;
    return baseline ? baseline->median_ms / rank_time(t) : 0.0;
  };
  std::vector<WinnerRecord> out;
  if (overall) out.push_back(make_winner(*overall, "overall", ratio(*overall)));
  if (portable) out.push_back(make_winner(*portable, "portable", ratio(*portable)));
  for (const auto& [name, t] : per_template) out.push_back(make_winner(*t, "template:" + name, ratio(*t)));
  return out;
}

}  // namespace cmt
