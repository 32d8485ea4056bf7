// SIGINT and SIGTERM as a request to stop: the first one is only noted, so a long-running command
// can finish what is in flight, commit and report; a second one ends the process as usual.
#pragma once

namespace cmt {

/// Installs the handlers (once per process).
void catch_stop_signals();
/// The signal that asked to stop (SIGINT or SIGTERM), or 0 while none has.
int stop_signal();

}  // namespace cmt
