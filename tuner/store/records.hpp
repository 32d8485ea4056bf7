// Rows of the cm-tune database, as plain structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace cmt {

/// A compiled candidate in the compile cache (table binaries).
struct BinaryRecord {
  std::string key;               // compile cache key (hash)
  std::string template_name;
  std::string params;            // params_to_string
  std::string arch;              // "sm_90"
  std::string nvrtc_version;     // "13.0"
  std::string options;           // compile options joined by ' '
  std::string source_hash;       // hash of the template source bundle
  bool ok = false;
  std::string log;
  std::vector<char> cubin;       // empty when !ok
  std::string lowered_name;
  int registers = -1;            // -1: unknown
  int spill_stores = -1;
  int spill_loads = -1;
  double compile_seconds = 0.0;
  bool batched = false;          // the kernel takes the three batch strides after ldc
  bool takes_batch_count = false;  // and then the launch's problem count (`int batch`)
};

/// The exact template source a binary was compiled from, kept so export reproduces it (table sources).
struct SourceRecord {
  std::string hash;              // hash of the bundle (same as BinaryRecord::source_hash)
  std::string template_name;
  std::string main_name;
  std::string main_text;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text), sorted by name
};

/// A GPU as seen by a run (table devices). uuid is the identity.
struct DeviceRecord {
  int64_t id = 0;                // assigned by the store
  std::string uuid;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int driver_version = 0;        // e.g. 13000
  int runtime_version = 0;
  std::string nvrtc_version;
  std::string first_seen;        // ISO 8601 UTC, set by the store (ignored by upsert_device)
  std::string last_seen;         // ISO 8601 UTC, set by the store on every upsert_device
};

struct RunRecord {
  int64_t id = 0;
  std::string command_line;
  std::string preset_path;
  std::string preset_hash;
  std::optional<int64_t> device_id;
  std::string started_at;        // ISO 8601 UTC, set by the store
  std::string ended_at;          // empty while running
  std::string status;            // "running", "done", "failed", "interrupted"
};

/// One candidate measured on one problem on one device (table trials).
struct TrialRecord {
  int64_t id = 0;
  std::string trial_key;         // content key; unique
  int64_t run_id = 0;
  int64_t device_id = 0;
  std::string template_name;
  std::string params;
  std::string name_expression;   // e.g. "cmt_sgemm_blocktile2d<128, 64, 8, 8, 8>"
  std::string binary_key;
  Problem problem;
  int64_t lda = 0, ldb = 0, ldc = 0;
  Outcome outcome = Outcome::ok;
  std::string reason;            // one line; empty when ok
  std::string log;               // compile log or other detail
  std::optional<double> max_abs_error;
  std::optional<double> max_error_ratio;   // max |err| / tolerance over all checks (< 1 passes)
  /// Types validated against FP64 (tf32x3): the FP32 SIMT reference's max |err| / tolerance on the
  /// same data, which max_error_ratio may not pass.
  std::optional<double> simt_error_ratio;
  std::optional<double> median_ms;
  std::optional<double> min_ms;
  std::optional<double> cv;                // coefficient of variation of the samples
  std::optional<int> samples;
  std::optional<double> gflops;            // from median_ms
  std::optional<double> ratio_to_cublas;   // cublas median / this median (>1 is faster)
  std::optional<double> retime_median_ms;  // median of the interleaved re-timing, if re-timed
  int registers = -1;
  int64_t smem_bytes = -1;                 // static + dynamic
  LaunchShape shape;                       // launch shape measured
  Requirements requirements;
  std::string created_at;
};

/// Whether a trial passed: validated and timed (outcome ok, with a median).
inline bool passed(const TrialRecord& trial) { return trial.outcome == Outcome::ok && trial.median_ms.has_value(); }

/// cuBLAS on one problem on one device (table baselines).
struct BaselineRecord {
  int64_t device_id = 0;
  Problem problem;
  int64_t lda = 0, ldb = 0, ldc = 0;
  double median_ms = 0;
  double min_ms = 0;
  double cv = 0;
  int samples = 0;
  double gflops = 0;
  int64_t run_id = 0;
  std::string created_at;
};

/// Best trial per device x problem x scope (table winners). Scope "overall" is the best of all;
/// "portable" the best with no input requirements; otherwise a template name.
struct WinnerRecord {
  int64_t device_id = 0;
  Problem problem;
  std::string scope;
  int64_t trial_id = 0;
  std::string template_name;
  std::string params;
  std::string name_expression;
  double median_ms = 0;
  double gflops = 0;
  double ratio_to_cublas = 0;
  Requirements requirements;
  LaunchShape shape;
  std::string binary_key;
};

}  // namespace cmt
