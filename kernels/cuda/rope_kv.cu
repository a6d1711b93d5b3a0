#include <algorithm>

#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

using launch::RopeArgs;

// One block per token; y-threads walk the heads (q heads first, then kv heads), x-threads the
// first half of head_dim.
template <class KvT>
__global__ void rope_kv_kernel(RopeArgs a, KvT* k_cache, KvT* v_cache) {
  const int64_t t = blockIdx.x;
  const int32_t pos = a.batch.positions[t];
  if (pos < 0 || pos >= a.table_positions) return;
  const int64_t half = a.head_dim / 2;
  const float* cos_row = a.cos_table + pos * half;
  const float* sin_row = a.sin_table + pos * half;
  const int32_t seq = a.batch.seq_indices[t];
  const int32_t block = a.batch.block_tables[seq * a.batch.max_blocks_per_seq + pos / a.block_size];
  const int64_t slot = pos % a.block_size;
  const int64_t heads = a.num_q_heads + a.num_kv_heads;
  for (int64_t h = threadIdx.y; h < heads; h += blockDim.y) {
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float c = __ldg(cos_row + i), s = __ldg(sin_row + i);
      if (h < a.num_q_heads) {
        float* x = a.q + t * a.q_stride + h * a.head_dim;
        const float x0 = x[i], x1 = x[i + half];
        x[i] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        x[i + half] = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
      } else {
        const int64_t g = h - a.num_q_heads;
        const float* x = a.k + t * a.k_stride + g * a.head_dim;
        const float* y = a.v + t * a.v_stride + g * a.head_dim;
        const float x0 = x[i], x1 = x[i + half];
        const int64_t dst = ((block * a.num_kv_heads + g) * a.block_size + slot) * a.head_dim;
        k_cache[dst + i] = detail::from_f32<KvT>(__fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
        k_cache[dst + i + half] = detail::from_f32<KvT>(__fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
        v_cache[dst + i] = detail::from_f32<KvT>(y[i]);
        v_cache[dst + i + half] = detail::from_f32<KvT>(y[i + half]);
      }
    }
  }
}

}  // namespace

cudaError_t launch::rope_kv_write(cudaStream_t stream, const RopeArgs& args, void* k_cache, void* v_cache,
                                  bool cache_bf16) {
  const int64_t half = args.head_dim / 2;
  const unsigned x_threads = half >= 64 ? 64u : 32u;
  // Every head of the token at once where it fits (up to 1024 threads): a decode step has one token,
  // so one block, and its heads must not queue behind each other's loads.
  const int64_t heads = args.num_q_heads + args.num_kv_heads;
  const unsigned y_threads = static_cast<unsigned>(std::clamp<int64_t>(heads, 1, 1024 / x_threads));
  const dim3 threads(x_threads, y_threads);
  const auto blocks = static_cast<unsigned>(args.batch.num_tokens);
  if (cache_bf16) {
    rope_kv_kernel<<<blocks, threads, 0, stream>>>(args, static_cast<__nv_bfloat16*>(k_cache),
                                                   static_cast<__nv_bfloat16*>(v_cache));
  } else {
    rope_kv_kernel<<<blocks, threads, 0, stream>>>(args, static_cast<float*>(k_cache), static_cast<float*>(v_cache));
  }
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
