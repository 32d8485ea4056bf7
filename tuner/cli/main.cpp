#include "cli/app.hpp"
#include "core/stop_signal.hpp"

namespace {

void catch_stop_signals_first(int, char**, char**) { cmt::catch_stop_signals(); }

}  // namespace

// SIGINT and SIGTERM are noted from before the shared libraries' initializers run: cuBLAS and NVRTC
// spend about 0.1 s there, and a signal in that time used to kill the process outright. The
// executable's .preinit_array runs once the dynamic linker has relocated everything, before any
// library's constructor; only the loading itself comes earlier. cli::run gives the signals back
// to commands that do not poll stop_signal().
__attribute__((section(".preinit_array"), used)) static void (*const k_catch_early)(int, char**, char**) =
    catch_stop_signals_first;

int main(int argc, char** argv) { return cmt::cli::run(argc, argv); }
