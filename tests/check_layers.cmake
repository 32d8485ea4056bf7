# Script mode (a ctest): the layers tuner/CMakeLists.txt promises hold in the built binaries.
#   MODEL_BINARY  the model's test binary: it loads no CUDA library (ldd) and holds no CUDA code (nm),
#                 and it holds the output layer's printers (tuner/output/, in cmt_model)
#   CLI_BINARY    cm-tune: it does not need the driver (libcuda), so it starts without one
#   BUILD_DIR, TARGETS  no link line of these executables (comma-separated) names libcuda or NVML,
#                       not even CUDA's stubs
# Runs a command and puts its standard output in `out`; a command that fails ends the check.
function(run_tool out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "${command} failed (${rc})")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

run_tool(ldd_out ldd "${MODEL_BINARY}")
if(ldd_out MATCHES "(libcuda|libcudart|libnvrtc|libcublas|libcublasLt)[.]so")
  message(FATAL_ERROR "${MODEL_BINARY} loads a CUDA library (${CMAKE_MATCH_1}):\n${ldd_out}")
endif()
run_tool(nm_out nm -C "${MODEL_BINARY}")
if(nm_out MATCHES "[ \n](cuda[A-Z][A-Za-z]+|nvrtc[A-Z][A-Za-z]+|cublas[A-Z][A-Za-z]+)")
  message(FATAL_ERROR "${MODEL_BINARY} holds CUDA code: symbol ${CMAKE_MATCH_1} (the static CUDA runtime?)")
endif()
# The output layer (tuner/output/: tables and their printers) is in the CUDA-free model, below every
# command and report that prints through it.
if(NOT nm_out MATCHES "cmt::output::render_text")
  message(FATAL_ERROR "${MODEL_BINARY} lacks the output layer (cmt::output::render_text): tuner/output/ belongs to cmt_model")
endif()
run_tool(readelf_out readelf -d "${CLI_BINARY}")
if(readelf_out MATCHES "NEEDED[^\n]*libcuda[.]so")
  message(FATAL_ERROR "${CLI_BINARY} needs libcuda, so it cannot start without a driver:\n${readelf_out}")
endif()
# NVML (the energy counter of `precision`) comes with the driver: loaded at run time, never needed.
if(readelf_out MATCHES "NEEDED[^\n]*libnvidia-ml")
  message(FATAL_ERROR "${CLI_BINARY} needs libnvidia-ml, so it cannot start without a driver:\n${readelf_out}")
endif()

set(link_lines "")
string(REPLACE "," ";" TARGETS "${TARGETS}")
file(GLOB_RECURSE all_link_lines "${BUILD_DIR}/link.txt")  # Makefile generators: one per target
foreach(f ${all_link_lines})
  foreach(target ${TARGETS})
    if(f MATCHES "/${target}[.]dir/link[.]txt$")
      list(APPEND link_lines "${f}")
    endif()
  endforeach()
endforeach()
if(EXISTS "${BUILD_DIR}/build.ninja")
  list(APPEND link_lines "${BUILD_DIR}/build.ninja")
endif()
if(NOT link_lines)
  message(FATAL_ERROR "no link lines (link.txt or build.ninja) found under ${BUILD_DIR}")
endif()
foreach(f ${link_lines})
  file(READ "${f}" text)
  if(text MATCHES "libcuda[.]so")
    message(FATAL_ERROR "${f} links libcuda (the driver or its stub): ${CMAKE_MATCH_0}")
  endif()
  if(text MATCHES "nvidia-ml")
    message(FATAL_ERROR "${f} links NVML (libnvidia-ml or its stub): ${CMAKE_MATCH_0}")
  endif()
endforeach()
message(STATUS "layers hold: ${MODEL_BINARY} loads no CUDA library, nothing links libcuda or NVML")
