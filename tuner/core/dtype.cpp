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

int64_t problem_bytes(const Problem& p) {
  const int64_t element = type_info(p.dtype).bytes;
  const bool batched = p.batch > 1;
  const int64_t a = p.m * p.k * (batched && p.stride_a == 0 ? 1 : p.batch);
  const int64_t b = p.k * p.n * (batched && p.stride_b == 0 ? 1 : p.batch);
  const int64_t c = p.m * p.n * p.batch;
  return element * (a + b + c);
}

double type_peak(const DeviceInfo& device, DType dtype) { return type_peak_of(device, dtype).rate; }

Peak type_peak_of(const DeviceInfo& device, DType dtype) {
  switch (type_info(dtype).peak) {
    case PeakKind::int32: return {"INT32 multiply-add, CUDA cores", device.int32_peak_tops(), false};
    case PeakKind::tf32x3: return {"TF32 tensor cores / 3", device.tf32_tensor_peak_tflops() / 3.0, true};
    case PeakKind::fp64:
      if (device.fp64_tensor_peak_tflops() > 0)
        return {"FP64, tensor cores (DMMA)", device.fp64_tensor_peak_tflops(), true};
      return {"FP64, CUDA cores", device.fp64_peak_tflops(), false};
    case PeakKind::fp32: break;
  }
  return {"FP32, CUDA cores", device.fp32_peak_tflops(), false};
}

}  // namespace cmt
