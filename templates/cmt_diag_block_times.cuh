// Diagnostics only: per-block timing of the multistage kernel (scripts/diag/block_times.cu). No
// family includes this header, so it is in no source bundle and never reaches the tuner or an
// exported header. A program that includes it before multistage.cuh turns on the kernel's hook,
// CMT_DIAG_BLOCK_TIMES: each block then records its SM and its start and end (%globaltimer, ns) in
// cmt_block_times[3 * block ...], block in launch order (blockIdx.z not included). Blocks from
// CMT_DIAG_MAX_BLOCKS on record nothing.
#pragma once

#include "cmt_common.cuh"

#ifdef CMT_DIAG_BLOCK_TIMES
#error "include cmt_diag_block_times.cuh before multistage.cuh, which otherwise defines the hook empty"
#endif

#ifndef CMT_DIAG_MAX_BLOCKS
#define CMT_DIAG_MAX_BLOCKS 16384
#endif

__device__ unsigned long long cmt_block_times[3 * CMT_DIAG_MAX_BLOCKS];

// Takes the start time when the kernel's block begins and records the end when it leaves the
// kernel's scope, whichever return it takes.
struct CmtBlockTimer {
  unsigned long long start;
  CMT_DEVICE CmtBlockTimer() { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start)); }
  CMT_DEVICE ~CmtBlockTimer() {
    __syncthreads();  // the kernel's returns are all taken by whole blocks
    const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    if (threadIdx.x != 0 || block >= CMT_DIAG_MAX_BLOCKS) return;
    unsigned long long end;
    unsigned sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    cmt_block_times[3 * block] = sm, cmt_block_times[3 * block + 1] = start, cmt_block_times[3 * block + 2] = end;
  }
};

// The hook, the first statement of the multistage kernel: a timer that lives as long as the block
// runs the kernel. multistage.cuh defines it empty when this header was not included first.
#define CMT_DIAG_BLOCK_TIMES CmtBlockTimer cmt_block_timer
