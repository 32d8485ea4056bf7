// cm-tune devices [--json]: what the GPUs are and what they can do.
#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/device_report.hpp"
#include "core/error.hpp"
#include "cuda/device.hpp"

namespace cmt::cli {

void add_devices_command(CLI::App& app, GlobalOptions& /*global*/, Action& action) {
  auto* sub = app.add_subcommand("devices", "List the CUDA devices and their properties");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output: {\"devices\": [...]}, plus \"error\" when there is no usable GPU");
  sub->callback([&action, json] {
    action = [json] {
      std::vector<DeviceInfo> devices;
      std::string error;
      try {
        devices = query_devices();
        if (devices.empty()) error = "no CUDA device present";
      } catch (const NoDeviceError& e) {
        if (!*json) throw;
        error = e.what();
      }
      if (*json) {
        // {"devices": [...]}; without a usable GPU also "error", and the same exit code and line as without --json.
        output::Record doc{{"devices", output::table_records(device_table(devices))}};
        if (!error.empty()) doc.set("error", error);
        print_json(doc);
      }
      if (!error.empty()) throw NoDeviceError(error);
      if (!*json)
        for (const auto& d : devices) fmt::print("{}", device_text(d));
      return 0;
    };
  });
}

}  // namespace cmt::cli
