// The includes of an exported header, pasted by `cm-tune export` at its top, outside every namespace:
// the CUDA runtime, and the C++ standard library (and POSIX, where there is one) for recording calls
// (call_recorder.cuh). tests/cuda/test_header_runtime.cu includes it before the other runtime files.
// The build preprocesses this file with nvcc, as its device and host passes see it
// (tuner/header_macros.cmake), to list the macros these includes define: --namespace may name none.
#include <cuda_runtime.h>
// CUtensorMap and its enums, for the tensor maps of TMA kernels: no driver symbol is linked.
#include <cuda.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#endif
