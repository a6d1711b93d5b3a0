#include "paged_kv.hpp"

#include <cstring>

namespace llaisys::cpu {

void kv_cache_write(const CpuContext& /*ctx*/, const PagedKvLayer& layer, const BatchSlots& batch, const float* k,
                    int64_t k_stride, const float* v, int64_t v_stride) {
  const int64_t d = layer.head_dim;
  const auto row_bytes = static_cast<std::size_t>(d) * sizeof(float);
  for (int64_t t = 0; t < batch.num_tokens; ++t) {
    const int32_t position = batch.positions[t];
    const int32_t block = batch.block_tables[batch.seq_indices[t]][position / layer.block_size];
    const int64_t slot = position % layer.block_size;
    for (int64_t h = 0; h < layer.num_kv_heads; ++h) {
      const int64_t at = layer.offset(block, h, slot);
      const float* k_row = k + t * k_stride + h * d;
      const float* v_row = v + t * v_stride + h * d;
      if (layer.dtype == DType::bf16) {
        bf16_t* k_out = static_cast<bf16_t*>(layer.k) + at;
        bf16_t* v_out = static_cast<bf16_t*>(layer.v) + at;
        for (int64_t i = 0; i < d; ++i) {
          k_out[i] = f32_to_bf16(k_row[i]);
          v_out[i] = f32_to_bf16(v_row[i]);
        }
      } else {
        std::memcpy(static_cast<float*>(layer.k) + at, k_row, row_bytes);
        std::memcpy(static_cast<float*>(layer.v) + at, v_row, row_bytes);
      }
    }
  }
}

}  // namespace llaisys::cpu
