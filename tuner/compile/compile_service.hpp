// The compile stage: candidates go through the compile cache in the database, and the misses to a
// Compiler on a thread pool; results come back in completion order, cache hits first.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.hpp"
#include "core/thread_pool.hpp"
#include "space/space.hpp"
#include "store/store.hpp"

namespace cmt {

struct CompiledCandidate {
  size_t index = 0;                  // what the caller submitted it with (its position in the space)
  const Candidate* candidate = nullptr;
  BinaryRecord binary;               // ok, log, cubin, lowered name, resources
  bool cache_hit = false;
  bool cacheable = true;             // false for failures of the machinery (not of the source)
  bool cancelled = false;            // not compiled: cancel() came first (not cacheable, not a failure)
};

struct CompileStats {
  int64_t total = 0;                 // candidates submitted
  int64_t cache_hits = 0;
  int64_t compiled = 0;              // fresh compiles that succeeded
  int64_t failed = 0;                // compile errors, cached or fresh
  int64_t cancelled = 0;             // not compiled: cancel() came before their turn
  double cpu_seconds = 0.0;          // summed compile time of fresh compiles
};

/// The compile cache key of one build: the source bundle's hash, the template, its instantiation
/// (name expression and params_to_string), the arch, the compiler version and every option, each
/// field delimited. Every producer of builds keys them with it (the compile service, and export's
/// kernel cache for the kernels a database holds no build of).
std::string compile_cache_key(const std::string& template_name, const std::string& name_expression,
                              const std::string& params, const std::string& source_hash, const std::string& arch,
                              const std::string& compiler_version, const std::vector<std::string>& options);
/// The key of a candidate's build.
std::string compile_cache_key(const Candidate& candidate, const std::string& source_hash, const std::string& arch,
                              const std::string& compiler_version, const std::vector<std::string>& options);

/// The architecture a template is compiled for on `arch`: its arch-specific variant ("sm_90" ->
/// "sm_90a") for a family that declares arch_specific, else `arch` itself.
std::string compile_arch(const TemplateDesc& tmpl, const std::string& arch);

/// Database access happens only on the thread that calls submit() and next().
class CompileService {
 public:
  /// jobs < 1: one compiler thread per hardware thread.
  CompileService(Store& store, const Compiler& compiler, std::string arch, int jobs);
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  /// Looks the candidate up in the cache, or queues it for compilation. The candidate must outlive
  /// the service; `index` comes back with its result.
  void submit(const Candidate& candidate, size_t index);
  /// Submits every candidate, each with its position as index.
  void submit_all(const std::vector<Candidate>& candidates);
  /// The next finished candidate (stored in the cache if fresh), or nullopt when none is in flight.
  std::optional<CompiledCandidate> next();
  /// Candidates submitted and not yet returned by next().
  size_t in_flight() const { return m_hits.size() + static_cast<size_t>(m_pending); }

  /// Stops starting new compiles; those not started come back as not cacheable failures.
  void cancel() { m_cancelled = true; }
  const CompileStats& stats() const { return m_stats; }
  const std::string& arch() const { return m_arch; }
  /// The source bundle of a template (loaded once, stored in the database's sources table).
  const SourceBundle& source(const TemplateDesc& tmpl);
  const std::string& source_hash(const TemplateDesc& tmpl);

 private:
  Store& m_store;
  const Compiler& m_compiler;
  std::string m_arch;
  std::string m_version;
  std::vector<std::string> m_options;
  std::string m_specific_arch;                  // compile_arch's variant of m_arch for arch-specific families
  std::vector<std::string> m_specific_options;  // and its options
  int m_jobs;
  std::map<std::string, std::pair<SourceBundle, std::string>> m_sources;  // template -> (bundle, hash)
  std::deque<CompiledCandidate> m_hits;
  int64_t m_pending = 0;
  BlockingQueue<CompiledCandidate> m_done;
  std::unique_ptr<ThreadPool> m_pool;
  CompileStats m_stats;
  std::atomic<bool> m_cancelled{false};
};

}  // namespace cmt
