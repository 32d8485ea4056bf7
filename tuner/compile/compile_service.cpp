#include "compile/compile_service.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <system_error>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace cmt {

std::string compile_cache_key(const std::string& template_name, const std::string& name_expression,
                              const std::string& params, const std::string& source_hash, const std::string& arch,
                              const std::string& compiler_version, const std::vector<std::string>& options) {
  Hasher h;
  h.field("cm-tune-compile-v1").field(source_hash).field(template_name);
  h.field(name_expression).field(params);
  h.field(arch).field(compiler_version).field(static_cast<int64_t>(options.size()));
  for (const auto& o : options) h.field(o);
  return h.hex();
}

std::string compile_cache_key(const Candidate& candidate, const std::string& source_hash, const std::string& arch,
                              const std::string& compiler_version, const std::vector<std::string>& options) {
  return compile_cache_key(candidate.tmpl->name, candidate.tmpl->name_expression(candidate.values),
                           params_to_string(candidate.values), source_hash, arch, compiler_version, options);
}

namespace {

/// The arch-specific variant of an architecture: "sm_90" -> "sm_90a" ("sm_90a" and "sm_100f" as they are).
std::string arch_specific_variant(const std::string& arch) {
  return arch.empty() || arch.back() == 'a' || arch.back() == 'f' ? arch : arch + "a";
}

}  // namespace

std::string compile_arch(const TemplateDesc& tmpl, const std::string& arch) {
  return tmpl.arch_specific ? arch_specific_variant(arch) : arch;
}

CompileService::CompileService(Store& store, const Compiler& compiler, std::string arch, int jobs)
    : m_store(store),
      m_compiler(compiler),
      m_arch(std::move(arch)),
      m_version(compiler.version()),
      m_options(compiler.options(m_arch)),
      m_specific_arch(arch_specific_variant(m_arch)),
      m_specific_options(compiler.options(m_specific_arch)),
      m_jobs(jobs < 1 ? hardware_threads() : jobs) {}

CompileService::~CompileService() {
  m_cancelled = true;  // queued compiles come back at once
  m_pool.reset();      // finish and join the workers before the queue goes away
}

const SourceBundle& CompileService::source(const TemplateDesc& tmpl) {
  auto it = m_sources.find(tmpl.name);
  if (it == m_sources.end()) {
    SourceBundle bundle = tmpl.load_source();
    std::string hash = source_bundle_hash(bundle);
    m_store.put_source(SourceRecord{hash, tmpl.name, bundle.main_name, bundle.main_text, bundle.headers});
    it = m_sources.emplace(tmpl.name, std::make_pair(std::move(bundle), std::move(hash))).first;
  }
  return it->second.first;
}

const std::string& CompileService::source_hash(const TemplateDesc& tmpl) {
  source(tmpl);
  return m_sources.at(tmpl.name).second;
}

void CompileService::submit_all(const std::vector<Candidate>& candidates) {
  for (size_t i = 0; i < candidates.size(); ++i) submit(candidates[i], i);
}

void CompileService::submit(const Candidate& cand, size_t index) {
  ++m_stats.total;
  const SourceBundle& bundle = source(*cand.tmpl);
  const std::string& hash = source_hash(*cand.tmpl);
  // An arch-specific family compiles for its own variant, which keys its cache entries apart.
  const bool specific = cand.tmpl->arch_specific;
  const std::string& arch = specific ? m_specific_arch : m_arch;   // compile_arch
  const std::vector<std::string>& options = specific ? m_specific_options : m_options;
  BinaryRecord rec;
  rec.key = compile_cache_key(cand, hash, arch, m_version, options);
  if (auto cached = m_store.find_binary(rec.key)) {
    ++m_stats.cache_hits;
    if (!cached->ok) ++m_stats.failed;
    m_hits.push_back(CompiledCandidate{index, &cand, std::move(*cached), true});
    return;
  }
  rec.template_name = cand.tmpl->name;
  rec.params = params_to_string(cand.values);
  rec.arch = arch;
  rec.nvrtc_version = m_version;
  rec.options = fmt::format("{}", fmt::join(options, " "));
  rec.source_hash = hash;
  rec.batched = cand.tmpl->batched;
  rec.takes_batch_count = cand.tmpl->takes_batch_count();
  if (!m_pool) {
    try {
      m_pool = std::make_unique<ThreadPool>(m_jobs);
    } catch (const std::system_error& e) {  // the system refused a thread (process or memory limits)
      throw InfraError("std::thread", fmt::format("start {} compiler threads", m_jobs),
                       fmt::format("{}; try a smaller --jobs", e.what()), __FILE__, __LINE__);
    }
  }
  ++m_pending;
  m_pool->submit([this, index, &cand, &bundle, &arch, &options, rec = std::move(rec)]() mutable {
    const CompileRequest req{cand.tmpl->name_expression(cand.values), &bundle, arch, options, {}};
    CompileOutput out;
    bool cacheable = true;
    const bool cancelled = m_cancelled;
    if (cancelled) {
      out.log = "not compiled: the run stopped first";
      cacheable = false;
    } else {
      try {
        out = m_compiler.compile(req);
      } catch (const std::exception& e) {
        out.log = e.what();
        cacheable = false;
      }
    }
    rec.ok = out.ok;
    rec.log = std::move(out.log);
    rec.cubin = std::move(out.cubin);
    rec.lowered_name = std::move(out.lowered_name);
    rec.registers = out.registers;
    rec.spill_stores = out.spill_stores;
    rec.spill_loads = out.spill_loads;
    rec.compile_seconds = out.seconds;
    m_done.push(CompiledCandidate{index, &cand, std::move(rec), false, cacheable, cancelled});
  });
}

std::optional<CompiledCandidate> CompileService::next() {
  if (!m_hits.empty()) {
    CompiledCandidate hit = std::move(m_hits.front());
    m_hits.pop_front();
    return hit;
  }
  if (m_pending == 0) return std::nullopt;
  auto done = m_done.pop();
  --m_pending;
  m_stats.cpu_seconds += done->binary.compile_seconds;
  if (done->cancelled)
    ++m_stats.cancelled;
  else if (done->binary.ok)
    ++m_stats.compiled;
  else
    ++m_stats.failed;
  if (done->cacheable) m_store.put_binary(done->binary);
  return done;
}

}  // namespace cmt
