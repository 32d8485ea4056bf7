// The dispatch rules: which tuned entry and which kernel serve a call. One definition, two users:
// cm-tune compiles it into `query` and `export` (tuner/export/dispatch.cpp), and `cm-tune export`
// pastes it into every generated header inside NS::detail, where sgemm uses it. So it stays plain
// C++11 with no includes and no namespace of its own: the includer wraps it in one and provides
// ::log and ::fabs (<math.h> in cm-tune, <cuda_runtime.h> in the header). Host code only.

/// |ln(a/b)| for a, b >= 1.
inline double log_term(long long a, long long b) {
  return ::fabs(::log(static_cast<double>(a) / static_cast<double>(b)));
}

/// |ln(M/M')| + |ln(N/N')| + |ln(K/K')|: how far apart two problems are in shape and scale.
inline double log_distance(long long m, long long n, long long k, long long m2, long long n2, long long k2) {
  return log_term(m, m2) + log_term(n, n2) + log_term(k, k2);
}

/// Whether problem a comes before problem b in (M, N, K) order.
template <class Problem>
inline bool problem_before(const Problem& a, const Problem& b) {
  if (a.m != b.m) return a.m < b.m;
  if (a.n != b.n) return a.n < b.n;
  return a.k < b.k;
}

/// The position of the entry nearest to M x N x K in log-distance, or -1 when count is 0. Entries
/// are anything with .problem.m, .n and .k; of equally near entries the smallest problem wins.
template <class Entry>
inline int nearest_entry(const Entry* entries, int count, long long M, long long N, long long K) {
  int best = -1;
  double best_distance = 0;
  for (int i = 0; i < count; ++i) {
    const double d = log_distance(M, N, K, entries[i].problem.m, entries[i].problem.n, entries[i].problem.k);
    if (best < 0 || d < best_distance || (d == best_distance && problem_before(entries[i].problem, entries[best].problem))) {
      best = i;
      best_distance = d;
    }
  }
  return best;
}

/// The largest power of two dividing every one of the addresses whose bits are OR-ed in `bits`,
/// capped at 256 (what cudaMalloc guarantees).
inline int alignment_of_bits(unsigned long long bits) {
  const unsigned long long lowest = bits & (~bits + 1);
  return (bits == 0 || lowest >= 256) ? 256 : static_cast<int>(lowest);
}

/// Whether a call meets a kernel's requirements: A, B and C aligned to align_bytes (`alignment` as
/// alignment_of_bits gives it), and lda, ldb and ldc multiples of ld_multiple.
inline bool requirements_met(long long align_bytes, long long ld_multiple, long long lda, long long ldb, long long ldc,
                             long long alignment) {
  const long long multiple = ld_multiple > 1 ? ld_multiple : 1;
  return alignment >= align_bytes && lda % multiple == 0 && ldb % multiple == 0 && ldc % multiple == 0;
}

/// Which kernel serves a call from its nearest entry: the entry's primary kernel when the call meets
/// the primary's requirements, else the entry's portable kernel (no requirements), else the generic
/// default. Kernels are indices; portable < 0 when the entry has none.
inline int entry_kernel(int primary, bool primary_requirements_met, int portable, int generic) {
  if (primary_requirements_met) return primary;
  return portable >= 0 ? portable : generic;
}
