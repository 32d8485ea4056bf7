// The seed article's batched GEMM, as a baseline for `bench`: one thread per element of C, the batch
// on grid z (its bmm kernel), with the plain loop over k or the loop over BLOCK_DIM x BLOCK_DIM
// shared-memory tiles. cm-tune's batched kernels are judged against the best of these variants
// (issue goal: ">= 1.0x what the seed's approach gives"). Compiled by nvcc into the library, for
// every element type; int32 wraps (unsigned arithmetic), as the INT32 contract says.
#pragma once

#include <string>
#include <vector>

#include "cuda/kernel_module.hpp"

namespace cmt {

/// One variant of the seed's approach.
struct SeedBmmVariant {
  std::string name;      // e.g. "tiled 32x32"
  GemmLauncher launch;   // any layout, batch and type of GemmArgs
};

/// The variants bench times: the per-element loop with 16 x 16 blocks, and the shared-memory tiles
/// of 16 and 32, each launching on `stream`.
std::vector<SeedBmmVariant> seed_bmm_variants(cudaStream_t stream);

}  // namespace cmt
