// Shared-memory accesses at 32-bit addresses (see cmt_ptx.cuh) of the 4-byte element types, float
// and int: one element, and four (16 bytes, aligned) at once. The float ones are cmt_ptx.cuh's
// instructions; an int moves through the same 32-bit registers as its bits or with the .u32 forms.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"

CMT_DEVICE void cmt_store_shared_elem(unsigned addr, float v) { cmt_store_shared(addr, v); }
CMT_DEVICE void cmt_store_shared_elem(unsigned addr, int v) { cmt_store_shared(addr, __int_as_float(v)); }

template <class T>
CMT_DEVICE T cmt_load_shared_elem(unsigned addr);
template <>
CMT_DEVICE float cmt_load_shared_elem<float>(unsigned addr) {
  return cmt_load_shared(addr);
}
template <>
CMT_DEVICE int cmt_load_shared_elem<int>(unsigned addr) {
  return __float_as_int(cmt_load_shared(addr));
}

// out[0..3] = the four elements at addr.
CMT_DEVICE void cmt_load_shared4_elem(unsigned addr, float* out) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(out[0]), "=f"(out[1]), "=f"(out[2]), "=f"(out[3])
               : "r"(addr));
}
CMT_DEVICE void cmt_load_shared4_elem(unsigned addr, int* out) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(out[0]), "=r"(out[1]), "=r"(out[2]), "=r"(out[3])
               : "r"(addr));
}

// The four elements x, y, z, w to addr.
CMT_DEVICE void cmt_store_shared4_elem(unsigned addr, float x, float y, float z, float w) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}
CMT_DEVICE void cmt_store_shared4_elem(unsigned addr, int x, int y, int z, int w) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}
