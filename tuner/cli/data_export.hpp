// `db export`'s rows: the database's trials, winners, cuBLAS baselines or devices as one table each,
// for the CSV and JSON-lines printers (output/printers.hpp). Columns take the CUTLASS profiler's
// names where they mean the same (Problem, Operation, Disposition, m, n, k, A, B, C, Runtime,
// GFLOPs, ...) and cm-tune's own otherwise; docs/DATA.md lists them.
#pragma once

#include <optional>
#include <string_view>

#include "core/types.hpp"
#include "output/table.hpp"
#include "store/store.hpp"

namespace cmt::cli {

/// Which rows `db export --what` exports.
enum class ExportWhat { trials, winners, baselines, devices };

/// The ExportWhat of "trials", "winners", "baselines" or "devices"; nullopt for any other name.
std::optional<ExportWhat> parse_export_what(std::string_view name);
/// "trials", "winners", "baselines" or "devices".
std::string_view export_what_name(ExportWhat what);

/// The CUTLASS profiler's Disposition of an outcome: passed (ok, and abandoned, which passed
/// validation before its timing stopped), incorrect (wrong), not_supported (skipped: the problem or
/// the device misses the kernel's requirements) or failed (compile_error, launch_error, crashed,
/// timeout).
std::string_view cutlass_disposition(Outcome outcome);

/// The CUTLASS profiler's name of an operand: its element type as stored ("f32", "f64", "s32") and
/// its layout over the row-major storage ("row", or "column" for a transposed operand): "f32:column".
std::string cutlass_operand(DType dtype, bool transposed);

/// The rows of `what`, read from the store (it only reads): a row per trial (ordered by device, then
/// id), winner (by device, problem and scope), baseline (by device and problem) or device (by id).
output::Table export_table(Store& store, ExportWhat what);

}  // namespace cmt::cli
