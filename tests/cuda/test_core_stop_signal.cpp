// SIGINT and SIGTERM stay cm-tune's while NVRTC compiles (core/stop_signal.hpp). NVRTC's front end
// sets its own handler for both around each compile through signal(); that handler ended the
// process with exit(4) from whichever thread the signal landed on, and the save-and-restore raced
// between compiler threads. cm-tune's signal() keeps those calls from changing anything.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "core/stop_signal.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

void (*action_of(int sig))(int) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

/// Puts SIGINT and SIGTERM back to their default action (not release_stop_signals(): that would
/// raise a noted signal).
struct DefaultStopSignalsAfter {
  ~DefaultStopSignalsAfter() {
    std::signal(SIGUSR1, SIG_DFL);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, nullptr);
    sigaction(SIGTERM, &dfl, nullptr);
  }
};

TEST(StopSignals, NvrtcLeavesTheStopSignalsAlone) {
  const DefaultStopSignalsAfter restore;
  catch_stop_signals();
  const auto ours = action_of(SIGINT);
  ASSERT_NE(ours, SIG_DFL);
  ASSERT_EQ(action_of(SIGTERM), ours);

  // signal() itself, as a library calls it: nothing changes for the two, the caller reads back what
  // it set; any other signal is changed as usual.
  EXPECT_EQ(std::signal(SIGINT, SIG_IGN), SIG_DFL);
  EXPECT_EQ(std::signal(SIGINT, SIG_DFL), SIG_IGN);
  EXPECT_EQ(action_of(SIGINT), ours);
  std::signal(SIGUSR1, SIG_IGN);
  EXPECT_EQ(action_of(SIGUSR1), SIG_IGN);

  // NVRTC compiling on two threads while this one watches the two actions.
  const auto templates = load_templates({default_templates_dir()});
  const Preset preset = load_preset(resolve_preset("quick"));
  std::vector<Candidate> candidates;
  for (const char* only : {"naive", "coalesced"})
    for (Candidate& c : enumerate_space(templates, preset, test::sm90(), std::string(only)).candidates)
      candidates.push_back(std::move(c));
  ASSERT_GE(candidates.size(), 3u);
  test::TempDir dir;
  std::atomic<bool> done{false};
  int64_t compiled = 0;
  std::thread compiling([&] {
    Store store(dir / "cache.db");
    const NvrtcCompiler nvrtc;
    CompileService service(store, nvrtc, "sm_90", 2);
    service.submit_all(candidates);
    while (auto c = service.next()) compiled += c->binary.ok;
    done = true;
  });
  int64_t samples = 0, changed = 0;
  while (!done) {
    ++samples;
    changed += action_of(SIGINT) != ours || action_of(SIGTERM) != ours;
  }
  compiling.join();
  EXPECT_EQ(compiled, static_cast<int64_t>(candidates.size()));
  EXPECT_EQ(changed, 0) << "of " << samples << " samples, SIGINT's or SIGTERM's action was another";
  EXPECT_EQ(stop_signal(), 0);
}

}  // namespace
}  // namespace cmt
