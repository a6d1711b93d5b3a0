#include "paged_kv.hpp"

#include <cstring>

namespace llaisys::cpu {

void kv_cache_write(const CpuContext& /*ctx*/, const PagedKvLayer& layer, const BatchSlots& batch, const float* k,
                    int64_t k_stride, const float* v, int64_t v_stride) {
  const auto row_bytes = static_cast<std::size_t>(layer.head_dim) * sizeof(float);
  for (int64_t t = 0; t < batch.num_tokens; ++t) {
    const int32_t position = batch.positions[t];
    const int32_t block = batch.block_tables[batch.seq_indices[t]][position / layer.block_size];
    const int64_t slot = position % layer.block_size;
    for (int64_t h = 0; h < layer.num_kv_heads; ++h) {
      const int64_t at = layer.offset(block, h, slot);
      std::memcpy(layer.k + at, k + t * k_stride + h * layer.head_dim, row_bytes);
      std::memcpy(layer.v + at, v + t * v_stride + h * layer.head_dim, row_bytes);
    }
  }
}

}  // namespace llaisys::cpu
