// The half of test_support that needs the CUDA library: whether a GPU can be used here.
#include "cuda/device.hpp"
#include "test_support.hpp"

namespace cmt::test {

std::string gpu_unavailable_reason() {
  static const std::string reason = [] {
    try {
      return device_count() > 0 ? std::string{} : std::string("no CUDA device present");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

}  // namespace cmt::test
