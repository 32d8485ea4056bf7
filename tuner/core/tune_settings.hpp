// How candidates are measured and winners chosen: the [tune] table of a preset (space/preset.hpp
// parses it), which the measuring stage and the driver read. In core, as every stage shares it and
// none owns it: the preset carries it downstream.
#pragma once

namespace cmt {

/// Tuning settings a preset may carry ([tune] table); defaults when absent.
struct TuneSettings {
  double budget_ms = 25.0;       // sampling time per candidate and problem
  int min_samples = 10;
  int max_samples = 2000;
  int warmup = 2;
  int retime_top = 8;            // candidates re-timed, interleaved, per problem
  int retime_rounds = 30;
  double abandon_factor = 3.0;   // stop timing when the first samples are this much slower than the best
  // Kernels that spill registers to local memory are skipped: how much they spill depends on the
  // compiler front end (NVRTC here, nvcc for an exported header), so their speed would not carry over.
  bool allow_spills = false;
};

}  // namespace cmt
