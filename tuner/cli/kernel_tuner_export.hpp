// `db export --format kernel-tuner`: the database's trials as one document of Kernel Tuner's T4
// format (kernel_tuner/schema/T4/1.0.0: results-schema.json and metadata-schema.json), so that its
// tools read cm-tune's results. docs/DATA.md gives the mapping.
#pragma once

#include <string_view>

#include "core/types.hpp"
#include "output/value.hpp"
#include "store/store.hpp"

namespace cmt::cli {

/// The T4 schema version the document follows.
constexpr std::string_view k_t4_schema_version = "1.0.0";

/// T4's `invalidity` of an outcome: correct (ok; abandoned, which passed validation and was timed,
/// if briefly), correctness (wrong), compile (compile_error), runtime (launch_error, crashed),
/// timeout (timeout) or constraints (skipped: the problem or the device misses the kernel's
/// requirements).
std::string_view t4_invalidity(Outcome outcome);

/// One JSON document that is both a T4 results file and a T4 metadata file (neither schema forbids
/// the other's fields, and Kernel Tuner's own results files carry `metadata` too): schema_version;
/// results, a result per trial of every device (ordered by device, then id): its configuration (the
/// template and its parameters), times in milliseconds, invalidity, correctness, measurements and,
/// beside T4's fields, `cm_tune` (the trial's id, device, problem, outcome and reason); metadata:
/// the time unit, the devices as the hardware description, and cm-tune's version.
output::Record t4_document(Store& store);

}  // namespace cmt::cli
