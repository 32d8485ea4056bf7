// `export --check` on a header of machine code: the images a header holds, read back and unpacked,
// compared byte for byte with the builds export embeds now (the database's cubins, and the runtime
// library), so a header whose machine code is not what the database timed is found and named.
#pragma once

#include <string>
#include <vector>

#include "export/code_images.hpp"

namespace cmt {

/// One image as a header holds it.
struct EmbeddedImage {
  int index = 0;
  std::string arch;
  size_t raw_bytes = 0;
  std::string hash;            // as the header states it
  std::string binary_key;      // the build it says it is (its comment line)
  std::string text;            // base64, the lines joined
};

/// The images of a header of machine code, in order; empty for a header of sources.
std::vector<EmbeddedImage> embedded_images(const std::string& header);

/// Whether a header holds machine code (its provenance says "Form: machine code").
bool is_machine_code_header(const std::string& header);

/// Each way the header's images differ from `code`: "image 3 (kernel 2, sm_90a, build KEY) unpacks to
/// other bytes than the database's build", an image missing or extra, or one that does not unpack.
/// Empty when every image unpacks to exactly the bytes of code's.
std::vector<std::string> image_differences(const std::string& header, const HeaderCode& code);

}  // namespace cmt
