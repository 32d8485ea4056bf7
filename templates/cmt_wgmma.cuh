// Hopper's asynchronous tensor-core path (sm_90a only: NVRTC and ptxas reject wgmma for plain
// sm_90): tensor-map (TMA) copies into shared memory, shared-memory matrix descriptors, and
// wgmma.mma_async with TF32 inputs and FP32 accumulators, A from registers and B from shared memory.
// Used by tf32x3_wgmma.cuh.
#pragma once

#include "cmt_common.cuh"

// A CUtensorMap as the kernel takes it (cuda.h is not part of NVRTC's headers): 128 opaque bytes,
// 64-byte aligned, passed as a __grid_constant__ parameter and named by its address.
struct alignas(64) CmtTensorMap {
  unsigned long long opaque[16];
};

// A box of a 3-D tensor map (coordinates innermost first) into shared memory at dst, completing
// on the mbarrier bar with the box's bytes (zero-filled where it leaves the tensor).
CMT_DEVICE void cmt_tma_load_3d(unsigned dst, const CmtTensorMap* map, int c0, int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

CMT_DEVICE void cmt_tma_prefetch_map(const CmtTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (wgmma
// reading B, TMA writing a stage that was read).
CMT_DEVICE void cmt_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// A barrier of `threads` threads (a multiple of 32) on hardware barrier `id` (1 to 15; 0 is
// __syncthreads's).
CMT_DEVICE void cmt_named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Moves this warpgroup's per-thread register allocation down or up to REGS (a multiple of 8, 24 to
// 256): a producer warpgroup gives registers to the consumers of its block.
template <int REGS>
CMT_DEVICE void cmt_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
CMT_DEVICE void cmt_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// The same, returning whether v was true in any of the threads.
CMT_DEVICE bool cmt_named_barrier_or(int id, int threads, bool v) {
  unsigned any;
  asm volatile(
      "{\n.reg .pred p, q;\n"
      "setp.ne.u32 p, %1, 0;\n"
      "bar.red.or.pred q, %2, %3, p;\n"
      "selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(any)
      : "r"((unsigned)v), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
}

CMT_DEVICE void cmt_store_shared_u4(unsigned addr, const unsigned* v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

CMT_DEVICE void cmt_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
CMT_DEVICE void cmt_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
CMT_DEVICE void cmt_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Keeps the compiler from moving reads or writes of v across the asynchronous wgmma that uses it.
CMT_DEVICE void cmt_wgmma_hold(float& v) { asm volatile("" : "+f"(v)::"memory"); }
CMT_DEVICE void cmt_wgmma_hold(unsigned& v) { asm volatile("" : "+r"(v)::"memory"); }

// The descriptor of a K-major operand tile in shared memory in the 128-byte swizzle: one 128-byte
// row (32 FP32) per m or n, 8-row groups 1024 bytes apart, the tile 1024-byte aligned. addr may
// be advanced by 32 bytes per k8 step within the row (the swizzle applies to the address bits).
CMT_DEVICE unsigned long long cmt_wgmma_desc_k128(unsigned addr) {
  return (unsigned long long)((addr >> 4) & 0x3fffu) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
         (1ull << 62);
}

// Byte offset of element (x, k) of a K-major tile in the 128-byte swizzle (rows of 32 FP32 along k).
CMT_DEVICE unsigned cmt_sw128_kmajor(int x, int k) {
  return (unsigned)(x * 128 + ((((k >> 2) ^ x) & 7) << 4) + (k & 3) * 4);
}
// Byte offset of element (x, k) of an X-major tile stored as 32-wide boxes in the 128-byte swizzle:
// box x / 32 is 32 rows of k, each 32 FP32 along x.
CMT_DEVICE unsigned cmt_sw128_xmajor(int x, int k) {
  return (unsigned)((x >> 5) * 4096 + k * 128 + (((((x & 31) >> 2) ^ k) & 7) << 4) + (x & 3) * 4);
}

// wgmma.mma_async m64nNk8, TF32 inputs, FP32 accumulators; d (N / 2 registers per thread, the
// m64nN accumulator fragment) += a b, or = a b when scale_d is 0.
template <int N>
struct CmtWgmmaTf32;

template <>
struct CmtWgmmaTf32<64> {
  static CMT_DEVICE void rs(float* d, const unsigned* a, unsigned long long b_desc, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));
  }
};

template <>
struct CmtWgmmaTf32<128> {
  static CMT_DEVICE void rs(float* d, const unsigned* a, unsigned long long b_desc, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));
  }
};
