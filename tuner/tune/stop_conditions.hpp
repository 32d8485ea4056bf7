// Why a tuning pass stops before its search ends, one object per reason (as KTT's StopCondition):
// a signal, the time limit and a lost CUDA context, and their union. run_pass asks them at two
// moments: when a measurement comes back, and when a candidate's last measurement is recorded.
// (The search budget is not one: it bounds what the searcher proposes, search/searcher.hpp.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cmt {

/// A stop: the status line the run reports, and how its run record is closed.
struct Stop {
  enum class Kind {
    limit,        // a limit the user set was reached: the run is done, with what it measured
    interrupted,  // the user asked it to stop: the run is interrupted, and a rerun finishes it
    failed,       // it cannot go on: the run failed
  };
  std::string reason;
  Kind kind = Kind::limit;
};

/// A measurement that just came back.
struct MeasuredEvent {
  std::string candidate;          // its id
  std::string problem;            // Problem::to_string()
  std::string outcome_reason;     // the trial's reason ("" when it passed)
  int64_t candidates_done = 0;    // candidates whose every measurement is recorded
};

/// A candidate whose last measurement was just recorded.
struct CandidateEvent {
  int64_t candidates_done = 0;
  double elapsed_s = 0;           // since the pass began
};

class StopCondition {
 public:
  virtual ~StopCondition() = default;
  virtual std::optional<Stop> after_measurement(const MeasuredEvent&) const { return std::nullopt; }
  virtual std::optional<Stop> after_candidate(const CandidateEvent&) const { return std::nullopt; }
};

/// SIGINT or SIGTERM (or whatever `requested` reads): interrupted at either moment.
class SignalStop final : public StopCondition {
 public:
  explicit SignalStop(std::function<bool()> requested) : m_requested(std::move(requested)) {}
  bool requested() const { return m_requested && m_requested(); }
  std::optional<Stop> after_measurement(const MeasuredEvent& e) const override;
  std::optional<Stop> after_candidate(const CandidateEvent& e) const override;

 private:
  std::function<bool()> m_requested;
};

/// --time-limit: checked when a candidate is done, so a candidate's problems are all measured.
class TimeLimitStop final : public StopCondition {
 public:
  explicit TimeLimitStop(double limit_s) : m_limit_s(limit_s) {}
  std::optional<Stop> after_candidate(const CandidateEvent& e) const override;

 private:
  double m_limit_s;
};

/// A kernel broke the CUDA context of a measuring process (`lost` reads it): the pass fails, and the
/// candidate is recorded as crashed, so a rerun skips it.
class LostContextStop final : public StopCondition {
 public:
  explicit LostContextStop(std::function<bool()> lost) : m_lost(std::move(lost)) {}
  std::optional<Stop> after_measurement(const MeasuredEvent& e) const override;

 private:
  std::function<bool()> m_lost;
};

/// The first of its conditions that says stop, in their order.
class AnyStop final : public StopCondition {
 public:
  AnyStop() = default;
  AnyStop& add(std::unique_ptr<StopCondition> condition);
  std::optional<Stop> after_measurement(const MeasuredEvent& e) const override;
  std::optional<Stop> after_candidate(const CandidateEvent& e) const override;

 private:
  std::vector<std::unique_ptr<StopCondition>> m_conditions;
};

}  // namespace cmt
