#include <vector>

#include "cpu/quant.hpp"
#include "llaisys/core/memory.hpp"
#include "llaisys/ops/weights.hpp"

namespace llaisys::ops {

Result<Tensor> quantize_matrix(DeviceContext& ctx, const TensorView& host, DType dtype) {
  if (!ctx.device().is_cpu()) {
    return make_error(ErrorCode::unsupported, "quantizing weights on load is for the cpu device, not {}",
                      ctx.device().to_string());
  }
  if (!is_quantized(dtype)) return make_error(ErrorCode::invalid_argument, "quantize_matrix: {} is not quantized", to_string(dtype));
  const DType from = host.dtype();
  if (host.rank() != 2 || !host.is_contiguous() || (from != DType::bf16 && from != DType::f16 && from != DType::f32)) {
    return make_error(ErrorCode::invalid_argument, "quantize_matrix: expected a contiguous BF16, F16 or F32 matrix, got {}",
                      host.to_string());
  }
  const int64_t rows = host.dim(0), cols = host.dim(1);
  if (cols % dtype_block_elements(dtype) != 0) {
    return make_error(ErrorCode::invalid_argument, "quantize_matrix: rows of {} are not whole {} blocks of {}", cols,
                      to_string(dtype), dtype_block_elements(dtype));
  }
  const int64_t in_row = dtype_bytes(host.dtype(), cols), out_row = dtype_bytes(dtype, cols);
  auto buffer = std::make_shared<AlignedBuffer>(static_cast<std::size_t>(rows * out_row));
  std::vector<float> values(static_cast<std::size_t>(cols));
  const auto* src = static_cast<const std::byte*>(host.data());
  auto* dst = static_cast<std::byte*>(buffer->data());
  for (int64_t r = 0; r < rows; ++r) {
    cpu::dequantize(host.dtype(), src + r * in_row, cols, values.data());
    cpu::quantize(dtype, values.data(), cols, dst + r * out_row);
  }
  return Tensor{.view = TensorView(buffer->data(), dtype, Shape{rows, cols}), .owner = buffer};
}

}  // namespace llaisys::ops
