# Script mode: writes OUT, the sorted names of every macro defined after INCLUDES (a file of
# #include lines: tuner/export/runtime/header_includes.h) as nvcc preprocesses it, one per line: the
# union of its device pass (nvcc -E) and its host pass (the same without __CUDA_ARCH__), with nvcc's
# default dialect (gnu++17 under g++, which also defines linux and unix). `cm-tune export` refuses a
# --namespace that names one (the header would not compile). NVCC is the toolkit's nvcc, HOST_COMPILER
# its -ccbin if any. Without a working nvcc the list is empty and the build says so: the other
# namespace rules still hold.
set(names "")
set(failed "")
if(NOT NVCC OR NOT EXISTS "${NVCC}")
  set(failed "nvcc not found (NVCC='${NVCC}')")
else()
  set(ccbin "")
  if(HOST_COMPILER)
    set(ccbin -ccbin "${HOST_COMPILER}")
  endif()
  # The device pass of nvcc -E defines __CUDA_ARCH__ and CUDA_DOUBLE_MATH_FUNCTIONS; undefining them
  # after nvcc's own -D gives the host pass's view.
  foreach(pass device host)
    set(extra "")
    if(pass STREQUAL "host")
      set(extra -Xcompiler -U__CUDA_ARCH__ -Xcompiler -U__CUDA_ARCH_LIST__ -Xcompiler -UCUDA_DOUBLE_MATH_FUNCTIONS)
    endif()
    execute_process(
      COMMAND "${NVCC}" ${ccbin} -E -x cu -Xcompiler -dM ${extra} "${INCLUDES}"
      OUTPUT_VARIABLE defines
      ERROR_VARIABLE errors
      RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      set(failed "${NVCC} -E (${pass} pass) failed (${status}): ${errors}")
      break()
    endif()
    string(REGEX MATCHALL "#define [A-Za-z_][A-Za-z0-9_]*" found "${defines}")
    foreach(d ${found})
      string(SUBSTRING "${d}" 8 -1 name)
      list(APPEND names "${name}")
    endforeach()
  endforeach()
endif()
if(failed)
  message(WARNING "cm-tune: cannot list the macros of the exported header's includes, so export will not refuse "
                  "a --namespace that names one: ${failed}")
  set(names "")
endif()
list(REMOVE_DUPLICATES names)
list(SORT names)
list(JOIN names "\n" text)
if(names)
  string(APPEND text "\n")
endif()
file(WRITE "${OUT}.tmp" "${text}")
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
