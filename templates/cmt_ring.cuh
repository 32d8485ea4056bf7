// The cp.async ring: STAGES shared-memory stages, filled STAGES - 1 k tiles (or steps) ahead of the
// one being multiplied, so the copies of later tiles are in flight while the block computes. Each
// tile's copies are one commit group; step t waits until at most STAGES - 2 groups are pending
// (tile t has landed), meets the block at a barrier, and only then refills the stage tile t - 1
// used. multistage (and through it clusterk and clusterk_deep), fused_batch, tf32x3_mma and
// skinny_n (two stages) run their loops with it, dmma its prologue; the copies this leaves are listed in
// templates/README.md ("The cp.async ring"), with when they may go.
//
// A kernel calls prologue() once and advance() at the top of every step; `issue(stage, tile)`
// issues the copies of one tile into one stage, and the kernel may ignore either argument and keep
// its own count (fused_batch rotates byte offsets). Both calls inline to the code the kernels had
// written out, but the machine code of a kernel can still change with how its `issue` is
// written: check with scripts/diag/sass_digest.py.
#pragma once

#include "cmt_common.cuh"
#include "cmt_ptx.cuh"

template <int STAGES>
struct CmtCpAsyncRing {
  static_assert(STAGES >= 2, "a ring has at least two stages");

  // Tiles 0 .. STAGES - 2 (those below `tiles`) into stages 0 .. STAGES - 2, one commit group each;
  // the empty groups past the last tile keep the count of pending groups uniform.
  template <class Issue>
  static CMT_DEVICE void prologue(int tiles, Issue&& issue) {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < tiles) issue(s, s);
      cmt_cp_async_commit();
    }
  }

  // The top of step t: tile t has landed for every thread, and every thread is done with the stage
  // of tile t - 1, which tile t + STAGES - 1 (when below `tiles`) now fills as one commit group.
  template <class Issue>
  static CMT_DEVICE void advance(int t, int tiles, Issue&& issue) {
    cmt_cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = t + STAGES - 1;
    if (next < tiles) issue(next % STAGES, next);
    cmt_cp_async_commit();
  }
};
