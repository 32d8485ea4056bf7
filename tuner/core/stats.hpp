// Summary statistics of timing samples.
#pragma once

#include <vector>

namespace cmt {

struct SampleStats {
  double median = 0;
  double min = 0;
  double mean = 0;
  double cv = 0;      // standard deviation / mean
  int count = 0;
};

/// Summarizes samples (milliseconds); all zeros for an empty list.
SampleStats summarize(std::vector<float> samples);

/// 2*M*N*K / time, in GFLOP/s.
double gflops(double flops, double milliseconds);

}  // namespace cmt
