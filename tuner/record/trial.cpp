#include "record/trial.hpp"

#include "core/hash.hpp"
#include "measure/protocol.hpp"

namespace cmt {

std::string trial_key(const std::string& device_uuid, const std::string& binary_key, const Problem& problem) {
  Hasher h;
  h.field(k_trial_protocol).field(device_uuid).field(binary_key).field(problem.to_string());
  return h.hex();
}

Measurement compile_failure(const BinaryRecord& binary) {
  Measurement m;
  m.outcome = Outcome::compile_error;
  m.reason = binary.log.substr(0, binary.log.find('\n')).substr(0, 200);
  m.log = binary.log;
  m.registers = binary.registers;
  return m;
}

TrialRecord make_trial(const TrialContext& context, const Candidate& candidate, const BinaryRecord& binary,
                       const Problem& problem, const Measurement& m, std::optional<double> cublas_ms) {
  TrialRecord t;
  t.trial_key = trial_key(context.device_uuid, binary.key, problem);
  t.run_id = context.run_id;
  t.device_id = context.device_id;
  t.template_name = candidate.tmpl->name;
  t.params = params_to_string(candidate.values);
  t.name_expression = candidate.tmpl->name_expression(candidate.values);
  t.binary_key = binary.key;
  t.problem = problem;
  t.lda = m.layout.lda;
  t.ldb = m.layout.ldb;
  t.ldc = m.layout.ldc;
  t.outcome = m.outcome;
  t.reason = m.reason;
  t.log = m.log;
  t.max_abs_error = m.max_abs_error;
  t.max_error_ratio = m.max_error_ratio;
  t.simt_error_ratio = m.simt_error_ratio;
  if (m.timing) {
    t.median_ms = m.timing->median;
    t.min_ms = m.timing->min;
    t.cv = m.timing->cv;
    t.samples = m.timing->count;
    t.gflops = gflops(problem.flops(), m.timing->median);
    if (cublas_ms) t.ratio_to_cublas = *cublas_ms / m.timing->median;
  }
  t.registers = m.registers;
  t.smem_bytes = m.smem_bytes;
  t.shape = candidate.shape;
  t.requirements = candidate.requirements;
  return t;
}

}  // namespace cmt
