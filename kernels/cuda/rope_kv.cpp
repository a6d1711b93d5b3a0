#include "rope_kv.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status rope_kv_write(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch, float* q,
                     int64_t q_stride, int64_t num_q_heads, const float* k, int64_t k_stride, const float* v,
                     int64_t v_stride, const float* cos_table, const float* sin_table, int64_t table_positions) {
  const int64_t d = layer.head_dim;
  if (d <= 0 || d % 2 != 0 || num_q_heads <= 0 || layer.num_kv_heads <= 0 || layer.block_size <= 0 ||
      q_stride < num_q_heads * d || k_stride < layer.num_kv_heads * d || v_stride < layer.num_kv_heads * d ||
      batch.num_tokens < 0 || batch.num_tokens > 0x7fffffff || table_positions < 0 ||
      (layer.dtype != DType::f32 && layer.dtype != DType::bf16)) {
    return make_error(ErrorCode::invalid_argument, "rope_kv_write: bad shape or KV dtype");
  }
  if (batch.num_tokens == 0) return {};
  const launch::RopeArgs args{batch,     q,         q_stride,        num_q_heads,        k,
                              k_stride,  v,         v_stride,        cos_table,          sin_table,
                              table_positions, layer.num_kv_heads, d, layer.block_size};
  return cuda_status(launch::rope_kv_write(ctx.stream, args, layer.k, layer.v, layer.dtype == DType::bf16),
                     "rope_kv kernel");
}

}  // namespace llaisys::cuda
