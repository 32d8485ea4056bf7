#include "tune/stop_conditions.hpp"

#include <fmt/format.h>

namespace cmt {

namespace {

Stop interrupted(int64_t candidates_done) {
  return {fmt::format("interrupted after {} candidates", candidates_done), Stop::Kind::interrupted};
}

}  // namespace

std::optional<Stop> SignalStop::after_measurement(const MeasuredEvent& e) const {
  if (!requested()) return std::nullopt;
  return interrupted(e.candidates_done);
}

std::optional<Stop> SignalStop::after_candidate(const CandidateEvent& e) const {
  if (!requested()) return std::nullopt;
  return interrupted(e.candidates_done);
}

std::optional<Stop> TimeLimitStop::after_candidate(const CandidateEvent& e) const {
  if (e.elapsed_s <= m_limit_s) return std::nullopt;
  return Stop{fmt::format("--time-limit {} s reached after {} candidates", m_limit_s, e.candidates_done),
              Stop::Kind::limit};
}

std::optional<Stop> LostContextStop::after_measurement(const MeasuredEvent& e) const {
  if (!m_lost || !m_lost()) return std::nullopt;
  return Stop{fmt::format("{} broke the CUDA context on {} ({}); it is recorded as crashed and a rerun skips it",
                          e.candidate, e.problem, e.outcome_reason),
              Stop::Kind::failed};
}

AnyStop& AnyStop::add(std::unique_ptr<StopCondition> condition) {
  m_conditions.push_back(std::move(condition));
  return *this;
}

std::optional<Stop> AnyStop::after_measurement(const MeasuredEvent& e) const {
  for (const auto& c : m_conditions)
    if (auto stop = c->after_measurement(e)) return stop;
  return std::nullopt;
}

std::optional<Stop> AnyStop::after_candidate(const CandidateEvent& e) const {
  for (const auto& c : m_conditions)
    if (auto stop = c->after_candidate(e)) return stop;
  return std::nullopt;
}

}  // namespace cmt
