#include "report/held_out_table.hpp"

#include "core/types.hpp"

namespace cmt::report {

std::string model_kernel_label(const ExportModel& model, int kernel) {
  if (kernel < 0) return "(none: no kernel computes it)";
  const ExportKernel& k = model.kernels.at(static_cast<size_t>(kernel));
  return kernel_label(k.template_name, k.params);
}

output::Table held_out_table(const ExportModel& model, const HeldOutCheck& c) {
  using output::Column;
  const auto label = [&](int kernel) {
    return kernel >= 0 ? output::Value(model_kernel_label(model, kernel)) : output::Value();
  };
  const std::string none = model_kernel_label(model, -1);
  output::Table table({Column("problem").fit(), Column("chosen", "chosen without it").width(16).fit(1).null_text(none),
                       Column("chosen_predicted_us").show(output::Show::data),
                       Column("chosen_us", "its us").right().width(10).precision(1).null_text("not meas."),
                       Column("chosen_measured").show(output::Show::data),
                       Column("best", "fastest measured").width(16).fit(1).null_text(none).gap("  "),
                       Column("best_us", "its us").right().width(10).precision(1),
                       Column("regret").right().width(7).precision(2),
                       Column("chosen_error", "model error").right().width(12).scale(100).precision(1).suffix("%")});
  for (const HeldOutProblem& p : c.problems)
    table.add_row()
        .set("problem", p.problem.to_string())
        .set("chosen", label(p.chosen))
        .set("chosen_predicted_us", p.chosen_predicted_us)
        .set("chosen_us", p.chosen_us)
        .set("chosen_measured", p.chosen_us.has_value())
        .set("chosen_error", p.chosen_error)
        .set("best", label(p.best))
        .set("best_us", p.best_us)
        .set("regret", p.regret);
  return table;
}

}  // namespace cmt::report
