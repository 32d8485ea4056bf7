// cm-tune list [--config FILE] [--template NAME] [--json]: the search space of a preset.
#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/list_render.hpp"
#include "cli/sizes.hpp"
#include "space/space.hpp"

namespace cmt::cli {

void add_list_command(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* sub = app.add_subcommand("list", "Show the templates, parameters, constraints and counts of a preset");
  struct Options {
    SpaceOptions space;
    std::string arch;
    bool json = false;
    bool candidates = false;
    std::string layout;
    std::string dtype;
  };
  auto opts = std::make_shared<Options>();
  add_space_options(*sub, opts->space);
  sub->add_option("--arch", opts->arch,
                  fmt::format("Enumerate for this architecture's limits, e.g. sm_80 (default: GPU 0's, else {})",
                              k_default_arch))
      ->check(non_empty_arch());
  sub->add_flag("--candidates", opts->candidates,
                "List every candidate instead: kernel instantiation, launch shape and requirements");
  sub->add_option("--layout", opts->layout,
                  "Enumerate the candidates of these layouts: nn (default), nt, tn, tt, a comma list, or all");
  sub->add_option("--dtype", opts->dtype,
                  "Enumerate the candidates of these element types: f32 (default), f64, i32, the opt-in class tf32x3, a "
                  "comma list, or all (the IEEE types)");
  sub->add_flag("--json", opts->json, "Machine-readable output");
  sub->callback([&action, &global, opts] {
    action = [&global, opts] {
      const SpaceChoice choice = load_space_choice(global, opts->space);
      const auto& [templates, preset, only] = choice;
      std::string note;
      Target target = resolve_target(opts->arch, &note);
      if (!opts->layout.empty()) target.layouts = layout_list(opts->layout);
      if (!opts->dtype.empty()) target.dtypes = parse_dtype_list(opts->dtype);
      const SearchSpace space = enumerate_space(templates, preset, target, only);
      if (opts->candidates && opts->json)
        print_json(output::table_records(candidate_table(space)));
      else if (opts->candidates)
        print_text(candidate_table(space), {"", false});
      else if (opts->json)
        print_json(space_record(templates, preset, target, space));
      else
        fmt::print("{}", render_space_text(templates, preset, target, note, space));
      return 0;
    };
  });
}

}  // namespace cmt::cli
