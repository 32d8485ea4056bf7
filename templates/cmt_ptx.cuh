// PTX wrappers: the kernel's dynamic shared memory and 32-bit shared addresses, shared loads and
// stores at such addresses (floats and doubles), cp.async copies (sm_80+), and mbarriers and bulk
// (TMA) copies (sm_90+). Kernel files hold no inline PTX of their own but their family's compute
// instruction (dmma's mma.sync); cluster PTX is in cmt_cluster.cuh.
// Kernels form every shared-memory address in 32 bits from one base with these: left to themselves,
// NVRTC (the tuner) and nvcc (an exported header) address shared memory differently and can
// compile the same kernel to different code.
#pragma once

#include "cmt_common.cuh"

// The kernel's dynamic shared memory. C linkage keeps its PTX name `cmt_dynamic_smem` inside the
// namespaces an exported header puts these sources in, so cmt_dynamic_smem_address can name it.
extern "C" {
extern __shared__ float4 cmt_dynamic_smem[];
}

// The kernel's dynamic shared memory, as floats (16-byte aligned).
CMT_DEVICE float* cmt_dynamic_smem_floats() { return reinterpret_cast<float*>(cmt_dynamic_smem); }

// Its 32-bit shared address, taken from the symbol as nvcc does (NVRTC converts a 64-bit address
// instead, which changes the code ptxas makes of the kernel). The unused "l" operand makes both
// compilers declare the symbol.
CMT_DEVICE unsigned cmt_dynamic_smem_address() {
  unsigned a;
  asm("mov.u32 %0, cmt_dynamic_smem;" : "=r"(a) : "l"(cmt_dynamic_smem));
  return a;
}

// The 32-bit shared address of a generic pointer into shared memory.
CMT_DEVICE unsigned cmt_smem_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// One float to / from a 32-bit shared-memory address (NVRTC, left to itself, forms 64-bit ones).
CMT_DEVICE void cmt_store_shared(unsigned addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
CMT_DEVICE float cmt_load_shared(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
CMT_DEVICE float4 cmt_load_shared4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// One double, and two consecutive doubles (16-byte aligned), from / to a 32-bit shared-memory address.
CMT_DEVICE double cmt_load_shared_f64(unsigned addr) {
  double v;
  asm volatile("ld.shared.f64 %0, [%1];\n" : "=d"(v) : "r"(addr) : "memory");
  return v;
}
CMT_DEVICE double2 cmt_load_shared_f64x2(unsigned addr) {
  double2 v;
  asm volatile("ld.shared.v2.f64 {%0, %1}, [%2];\n" : "=d"(v.x), "=d"(v.y) : "r"(addr) : "memory");
  return v;
}
CMT_DEVICE void cmt_store_shared_f64x2(unsigned addr, double x, double y) {
  asm volatile("st.shared.v2.f64 [%0], {%1, %2};\n" ::"r"(addr), "d"(x), "d"(y) : "memory");
}

// W (1, 2 or 4) consecutive floats of shared memory at a 32-bit address aligned to 4*W bytes.
template <int W>
CMT_DEVICE void cmt_load_shared_vec(unsigned addr, float* out) {
  if (W == 4) {
    const float4 v = cmt_load_shared4(addr);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  } else if (W == 2) {
    float x, y;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(x), "=f"(y) : "r"(addr) : "memory");
    out[0] = x;
    out[1] = y;
  } else {
    out[0] = cmt_load_shared(addr);
  }
}

// cp.async: asynchronous global -> shared copies (sm_80+). A source size below the copy size
// zero-fills the rest, which is how out-of-range elements become zeros without a branch.
CMT_DEVICE void cmt_cp_async_4_to(unsigned dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(inside ? 4 : 0));
}

// 8 bytes (one double), zero-filled when `inside` is false (the source is not read).
CMT_DEVICE void cmt_cp_async_8_to(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(inside ? 8 : 0));
}

CMT_DEVICE void cmt_cp_async_16_to(unsigned dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// BYTES (4, 8 or 16) cached in L1 (.ca: neighbouring copies share sectors); src_bytes < BYTES
// zero-fills the rest (0: nothing is read).
template <int BYTES>
CMT_DEVICE void cmt_cp_async_ca_to(unsigned dst, const float* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(BYTES),
               "r"(src_bytes));
}

CMT_DEVICE void cmt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
CMT_DEVICE void cmt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// Bulk (TMA) copies into shared memory, completed on an mbarrier (sm_90+). Shared addresses are
// 32-bit; the mbarrier is 8 bytes, 8-byte aligned. Without CMT_HAS_BULK_COPY these compile to
// nothing: callers test it and take another path.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CMT_HAS_BULK_COPY 1
#else
#define CMT_HAS_BULK_COPY 0
#endif

CMT_DEVICE void cmt_mbarrier_init(unsigned bar, int count) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_init_fence() {
#if CMT_HAS_BULK_COPY
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Arrives once on `bar` and expects `bytes` more from bulk copies before the phase completes.
CMT_DEVICE void cmt_mbarrier_arrive_expect(unsigned bar, unsigned bytes) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_arrive(unsigned bar) {
#if CMT_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
CMT_DEVICE void cmt_mbarrier_wait(unsigned bar, unsigned parity) {
#if CMT_HAS_BULK_COPY
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
// Copies `bytes` (a multiple of 16) from 16-byte-aligned global memory to shared memory.
CMT_DEVICE void cmt_bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
#if CMT_HAS_BULK_COPY
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}
