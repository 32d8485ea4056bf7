// What an exported header includes: `cm-tune export` copies the #include lines of this file into
// the header, and the build preprocesses this file with nvcc, as its device and host passes see it
// (tuner/header_macros.cmake), to list the macros these includes define: --namespace may name none.
#include <cuda_runtime.h>
