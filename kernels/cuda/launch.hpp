#pragma once
// The kernel launchers of the .cu files, for the Status-returning wrappers of the .cpp files.
//
// Why the split: the public API returns llaisys::Status, whose header uses fmt, and nvcc cannot
// compile fmt 9's consteval format strings. So each op is <op>.hpp (API) + <op>.cpp (argument
// checks, Status) + <op>.cu (kernels and the launcher declared here, which only enqueues and
// returns cudaGetLastError()). Arguments are assumed valid here.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "paged_kv.hpp"
#include "sampling_row.hpp"
#include "host_device.hpp"

namespace llaisys::cuda::launch {

cudaError_t embedding(cudaStream_t stream, const uint16_t* table, int64_t rows, int64_t width, const int32_t* ids,
                      int64_t num_tokens, float* out, int64_t out_stride);
cudaError_t gather_rows(cudaStream_t stream, const float* src, int64_t src_stride, int64_t src_rows,
                        const int32_t* indices, int64_t num_rows, int64_t width, float* dst, int64_t dst_stride);

// out_bf16: out is bf16 (uint16_t bits), else f32.
cudaError_t add_rms_norm(cudaStream_t stream, float* residual, int64_t residual_stride, const float* delta,
                         int64_t delta_stride, int64_t num_rows, int64_t width, const float* weight, float eps,
                         void* out, bool out_bf16, int64_t out_stride);

cudaError_t swiglu(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                   int64_t num_rows, int64_t width, void* out, bool out_bf16, int64_t out_stride);
cudaError_t geglu_tanh(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                       int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                       int64_t out_stride);

// In place, f32: x = cap * tanhf(x / cap).
cudaError_t softcap(cudaStream_t stream, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float cap);

// In place, f32: RMSNorm of every (token, head) row of head_dim floats at x + t * token_stride + h * head_dim.
cudaError_t rms_norm_heads(cudaStream_t stream, float* x, int64_t token_stride, int64_t num_tokens, int64_t num_heads,
                           int64_t head_dim, const float* weight, float eps);

// f32 with row strides: y += x; x *= s.
cudaError_t add_rows(cudaStream_t stream, float* y, int64_t y_stride, const float* x, int64_t x_stride,
                     int64_t num_rows, int64_t width);
cudaError_t scale_rows(cudaStream_t stream, float* x, int64_t x_stride, int64_t num_rows, int64_t width, float s);

struct RopeArgs {
  DeviceBatch batch;
  float* q;
  int64_t q_stride;
  int64_t num_q_heads;
  const float* k;
  int64_t k_stride;
  const float* v;
  int64_t v_stride;
  const float* cos_table;
  const float* sin_table;
  int64_t table_positions;
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t block_size;
};
cudaError_t rope_kv_write(cudaStream_t stream, const RopeArgs& args, void* k_cache, void* v_cache, bool cache_bf16);

}  // namespace llaisys::cuda::launch

namespace llaisys::cuda::launch {

// The first key a tile of paged_attention needs: its earliest token's window start (0 without a
// window), rounded down to a block. Shared by plan_attention (which cuts the splits from there, for
// the plan's window) and the kernel (which starts its splits there, and reads nothing before this
// value for the call's window): they must agree. Blocks before it are never read, so their
// block-table entries may be -1.
LLAISYS_CUDA_HOST_DEVICE inline int32_t tile_key_begin(int32_t min_position, int32_t window, int64_t block_size) {
  if (window <= 0 || min_position < window) return 0;
  const int64_t first = static_cast<int64_t>(min_position) - window + 1;
  return static_cast<int32_t>(first - first % block_size);
}

struct AttentionArgs {
  DeviceBatch batch;
  const float* q;
  int64_t q_stride;
  int64_t num_q_heads;
  int64_t group;  // query heads per kv head
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t block_size;
  int32_t keys_per_split;
  float scale;
  float softcap;       // > 0: score = softcap * tanhf(score / softcap)
  int32_t window;      // > 0: keys p - window < j <= p
  int32_t plan_window; // the window the plan's splits were cut for: 0, or >= window > 0
  const AttentionTile* tiles;
  float* partial_acc;
  float* partial_ml;
  void* out;
  int64_t out_stride;
};
// Largest dynamic shared memory the main kernel needs (bytes), for the checks of the wrapper.
int64_t attention_shared_bytes(int64_t block_size, int64_t head_dim);
cudaError_t paged_attention(cudaStream_t stream, const AttentionArgs& args, int64_t num_tiles, int32_t max_splits,
                            const void* k_cache, const void* v_cache, bool cache_bf16, bool out_bf16);

}  // namespace llaisys::cuda::launch

namespace llaisys::cuda::launch {

cudaError_t argmax_rows(cudaStream_t stream, const float* logits, int64_t stride, int64_t num_rows, int64_t vocab,
                        int32_t* tokens);
// Bytes of CUB scratch the segmented sort of num_rows x stride needs.
cudaError_t sort_temp_bytes(std::size_t* bytes, int64_t num_rows, int64_t stride);
// ids: [num_rows * stride] scratch filled here; offsets: [2 * num_rows] already on the device.
cudaError_t sample_rows(cudaStream_t stream, const float* logits, int64_t stride, int64_t num_rows, int64_t vocab,
                        const RowSampling* params, int32_t* ids, float* sorted_logits, int32_t* sorted_ids,
                        const int32_t* offsets, void* sort_temp, std::size_t sort_temp_bytes, int32_t* tokens);

}  // namespace llaisys::cuda::launch

namespace llaisys::cuda::launch {

// sampling_prep.hpp: one block per reset / prepared row / finished row.
cudaError_t reset_slots(cudaStream_t stream, const SlotArrays& slots, const SlotReset* resets, int64_t num_resets,
                        const int32_t* history);
cudaError_t prepare_rows(cudaStream_t stream, float* logits, int64_t stride, const SlotArrays& slots,
                         const RowPrep* preps, int64_t num_preps, const int32_t* bias_ids, const float* bias_values,
                         const uint32_t* masks);
cudaError_t finish_rows(cudaStream_t stream, const SlotArrays& slots, const RowFinish* finish, int64_t num_rows,
                        const uint32_t* masks, int32_t* tokens);

}  // namespace llaisys::cuda::launch
