#include "core/stop_signal.hpp"

#include <csignal>

namespace cmt {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void note_stop_signal(int signal) { g_stop_signal = signal; }

}  // namespace

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = note_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the second signal takes the default action (the user insists).
  // SA_RESTART: system calls underneath (SQLite, file I/O) carry on; waits that must notice the
  // signal poll stop_signal() themselves.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

}  // namespace cmt
