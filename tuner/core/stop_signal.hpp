// SIGINT and SIGTERM as a request to stop: the first one is only noted, so a long-running command
// can finish what is in flight, commit and report; a second one ends the process as usual.
//
// cm-tune owns these two signals. Libraries may not change them through signal(): NVRTC's front
// end installs its own SIGINT and SIGTERM handler around every compile (it ends the process with
// exit(4) from inside the handler, on whichever thread, while the others still run) and restores
// the old one after, which races between compiler threads and could leave SIGINT ignored. This
// file therefore defines signal() for the process: for SIGINT and SIGTERM it changes nothing and
// only keeps, per thread, what the caller set; other signals go to sigaction as before. cm-tune's
// own code changes the two with the functions below (sigaction), never with signal().
#pragma once

#include <stdexcept>
#include <string>

namespace cmt {

/// Thrown by a wait that saw a stop signal before the command started its work (reading a sizes
/// file from a pipe); the command line ends with 128 + the signal, as shells report.
class StoppedBySignal : public std::runtime_error {
 public:
  explicit StoppedBySignal(const std::string& what) : std::runtime_error(what) {}
};

/// Installs the handlers that note the first SIGINT or SIGTERM (the second takes the default
/// action). cm-tune calls it first thing, before the command line is parsed.
void catch_stop_signals();
/// Gives SIGINT and SIGTERM back their default action, for commands that never poll
/// stop_signal(); a signal noted before is raised again, so the process ends as it asked.
void release_stop_signals();
/// Ignores SIGINT and SIGTERM (the measuring process: its parent decides when to stop).
void ignore_stop_signals();
/// The signal that asked to stop (SIGINT or SIGTERM), or 0 while none has.
int stop_signal();
/// "SIGINT", "SIGTERM", or "" while none has asked to stop.
const char* stop_signal_name();

}  // namespace cmt
