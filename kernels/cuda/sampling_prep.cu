#include <cub/block/block_reduce.cuh>

#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ bool has_bit(const uint32_t* bits, int64_t token) {
  return ((bits[token >> 5] >> (token & 31)) & 1u) != 0;
}

// One block per reset: zero the slot, then scatter its history (the barrier orders the two).
__global__ void reset_slots_kernel(SlotArrays slots, const SlotReset* resets, const int32_t* history) {
  const SlotReset r = resets[blockIdx.x];
  const int64_t vocab = slots.vocab;
  const int64_t words = mask_words(vocab);
  int32_t* counts = slots.output_counts + static_cast<int64_t>(r.slot) * vocab;
  uint32_t* prompt = slots.prompt_bits + static_cast<int64_t>(r.slot) * words;
  for (int64_t v = threadIdx.x; v < vocab; v += kThreads) counts[v] = 0;
  for (int64_t w = threadIdx.x; w < words; w += kThreads) prompt[w] = 0u;
  __syncthreads();
  const int32_t* tokens = history + r.history_begin;
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < r.num_history; i += kThreads) {
    const int32_t token = tokens[i];
    if (i < r.num_prompt) {
      atomicOr(&prompt[token >> 5], 1u << (token & 31));
    } else {
      atomicAdd(&counts[token], 1);
    }
  }
}

// One block per prepared row. Rounding as LogitsSampler's (explicit _rn: no contraction into an fma).
// Disallowed tokens become -inf and skip the bias: the same row as bias-then-mask.
__global__ void prepare_rows_kernel(float* logits, int64_t stride, SlotArrays slots, const RowPrep* preps,
                                    const int32_t* bias_ids, const float* bias_values, const uint32_t* masks) {
  const RowPrep p = preps[blockIdx.x];
  const int64_t vocab = slots.vocab;
  float* row = logits + static_cast<int64_t>(p.row) * stride;
  const uint32_t* allowed = p.mask_begin >= 0 ? masks + p.mask_begin : nullptr;
  const bool penalised = p.slot >= 0;
  const int32_t* counts = penalised ? slots.output_counts + static_cast<int64_t>(p.slot) * vocab : nullptr;
  const uint32_t* prompt = penalised ? slots.prompt_bits + static_cast<int64_t>(p.slot) * mask_words(vocab) : nullptr;
  const bool repetition = p.repetition_penalty != 1.0f;
  const bool additive = p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (allowed != nullptr || penalised) {
    for (int64_t v = threadIdx.x; v < vocab; v += kThreads) {
      if (allowed != nullptr && !has_bit(allowed, v)) {
        row[v] = -INFINITY;
        continue;
      }
      if (!penalised) continue;
      const int32_t count = counts[v];
      const bool seen = count > 0 || has_bit(prompt, v);
      if (!(repetition && seen) && !(additive && count > 0)) continue;
      float l = row[v];
      if (repetition && seen) l = l > 0.0f ? __fdiv_rn(l, p.repetition_penalty) : __fmul_rn(l, p.repetition_penalty);
      if (additive && count > 0) {
        l = __fsub_rn(l, __fadd_rn(p.presence_penalty, __fmul_rn(p.frequency_penalty, static_cast<float>(count))));
      }
      row[v] = l;
    }
  }
  if (p.num_bias > 0) {  // uniform over the block
    __syncthreads();
    // In list order by one thread: a repeated id adds twice, in the CPU's order. Lists are short.
    if (threadIdx.x == 0) {
      for (int32_t i = p.bias_begin; i < p.bias_begin + p.num_bias; ++i) {
        const int32_t token = bias_ids[i];
        if (allowed == nullptr || has_bit(allowed, token)) row[token] = __fadd_rn(row[token], bias_values[i]);
      }
    }
  }
}

// One block per row: the mask fix-up (a block-wide search for the first non-zero word, only when the
// token is disallowed), then the slot's count.
__global__ void finish_rows_kernel(SlotArrays slots, const RowFinish* finish, const uint32_t* masks, int32_t* tokens) {
  using BlockReduceL = cub::BlockReduce<int64_t, kThreads>;
  __shared__ typename BlockReduceL::TempStorage temp;
  const RowFinish f = finish[blockIdx.x];
  const int64_t vocab = slots.vocab;
  int32_t token = tokens[blockIdx.x];
  if (f.mask_begin >= 0) {
    const uint32_t* allowed = masks + f.mask_begin;
    if (token < 0 || token >= vocab || !has_bit(allowed, token)) {  // uniform over the block
      const int64_t words = mask_words(vocab);
      int64_t first = words;
      for (int64_t w = threadIdx.x; w < words; w += kThreads) {
        if (allowed[w] != 0u) {
          first = w;
          break;
        }
      }
      const int64_t lowest = BlockReduceL(temp).Reduce(first, ::cuda::minimum<int64_t>{});
      // Bits past the vocabulary come after every valid one, and a mask has a valid bit.
      if (threadIdx.x == 0 && lowest < words) {
        token = static_cast<int32_t>(lowest * 32 + (__ffs(static_cast<int>(allowed[lowest])) - 1));
        tokens[blockIdx.x] = token;
      }
    }
  }
  if (threadIdx.x == 0 && f.slot >= 0 && token >= 0 && token < vocab) {
    slots.output_counts[static_cast<int64_t>(f.slot) * vocab + token] += 1;  // slots are distinct per step
  }
}

}  // namespace

cudaError_t launch::reset_slots(cudaStream_t stream, const SlotArrays& slots, const SlotReset* resets,
                                int64_t num_resets, const int32_t* history) {
  reset_slots_kernel<<<static_cast<unsigned>(num_resets), kThreads, 0, stream>>>(slots, resets, history);
  return cudaGetLastError();
}

cudaError_t launch::prepare_rows(cudaStream_t stream, float* logits, int64_t stride, const SlotArrays& slots,
                                 const RowPrep* preps, int64_t num_preps, const int32_t* bias_ids,
                                 const float* bias_values, const uint32_t* masks) {
  prepare_rows_kernel<<<static_cast<unsigned>(num_preps), kThreads, 0, stream>>>(logits, stride, slots, preps, bias_ids,
                                                                                 bias_values, masks);
  return cudaGetLastError();
}

cudaError_t launch::finish_rows(cudaStream_t stream, const SlotArrays& slots, const RowFinish* finish,
                                int64_t num_rows, const uint32_t* masks, int32_t* tokens) {
  finish_rows_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(slots, finish, masks, tokens);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
