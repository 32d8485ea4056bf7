// Block rasterization: which tile of C each block computes, and a block's index in launch order.
// cmt_thin_edges.cuh adds the cmt_block_origin that gives the interior tiles to the first blocks.
#pragma once

#include "cmt_common.cuh"

// Maps block `block` of a (grid_n, grid_m) row-major launch onto tiles so that
// consecutive blocks walk down groups of SWIZZLE tile rows, column by column. Blocks running at the
// same time then share A row panels and B column panels in L2. SWIZZLE == 1 keeps the launch order.
template <int SWIZZLE>
CMT_DEVICE void cmt_swizzle_tile(int block, int grid_n, int grid_m, int& tile_m, int& tile_n) {
  const int group = block / (SWIZZLE * grid_n);
  const int first_m = group * SWIZZLE;
  const int rows = grid_m - first_m < SWIZZLE ? grid_m - first_m : SWIZZLE;
  const int in_group = block - group * SWIZZLE * grid_n;
  tile_m = first_m + in_group % rows;
  tile_n = in_group / rows;
}

template <int SWIZZLE>
CMT_DEVICE void cmt_block_tile(int& tile_m, int& tile_n) {
  if (SWIZZLE <= 1) {
    tile_m = blockIdx.y;
    tile_n = blockIdx.x;
    return;
  }
  cmt_swizzle_tile<SWIZZLE>(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x, gridDim.y, tile_m, tile_n);
}

// Top-left element (block_m, block_n) of this block's BM x BN tile of C, after rasterization.
template <int BM, int BN, int SWIZZLE>
CMT_DEVICE void cmt_block_origin(int& block_m, int& block_n) {
  int tile_m, tile_n;
  cmt_block_tile<SWIZZLE>(tile_m, tile_n);
  block_m = tile_m * BM;
  block_n = tile_n * BN;
}

// This block's index in launch order (blockIdx.z not included).
CMT_DEVICE int cmt_linear_block() { return blockIdx.y * gridDim.x + blockIdx.x; }
