// spdlog's implementation, compiled once. Every other translation unit builds with
// SPDLOG_COMPILED_LIB (CMakeLists.txt, cmt_thirdparty) and reads spdlog's declarations alone, which
// saves about 3.5 s of compile time per unit. Debian's libspdlog-dev ships a shared library only,
// which the GPU machine lacks, so the implementation headers it ships are compiled here instead:
// the logger, the registry with its default console logger, the pattern formatter and the two sinks
// cm-tune uses (core/log.cpp: a base_sink of its own and the colour console sink).
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_build.cpp compiles spdlog's implementation for builds with SPDLOG_COMPILED_LIB"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>
#include <spdlog/details/console_globals.h>
#include <spdlog/details/null_mutex.h>

template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
