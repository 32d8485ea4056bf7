// Dispatch decisions for `cm-tune query` and `export`: which tuned entry and which kernel serve a
// call. The rules themselves are export/runtime/dispatch_rules.h, which every generated header
// carries too, so the tool and the header decide alike; tests check that they do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace cmt {

/// One tuned problem of one device: its best kernel, and the best one without input requirements.
struct DispatchEntry {
  Problem problem;
  WinnerRecord primary;
  std::optional<WinnerRecord> portable;
};

/// What a call passes that requirements depend on.
struct CallShape {
  Problem problem;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t alignment = 256;   // largest power of two dividing every base address (A, B, C), capped at 256
};

/// A tight row-major call (lda = K, ldb = ldc = N) on freshly allocated buffers.
CallShape tight_call(const Problem& problem);

/// |ln(M/M')| + |ln(N/N')| + |ln(K/K')|: how far apart two problems are in shape and scale.
double log_distance(const Problem& a, const Problem& b);

/// The entry whose problem is nearest in log-distance; ties go to the smaller (M, N, K).
const DispatchEntry* nearest_entry(const std::vector<DispatchEntry>& entries, const Problem& problem);

/// Whether a call satisfies a kernel's requirements.
bool requirements_met(const Requirements& requirements, const CallShape& call);

struct DispatchChoice {
  const DispatchEntry* entry = nullptr;   // nullptr: nothing tuned for the device
  const WinnerRecord* kernel = nullptr;   // primary, or the entry's portable kernel
  bool exact = false;                     // the call's problem was tuned
  bool portable_fallback = false;         // the primary's requirements were not met
  double distance = 0;
  std::string why;                        // one line
};

/// Nearest entry, then its primary kernel if the call meets its requirements, else its portable one.
DispatchChoice choose_kernel(const std::vector<DispatchEntry>& entries, const CallShape& call);

/// The dispatch table of one device from the winners in the database, sorted by problem.
std::vector<DispatchEntry> dispatch_entries(Store& store, int64_t device_id);

}  // namespace cmt
