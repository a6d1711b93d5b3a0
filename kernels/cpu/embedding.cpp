#include "embedding.hpp"

#include <cstring>

#include "quant.hpp"

namespace llaisys::cpu {

void embedding(const CpuContext& ctx, const WeightMatrix& table, const int32_t* ids, int64_t num_tokens,
               float* out, int64_t out_stride) {
  const int64_t width = table.cols;
  if (is_quantized(table.dtype)) {
    const int64_t row_bytes = dtype_bytes(table.dtype, width);
    for (int64_t t = 0; t < num_tokens; ++t) {
      dequantize(ctx.isa, table.dtype, static_cast<const std::byte*>(table.data) + ids[t] * row_bytes, width,
                 out + t * out_stride);
    }
    return;
  }
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* o = out + t * out_stride;
    const int64_t offset = static_cast<int64_t>(ids[t]) * width;
    switch (table.dtype) {
      case DType::bf16: {
        const bf16_t* row = static_cast<const bf16_t*>(table.data) + offset;
        for (int64_t i = 0; i < width; ++i) o[i] = bf16_to_f32(row[i]);
        break;
      }
      case DType::f16: {
        const f16_t* row = static_cast<const f16_t*>(table.data) + offset;
        for (int64_t i = 0; i < width; ++i) o[i] = f16_to_f32(row[i]);
        break;
      }
      default:
        std::memcpy(o, static_cast<const float*>(table.data) + offset, static_cast<std::size_t>(width) * sizeof(float));
    }
  }
}

}  // namespace llaisys::cpu
