#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cmt {

SampleStats summarize(std::vector<float> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.count = static_cast<int>(n);
  s.median = n % 2 ? samples[n / 2] : 0.5 * (static_cast<double>(samples[n / 2 - 1]) + samples[n / 2]);
  s.min = samples.front();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (float x : samples) var += (x - s.mean) * (x - s.mean);
  var = n > 1 ? var / static_cast<double>(n - 1) : 0.0;
  s.cv = s.mean > 0 ? std::sqrt(var) / s.mean : 0.0;
  return s;
}

double gflops(double flops, double milliseconds) { return milliseconds > 0 ? flops / (milliseconds * 1e6) : 0.0; }

}  // namespace cmt
