#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int64_t kMaxRowsPerTile = 16;  // attention.cu: 8 warps x 2 rows
constexpr int64_t kMaxSplits = 64;
// A decode step has one tile per kv head: at a few hundred keys, 128-key splits left 12 CTAs of a
// 7B shape streaming 8 blocks each one after another (17.5 us a layer on an H200, 2026-11-26); 32
// keys (two blocks of 16) spread them over the SMs, and the combine pass merges the extra partials.
constexpr int64_t kMinKeysPerSplit = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Status run(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch, const AttentionPlan& plan,
           const AttentionWorkspace& workspace, const float* q, int64_t q_stride, int64_t num_q_heads,
           const AttentionParams& params, void* out, bool out_bf16, int64_t out_stride) {
  const int64_t d = layer.head_dim;
  if (d <= 0 || d % 32 != 0 || d > 256 || layer.num_kv_heads <= 0 || num_q_heads % layer.num_kv_heads != 0 ||
      num_q_heads / layer.num_kv_heads > kMaxRowsPerTile || layer.block_size <= 0 || q_stride < num_q_heads * d ||
      out_stride < num_q_heads * d || (layer.dtype != DType::f32 && layer.dtype != DType::bf16)) {
    return make_error(ErrorCode::invalid_argument, "paged_attention: bad shape or KV dtype");
  }
  // The kernel stages K/V in 16-byte loads (attention.cu): every block row starts on a 16-byte
  // boundary when the layer's base does (head_dim is a multiple of 32).
  if (reinterpret_cast<std::uintptr_t>(layer.k) % 16 != 0 || reinterpret_cast<std::uintptr_t>(layer.v) % 16 != 0) {
    return make_error(ErrorCode::invalid_argument, "paged_attention: the KV cache is not 16-byte aligned");
  }
  if (!std::isfinite(params.scale) || !(params.softcap >= 0.0f) || !std::isfinite(params.softcap) ||
      params.window < 0) {
    return make_error(ErrorCode::invalid_argument,
                      "paged_attention: bad params (scale {}, softcap {} must be >= 0, window {} must be >= 0)",
                      params.scale, params.softcap, params.window);
  }
  // A plan's splits cover each tile's keys from its window start (plan.window): enough for any
  // call whose window is no larger (a plan without a window serves every call).
  if (plan.window > 0 && (params.window == 0 || params.window > plan.window)) {
    return make_error(ErrorCode::invalid_argument,
                      "paged_attention: the plan was made for window {}, too small for the call's window {} (0: none)",
                      plan.window, params.window);
  }
  if (plan.num_tokens != batch.num_tokens) {
    return make_error(ErrorCode::invalid_argument, "paged_attention: the plan is for {} tokens, the batch has {}",
                      plan.num_tokens, batch.num_tokens);
  }
  if (plan.tiles.empty()) return {};
  int device = 0;
  int max_shared = 0;
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (launch::attention_shared_bytes(layer.block_size, d) > max_shared) {
    return make_error(ErrorCode::unsupported, "paged_attention: block size {} x head dim {} needs more shared memory "
                      "than this GPU has ({} bytes)", layer.block_size, d, max_shared);
  }
  const launch::AttentionArgs args{batch,
                                   q,
                                   q_stride,
                                   num_q_heads,
                                   num_q_heads / layer.num_kv_heads,
                                   layer.num_kv_heads,
                                   d,
                                   layer.block_size,
                                   plan.keys_per_split,
                                   params.scale,
                                   params.softcap,
                                   params.window,
                                   plan.window,
                                   workspace.tiles(),
                                   workspace.partial_acc(),
                                   workspace.partial_ml(),
                                   out,
                                   out_stride};
  return cuda_status(launch::paged_attention(ctx.stream, args, static_cast<int64_t>(plan.tiles.size()),
                                             plan.max_splits, layer.k, layer.v, layer.dtype == DType::bf16, out_bf16),
                     "paged_attention kernels");
}

}  // namespace

