// The held-out check of the export model (export/model_check.hpp) as an output table, a row per
// left-out problem: what `export --regret` prints, `export --json` carries and `report` shows.
#pragma once

#include <string>

#include "export/export_model.hpp"
#include "export/model_check.hpp"
#include "output/table.hpp"

namespace cmt::report {

/// "template[params]" of a kernel of the model, or "(none: no kernel computes it)" for -1.
std::string model_kernel_label(const ExportModel& model, int kernel);

/// One row per left-out problem: the kernel chosen without it, its measured time, the fastest
/// measured kernel and its time, the regret and the chosen kernel's held-out model error.
output::Table held_out_table(const ExportModel& model, const HeldOutCheck& check);

}  // namespace cmt::report
