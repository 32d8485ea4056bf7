#include "core/dtype.hpp"

#include <stdexcept>

namespace cmt {

static_assert(std::size(k_types) == 4, "a row per DType, in its order");

const TypeInfo& type_info(DType dtype) {
  const auto i = static_cast<size_t>(dtype);
  if (i >= std::size(k_types) || k_types[i].dtype != dtype) throw std::logic_error("type_info: no row for this DType");
  return k_types[i];
}

DType storage_of(DType dtype) { return type_info(dtype).storage; }

std::string type_names(std::string_view last) {
  std::string out;
  for (size_t i = 0; i < std::size(k_types); ++i) {
    if (i > 0) out += i + 1 < std::size(k_types) || last == "," ? ", " : " " + std::string(last) + " ";
    out += k_types[i].name;
  }
  return out;
}

std::vector<DType> all_types() {
  std::vector<DType> out;
  for (const TypeInfo& t : k_types)
    if (!t.opt_in) out.push_back(t.dtype);
  return out;
}

double type_peak(const DeviceInfo& device, DType dtype) {
  switch (type_info(dtype).peak) {
    case PeakKind::int32: return device.int32_peak_tops();
    case PeakKind::tf32x3: return device.tf32_tensor_peak_tflops() / 3.0;
    case PeakKind::fp64:
      return device.fp64_tensor_peak_tflops() > 0 ? device.fp64_tensor_peak_tflops() : device.fp64_peak_tflops();
    case PeakKind::fp32: break;
  }
  return device.fp32_peak_tflops();
}

}  // namespace cmt
