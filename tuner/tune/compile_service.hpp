// Compiles a list of candidates on a thread pool, through the compile cache in the database.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "space/space.hpp"
#include "store/store.hpp"

namespace cmt {

struct CompiledCandidate {
  size_t index = 0;                  // position in the candidate list
  const Candidate* candidate = nullptr;
  BinaryRecord binary;               // ok, log, cubin, lowered name, resources
  bool cache_hit = false;
  bool cacheable = true;             // false for failures of the machinery (not of the source)
};

struct CompileStats {
  int64_t total = 0;
  int64_t cache_hits = 0;
  int64_t compiled = 0;              // fresh NVRTC compiles that succeeded
  int64_t failed = 0;                // compile errors, cached or fresh
  double cpu_seconds = 0.0;          // summed NVRTC time of fresh compiles
};

/// Hash of a source bundle: main file and every include, each name and text delimited.
std::string source_bundle_hash(const SourceBundle& bundle);
/// The compile cache key of one candidate.
std::string compile_cache_key(const Candidate& candidate, const std::string& source_hash, const std::string& arch,
                              const std::string& nvrtc_version, const std::vector<std::string>& options);

/// Feeds candidates to NVRTC workers and hands results back in completion order. Cache hits come
/// first. Database access happens only on the thread that calls start() and next().
class CompileService {
 public:
  CompileService(Store& store, std::string arch, int jobs);
  ~CompileService();

  /// Looks every candidate up in the cache and queues the misses for compilation.
  void start(const std::vector<Candidate>& candidates);
  /// The next finished candidate (stored in the cache if fresh), or nullopt when all are done.
  std::optional<CompiledCandidate> next();

  /// Stops starting new compiles; those not started come back as not cacheable failures.
  void cancel() { m_cancelled = true; }
  const CompileStats& stats() const { return m_stats; }
  const std::string& arch() const { return m_arch; }
  /// The source bundle of a template (loaded once).
  const SourceBundle& source(const TemplateDesc& tmpl);
  const std::string& source_hash(const TemplateDesc& tmpl);

 private:
  Store& m_store;
  std::string m_arch;
  std::string m_nvrtc_version;
  std::vector<std::string> m_options;
  int m_jobs;
  std::map<std::string, std::pair<SourceBundle, std::string>> m_sources;  // template -> (bundle, hash)
  std::vector<CompiledCandidate> m_hits;
  size_t m_next_hit = 0;
  int64_t m_pending = 0;
  BlockingQueue<CompiledCandidate> m_done;
  std::unique_ptr<ThreadPool> m_pool;
  CompileStats m_stats;
  std::atomic<bool> m_cancelled{false};
};

}  // namespace cmt
