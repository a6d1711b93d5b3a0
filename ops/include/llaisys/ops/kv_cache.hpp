#pragma once
// KvCache: a model's paged KV pool on its device: for every layer, K and V are each
// [num_blocks, num_kv_heads, block_size, head_dim] of `dtype` (f32, or bf16: rounded to nearest even
// when written, widened exactly when read). A token at position p of a sequence with block table B
// lives in slot p % block_size of block B[p / block_size] (ForwardBatch).

#include <cstdint>
#include <span>

#include "llaisys/model/types.hpp"
#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

struct KvShape {
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  DType dtype = DType::f32;  // f32 or bf16

  uint64_t bytes_per_token() const;  // K and V, all layers
};

// One layer's K and V as the attention ops see them.
struct KvLayer {
  void* k = nullptr;
  void* v = nullptr;
  DType dtype = DType::f32;
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
};

class KvCache {
 public:
  KvCache() = default;
  // Allocates num_blocks x block_size slots per layer (drop the old cache first to reuse its memory).
  // out_of_memory, naming how many blocks would fit, when the pool does not fit the device's free memory.
  static Result<KvCache> create(DeviceContext& ctx, const KvShape& shape, const KvCacheConfig& config);

  bool empty() const { return pool_.empty(); }
  const KvShape& shape() const { return shape_; }
  const KvCacheConfig& config() const { return config_; }
  KvLayer layer(int32_t index) const;
  // Copies whole blocks (all layers, K and V) src -> dst, in order.
  Status copy_blocks(DeviceContext& ctx, std::span<const BlockCopy> copies) const;

 private:
  std::size_t half_bytes() const;  // one layer's K (or V)
  KvShape shape_;
  KvCacheConfig config_;
  Buffer pool_;  // [layers][K, V][num_blocks, num_kv_heads, block_size, head_dim]
};

}  // namespace llaisys::ops
