// The stop conditions of a tuning pass (tune/stop_conditions.hpp), each on its own and in their
// union: when each says stop, the status line it gives, and how the run is closed. The tune tests
// (tests/cli, tests/cuda) run them inside real passes.
#include <gtest/gtest.h>

#include <memory>

#include "tune/stop_conditions.hpp"

namespace cmt {
namespace {

const MeasuredEvent k_stop_measured{"warptile[BM=128]", "1024x1024x1024", "illegal address", 7};
const CandidateEvent k_stop_candidate{7, 12.5};

TEST(StopConditions, ASignalInterruptsAtEitherMomentAndOnlyOnceRequested) {
  bool requested = false;
  const SignalStop signal([&] { return requested; });
  EXPECT_FALSE(signal.after_measurement(k_stop_measured));
  EXPECT_FALSE(signal.after_candidate(k_stop_candidate));
  requested = true;
  for (const auto& stop : {signal.after_measurement(k_stop_measured), signal.after_candidate(k_stop_candidate)}) {
    ASSERT_TRUE(stop);
    EXPECT_EQ(stop->reason, "interrupted after 7 candidates");
    EXPECT_EQ(stop->kind, Stop::Kind::interrupted);
  }
  EXPECT_FALSE(SignalStop(nullptr).requested()) << "no signal source: never requested";
}

TEST(StopConditions, TheTimeLimitStopsOnlyWhenACandidateIsDoneAfterIt) {
  const TimeLimitStop limit(10);
  EXPECT_FALSE(limit.after_measurement(k_stop_measured)) << "a candidate's problems are all measured first";
  EXPECT_FALSE(limit.after_candidate({3, 9.9}));
  EXPECT_FALSE(limit.after_candidate({3, 10.0})) << "at the limit, not past it";
  const auto stop = limit.after_candidate(k_stop_candidate);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->reason, "--time-limit 10 s reached after 7 candidates");
  EXPECT_EQ(stop->kind, Stop::Kind::limit);
}

TEST(StopConditions, ALostContextFailsThePassNamingTheCandidateAndProblem) {
  bool lost = false;
  const LostContextStop context([&] { return lost; });
  EXPECT_FALSE(context.after_measurement(k_stop_measured));
  lost = true;
  EXPECT_FALSE(context.after_candidate(k_stop_candidate)) << "it is seen when the measurement comes back";
  const auto stop = context.after_measurement(k_stop_measured);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->reason,
            "warptile[BM=128] broke the CUDA context on 1024x1024x1024 (illegal address); it is recorded as crashed "
            "and a rerun skips it");
  EXPECT_EQ(stop->kind, Stop::Kind::failed);
}

TEST(StopConditions, TheUnionGivesTheFirstConditionThatStopsInItsOrder) {
  bool lost = true, requested = true;
  AnyStop stops;
  EXPECT_FALSE(stops.after_measurement(k_stop_measured)) << "no conditions: never";
  stops.add(std::make_unique<LostContextStop>([&] { return lost; }))
      .add(std::make_unique<SignalStop>([&] { return requested; }))
      .add(std::make_unique<TimeLimitStop>(1));
  EXPECT_EQ(stops.after_measurement(k_stop_measured)->kind, Stop::Kind::failed) << "the lost context comes first";
  EXPECT_EQ(stops.after_candidate(k_stop_candidate)->kind, Stop::Kind::interrupted) << "then the signal";
  requested = false;
  EXPECT_EQ(stops.after_candidate(k_stop_candidate)->kind, Stop::Kind::limit) << "then the time limit";
  lost = false;
  EXPECT_FALSE(stops.after_measurement(k_stop_measured));
  EXPECT_FALSE(stops.after_candidate({7, 0.5}));
}

}  // namespace
}  // namespace cmt
