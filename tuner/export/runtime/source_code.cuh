// A header of kernel sources: the program's own device code (nvcc compiled every kernel with the
// program) holds what it launches. Pasted by `cm-tune export --form source` inside detail, after the
// generated kernel_function and export/runtime/header_kernels.cuh.

/// The function of one of the header's own kernels (k_helper_scale or k_helper_split_sum plus the
/// element type).
inline cudaError_t helper_function(int /*device*/, int helper, const void** fn) {
  switch (helper) {
    case k_helper_scale + 0: *fn = reinterpret_cast<const void*>(&scale_kernel<float>); return cudaSuccess;
    case k_helper_scale + 1: *fn = reinterpret_cast<const void*>(&scale_kernel<double>); return cudaSuccess;
    case k_helper_scale + 2: *fn = reinterpret_cast<const void*>(&scale_kernel<int>); return cudaSuccess;
    case k_helper_split_sum + 0: *fn = reinterpret_cast<const void*>(&split_sum_kernel<float>); return cudaSuccess;
    case k_helper_split_sum + 1: *fn = reinterpret_cast<const void*>(&split_sum_kernel<double>); return cudaSuccess;
    case k_helper_split_sum + 2: *fn = reinterpret_cast<const void*>(&split_sum_kernel<int>); return cudaSuccess;
    default: *fn = 0; return cudaErrorInvalidValue;
  }
}

/// Whether the device code that runs on the current device was built with sm_90a's features (a
/// one-thread probe): only then do the TMA kernels exist in it.
inline cudaError_t device_code_has_sm90a(int* built) {
  int* flag = 0;
  *built = 0;
  cudaError_t err = cudaMalloc(&flag, sizeof(int));
  if (err == cudaSuccess) {
    void* args[] = {&flag};
    err = cudaLaunchKernel(reinterpret_cast<const void*>(&tma_probe_kernel<0>), dim3(1), dim3(1), args, 0, 0);
    if (err == cudaSuccess) err = cudaMemcpy(built, flag, sizeof(int), cudaMemcpyDeviceToHost);
    (void)cudaFree(flag);
  }
  return err;
}
