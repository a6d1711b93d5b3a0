#include "llaisys/ops/kv_cache.hpp"

#include <algorithm>

namespace llaisys::ops {

uint64_t KvShape::bytes_per_token() const {
  return 2ull * static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads) *
         static_cast<uint64_t>(head_dim) * dtype_size(dtype);
}

Result<KvCache> KvCache::create(DeviceContext& ctx, const KvShape& shape, const KvCacheConfig& config) {
  if (shape.dtype != DType::f32 && shape.dtype != DType::bf16) {
    return make_error(ErrorCode::invalid_argument, "KV cache dtype must be f32 or bf16, not {}", to_string(shape.dtype));
  }
  const uint64_t per_block = shape.bytes_per_token() * static_cast<uint64_t>(std::max(config.block_size, 0));
  uint64_t total = 0;
  if (config.num_blocks <= 0 || config.block_size <= 0 ||
      __builtin_mul_overflow(per_block, static_cast<uint64_t>(config.num_blocks), &total) ||
      total > static_cast<uint64_t>(SIZE_MAX)) {
    return make_error(ErrorCode::invalid_argument, "KV cache of {} blocks x {} tokens", config.num_blocks,
                      config.block_size);
  }
  const uint64_t free_bytes = ctx.free_memory();
  if (total > free_bytes) {
    return make_error(ErrorCode::out_of_memory, "KV cache of {} blocks x {} tokens needs {} MiB; {} has {} MiB free ({} blocks fit)",
                      config.num_blocks, config.block_size, total >> 20, ctx.device().to_string(), free_bytes >> 20,
                      free_bytes / std::max<uint64_t>(per_block, 1));
  }
  KvCache cache;
  LLAISYS_ASSIGN_OR_RETURN(cache.pool_, ctx.allocate(static_cast<std::size_t>(total)));
  cache.shape_ = shape;
  cache.config_ = config;
  return cache;
}

std::size_t KvCache::half_bytes() const {
  return static_cast<std::size_t>(config_.num_blocks) * static_cast<std::size_t>(config_.block_size) *
         static_cast<std::size_t>(shape_.num_kv_heads) * static_cast<std::size_t>(shape_.head_dim) *
         dtype_size(shape_.dtype);
}

KvLayer KvCache::layer(int32_t index) const {
  std::byte* base = static_cast<std::byte*>(pool_.data()) + 2 * static_cast<std::size_t>(index) * half_bytes();
  return {.k = base,
          .v = base + half_bytes(),
          .dtype = shape_.dtype,
          .num_blocks = config_.num_blocks,
          .block_size = config_.block_size,
          .num_kv_heads = shape_.num_kv_heads,
          .head_dim = shape_.head_dim};
}

Status KvCache::copy_blocks(DeviceContext& ctx, std::span<const BlockCopy> copies) const {
  if (empty()) return Status(ErrorCode::invalid_argument, "copy_blocks before init_kv_cache");
  const std::size_t block_bytes = half_bytes() / static_cast<std::size_t>(config_.num_blocks);
  auto* base = static_cast<std::byte*>(pool_.data());
  for (const BlockCopy& copy : copies) {
    if (copy.src < 0 || copy.dst < 0 || copy.src >= config_.num_blocks || copy.dst >= config_.num_blocks) {
      return make_error(ErrorCode::invalid_argument, "copy_blocks: block {} -> {} outside the pool of {}", copy.src,
                        copy.dst, config_.num_blocks);
    }
    for (std::size_t half = 0; half < 2 * static_cast<std::size_t>(shape_.num_layers); ++half) {
      std::byte* pool = base + half * half_bytes();
      LLAISYS_RETURN_IF_ERROR(ctx.copy_on_device(pool + static_cast<std::size_t>(copy.dst) * block_bytes,
                                                 pool + static_cast<std::size_t>(copy.src) * block_bytes,
                                                 block_bytes));
    }
  }
  return ctx.synchronize();
}

}  // namespace llaisys::ops
