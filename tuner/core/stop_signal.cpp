#include "core/stop_signal.hpp"

#include <csignal>

namespace cmt {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void note_stop_signal(int signal) {
  if (g_stop_signal == 0) g_stop_signal = signal;
}

void set_stop_action(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  // Either signal is blocked while the handler runs, so a SIGTERM right after a SIGINT cannot
  // overwrite the one noted between its test and its store.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = flags;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

void catch_stop_signals() {
  // SA_RESETHAND: the second signal takes the default action (the user insists).
  // SA_RESTART: system calls underneath (SQLite, file I/O) carry on; waits that must notice the
  // signal poll stop_signal() themselves.
  set_stop_action(note_stop_signal, SA_RESETHAND | SA_RESTART);
}

void release_stop_signals() {
  set_stop_action(SIG_DFL, 0);
  if (const int signal = g_stop_signal) std::raise(signal);
}

void ignore_stop_signals() { set_stop_action(SIG_IGN, 0); }

int stop_signal() { return g_stop_signal; }

const char* stop_signal_name() {
  switch (g_stop_signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}

}  // namespace cmt

namespace {

/// What each thread last set for SIGINT and SIGTERM through signal(), so its save-and-restore
/// pairs read back consistently; the process's real action is not touched.
thread_local sighandler_t t_virtual_int = SIG_DFL;
thread_local sighandler_t t_virtual_term = SIG_DFL;

}  // namespace

/// Replaces the C library's signal() for the whole process (see stop_signal.hpp): NVRTC calls it
/// around each compile. The executable's definition comes first in the dynamic linker's lookup,
/// so libnvrtc binds to it; `StopSignals.NvrtcLeavesTheStopSignalsAlone` checks that it does.
extern "C" sighandler_t signal(int sig, sighandler_t handler) {
  if (sig == SIGINT || sig == SIGTERM) {
    sighandler_t& mine = sig == SIGINT ? t_virtual_int : t_virtual_term;
    const sighandler_t old = mine;
    mine = handler;
    return old;
  }
  // What glibc's signal() does: BSD semantics, the signal blocked in its own handler.
  struct sigaction action {}, old {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, sig);
  action.sa_flags = SA_RESTART;
  if (sigaction(sig, &action, &old) < 0) return SIG_ERR;
  return old.sa_handler;
}