// Sliding window and splits: the plan takes the window (rather than only the kernel skipping splits
// that lie before it) so that the split size is chosen for the keys a tile really reads. A decode
// token at position 30,000 with a 4,096-key window reads 4,096 keys: sized on the window, its splits
// fill the GPU; sized on 30,001 keys, 7 of every 8 split CTAs would launch only to find nothing to
// read and the remaining ones would each stream 8x too many keys. Each tile's key range is
// [launch::tile_key_begin(min position, window), num_keys), which the kernel recomputes from the
// same positions (launch.hpp), so no split starts before the tile's earliest window start and no
// block before it is ever read. The kernel also clamps to the call's own window, so one plan made
// without a window (or with the largest window) still serves every layer of a pass, e.g. Gemma 2's
// alternating local and global layers, at the cost of the empty split CTAs above on local layers.
Result<AttentionPlan> plan_attention(std::span<const int32_t> positions, std::span<const int32_t> seq_indices,
                                     int64_t num_q_heads, int64_t num_kv_heads, int64_t block_size,
                                     const AttentionParams& params, int num_sms, int64_t keys_per_split,
                                     int64_t capacity_keys) {
  if (positions.size() != seq_indices.size() || num_kv_heads <= 0 || num_q_heads % num_kv_heads != 0 ||
      num_q_heads / num_kv_heads > kMaxRowsPerTile || block_size <= 0 || keys_per_split < 0 || params.window < 0 ||
      capacity_keys < 0) {
    return make_error(ErrorCode::invalid_argument, "plan_attention: bad arguments");
  }
  const int64_t group = num_q_heads / num_kv_heads;
  const int64_t tile_tokens = std::max<int64_t>(1, kMaxRowsPerTile / group);
  AttentionPlan plan;
  plan.num_tokens = static_cast<int64_t>(positions.size());
  plan.window = params.window;
  std::vector<int32_t> key_begins;  // per tile
  int64_t max_span = 0;
  for (std::size_t t = 0; t < positions.size();) {
    if (positions[t] < 0 || seq_indices[t] < 0) {
      return make_error(ErrorCode::invalid_argument, "plan_attention: negative position or sequence at token {}", t);
    }
    AttentionTile tile{.first_token = static_cast<int32_t>(t), .num_tokens = 0, .seq = seq_indices[t]};
    int32_t min_position = positions[t];
    while (t < positions.size() && seq_indices[t] == tile.seq && tile.num_tokens < tile_tokens) {
      if (positions[t] < 0) return make_error(ErrorCode::invalid_argument, "plan_attention: negative position");
      tile.num_keys = std::max(tile.num_keys, positions[t] + 1);
      min_position = std::min(min_position, positions[t]);
      ++tile.num_tokens;
      ++t;
    }
    const int32_t key_begin = launch::tile_key_begin(min_position, params.window, block_size);
    max_span = std::max<int64_t>(max_span, tile.num_keys - key_begin);
    key_begins.push_back(key_begin);
    plan.tiles.push_back(tile);
  }
  if (plan.tiles.empty()) return plan;
  if (capacity_keys > 0 && max_span > capacity_keys) {
    return make_error(ErrorCode::invalid_argument, "plan_attention: a tile spans {} keys, past the capacity of {}",
                      max_span, capacity_keys);
  }
  const int64_t max_keys = capacity_keys > 0 ? capacity_keys : max_span;

  // Splits: enough CTAs for two waves over the SMs, no split under kMinKeysPerSplit keys.
  int64_t split_keys = keys_per_split;
  if (split_keys == 0) {
    const int64_t ctas = static_cast<int64_t>(plan.tiles.size()) * num_kv_heads;
    const int64_t wanted = std::clamp<int64_t>(ceil_div(2 * std::max(num_sms, 1), ctas), 1, kMaxSplits);
    split_keys = std::max<int64_t>(ceil_div(max_keys, wanted), kMinKeysPerSplit);
  }
  split_keys = ceil_div(split_keys, block_size) * block_size;
  if (ceil_div(max_keys, split_keys) > kMaxSplits) split_keys = ceil_div(ceil_div(max_keys, kMaxSplits), block_size) * block_size;
  plan.keys_per_split = static_cast<int32_t>(split_keys);
  for (std::size_t i = 0; i < plan.tiles.size(); ++i) {
    AttentionTile& tile = plan.tiles[i];
    tile.num_splits = static_cast<int32_t>(ceil_div(tile.num_keys - key_begins[i], split_keys));
    plan.max_splits = std::max(plan.max_splits, tile.num_splits);
    if (tile.num_splits > 1) {
      tile.partial_offset = static_cast<int32_t>(plan.partial_rows);
      plan.partial_rows += static_cast<int64_t>(tile.num_tokens) * num_q_heads * tile.num_splits;
    }
  }
  plan.partial_capacity = plan.partial_rows;
  if (capacity_keys > 0) {
    plan.max_splits = static_cast<int32_t>(ceil_div(capacity_keys, split_keys));
    plan.partial_capacity = plan.num_tokens * num_q_heads * plan.max_splits;
  }
  return plan;
}

Status AttentionWorkspace::prepare(const AttentionPlan& plan, int64_t num_q_heads, int64_t head_dim,
                                   cudaStream_t stream) {
  (void)num_q_heads;  // partial_rows already counts the heads
  LLAISYS_RETURN_IF_ERROR(tiles_.reserve(plan.tiles.size()));
  LLAISYS_RETURN_IF_ERROR(partial_acc_.reserve(static_cast<std::size_t>(plan.partial_capacity * head_dim)));
  LLAISYS_RETURN_IF_ERROR(partial_ml_.reserve(static_cast<std::size_t>(plan.partial_capacity * 2)));
  if (plan.tiles.empty()) return {};
  return tiles_.upload(plan.tiles.data(), plan.tiles.size(), stream);
}

Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, float* out,
                       int64_t out_stride) {
  return run(ctx, layer, batch, plan, workspace, q, q_stride, num_q_heads, params, out, false, out_stride);
}

Status paged_attention(const CudaContext& ctx, const DeviceKvLayer& layer, const DeviceBatch& batch,
                       const AttentionPlan& plan, const AttentionWorkspace& workspace, const float* q,
                       int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, bf16_t* out,
                       int64_t out_stride) {
  return run(ctx, layer, batch, plan, workspace, q, q_stride, num_q_heads, params, out, true, out_stride);
}

}  // namespace llaisys::cuda
