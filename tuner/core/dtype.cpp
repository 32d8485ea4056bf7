#include "core/dtype.hpp"

#include <stdexcept>

namespace cmt {

static_assert(std::size(k_types) == 3, "a row per DType, in its order");

const TypeInfo& type_info(DType dtype) {
  const auto i = static_cast<size_t>(dtype);
  if (i >= std::size(k_types) || k_types[i].dtype != dtype) throw std::logic_error("type_info: no row for this DType");
  return k_types[i];
}

double type_peak(const DeviceInfo& device, DType dtype) {
  switch (type_info(dtype).peak) {
    case PeakKind::int32: return device.int32_peak_tops();
    case PeakKind::fp64:
      return device.fp64_tensor_peak_tflops() > 0 ? device.fp64_tensor_peak_tflops() : device.fp64_peak_tflops();
    case PeakKind::fp32: break;
  }
  return device.fp32_peak_tflops();
}

}  // namespace cmt
