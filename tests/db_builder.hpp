// A database built through the Store API, as the tuner fills it: devices, one run, sources,
// binaries, trials and winners. The export, model-check and CLI tests build their fixtures with it.
#pragma once

#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <string>

#include "core/hash.hpp"
#include "core/source_bundle.hpp"
#include "core/types.hpp"
#include "store/store.hpp"

namespace cmt::test {

/// What a winner needs to know about its kernel.
struct KernelSpec {
  std::string template_name;
  std::string params;
  std::string name_expression;
  LaunchShape shape;
  Requirements requirements;
  std::string source_hash;
  int registers = 128;
  bool batched = false;   // the family takes batch strides (its kernel's signature has 14 arguments)
  bool takes_batch_count = false;   // and the launch's problem count (15 arguments: problems_per_block)
};

/// Builds a database through the Store API: devices, one run, sources, binaries, trials, winners.
class DbBuilder {
 public:
  explicit DbBuilder(const std::filesystem::path& file) : m_store(file) {
    RunRecord run;
    run.command_line = "cm-tune tune (test fixture)";
    m_run = m_store.begin_run(run);
  }

  Store& store() { return m_store; }

  int64_t add_device(const std::string& uuid, const std::string& name, int cc_major, int cc_minor, int sm_count) {
    DeviceRecord d;
    d.uuid = uuid;
    d.name = name;
    d.cc_major = cc_major;
    d.cc_minor = cc_minor;
    d.sm_count = sm_count;
    d.clock_khz = 1'700'000;
    d.memory_clock_khz = 2'600'000;
    d.memory_bus_bits = 5120;
    d.memory_bytes = 80LL << 30;
    d.l2_bytes = 50LL << 20;
    d.driver_version = 13000;
    d.runtime_version = 13000;
    d.nvrtc_version = "13.0";
    const int64_t id = m_store.upsert_device(d);
    m_devices[uuid] = id;
    return id;
  }

  /// Stores a source bundle; returns its hash (computed like the tuner does).
  std::string add_source(const std::string& template_name, const SourceBundle& bundle) {
    const std::string hash = source_bundle_hash(bundle);
    m_store.put_source(SourceRecord{hash, template_name, bundle.main_name, bundle.main_text, bundle.headers});
    return hash;
  }

  /// A winner of `scope` for a problem on a device, with the trial and binary behind it.
  /// The compile-cache key the fixture gives a kernel's binary.
  static std::string binary_key_of(const KernelSpec& k) {
    Hasher bh;
    bh.field("test-binary").field(k.source_hash).field(k.name_expression);
    return bh.hex();
  }

  /// A passing trial of kernel k on problem p taking ms; its id. `tag` keeps trial keys unique.
  int64_t add_trial(const std::string& uuid, const Problem& p, const std::string& tag, const KernelSpec& k, double ms) {
    if (!m_devices.count(uuid))   // a device stored by an earlier builder on the same file
      for (const auto& d : m_store.devices()) m_devices[d.uuid] = d.id;
    const int64_t device_id = m_devices.at(uuid);
    const std::string binary_key = binary_key_of(k);
    if (!m_store.find_binary(binary_key)) {
      BinaryRecord b;
      b.key = binary_key;
      b.template_name = k.template_name;
      b.params = k.params;
      b.arch = "sm_90";
      b.nvrtc_version = "13.0";
      b.options = "--std=c++17";
      b.source_hash = k.source_hash;
      b.ok = true;
      b.cubin = {'c', 'u', 'b', 'i', 'n'};   // export never reads the cubin
      b.lowered_name = "_Z" + k.template_name;
      b.batched = k.batched;
      b.takes_batch_count = k.takes_batch_count;
      m_store.put_binary(b);
    }
    TrialRecord t;
    t.trial_key = fmt::format("{}/{}/{}/{}", uuid, p.to_string(), tag, binary_key);
    t.run_id = m_run;
    t.device_id = device_id;
    t.template_name = k.template_name;
    t.params = k.params;
    t.name_expression = k.name_expression;
    t.binary_key = binary_key;
    t.problem = p;
    t.lda = p.k;
    t.ldb = p.n;
    t.ldc = p.n;
    t.outcome = Outcome::ok;
    t.median_ms = ms;
    t.gflops = p.flops() / ms / 1e6;
    t.registers = k.registers;
    t.smem_bytes = k.shape.dynamic_smem;
    t.shape = k.shape;
    t.requirements = k.requirements;
    return m_store.insert_trial(t).id;
  }

  void add_winner(const std::string& uuid, const Problem& p, const std::string& scope, const KernelSpec& k, double ms) {
    const int64_t trial_id = add_trial(uuid, p, scope, k, ms);
    const int64_t device_id = m_devices.at(uuid);
    WinnerRecord w;
    w.device_id = device_id;
    w.problem = p;
    w.scope = scope;
    w.trial_id = trial_id;
    w.template_name = k.template_name;
    w.params = k.params;
    w.name_expression = k.name_expression;
    w.median_ms = ms;
    w.gflops = p.flops() / ms / 1e6;
    w.ratio_to_cublas = 0.9;
    w.requirements = k.requirements;
    w.shape = k.shape;
    w.binary_key = binary_key_of(k);
    m_store.put_winner(w);
  }

 private:
  Store m_store;
  int64_t m_run = 0;
  std::map<std::string, int64_t> m_devices;
};

}  // namespace cmt::test
