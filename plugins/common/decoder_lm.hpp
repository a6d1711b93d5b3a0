#pragma once
// DecoderLM: the CPU forward pass of a Llama-family causal language model over a paged KV cache.
// Architecture plugins (qwen2, llama) are thin: they name their variant (decoder_plugin.hpp).
//
// One pass over a ForwardBatch (any mix of prefill chunks and decode tokens of several sequences):
//   x = embed(ids)
//   per layer: h = rms_norm(x); q, k, v = h Wq,k,v (+ bias); rope(q, k); store k, v in their slots;
//              x += attention(q, cache) Wo (+ bias);
//              h = rms_norm(x); x += swiglu(h Wgate (+ bias), h Wup (+ bias)) Wdown (+ bias)
//   rows that want output: rms_norm(x) -> hidden states, or their product with the lm head -> logits.
// Every kernel is batch invariant (kernels/cpu/*.hpp), so a token's outputs are bit-identical
// whatever else is in the batch, and whatever the thread count.
//
// Create options (options_json):
//   "isa": "auto" | "avx512" | "avx2" | "scalar" forces an ISA path (all give the same bits; for
//          testing and comparison).
//   "matmul": "f32" (default: f32 activations, exact products) | "bf16" (activations rounded to bf16
//          for the products with bf16 weights, AVX512-BF16; about 2x the arithmetic rate of prefill
//          and batched decode, not bit-identical to f32) | "auto" (bf16 where the CPU has it).
//   "kv_dtype": "f32" (default) | "bf16" (K and V rounded to bf16 in the cache: half its memory, so
//          twice the tokens for the same budget, and half the bytes attention reads; batch
//          invariance holds within the setting).
//   "weights": "auto" (default) | "mmap" | "memory": how the safetensors files come into memory
//          (WeightLoading, llaisys/model/safetensors.hpp).

#include <memory>
#include <span>
#include <vector>

#include "cpu/context.hpp"
#include "cpu/paged_kv.hpp"
#include "decoder_weights.hpp"
#include "rope_frequencies.hpp"
#include "llaisys/core/memory.hpp"
#include "llaisys/model/model.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys::decoder {

class DecoderLM {
 public:
  // Reads config.json (+ generation_config.json) and the safetensors of params.model_dir.
  static Result<std::unique_ptr<DecoderLM>> open(const ModelCreateParams& params, const DecoderVariant& variant);

  DecoderLM(DecoderConfig config, WeightStore store, DecoderWeights weights, int32_t num_threads, cpu::Isa isa,
            cpu::MatmulPrecision matmul, DType kv_dtype, std::string architecture);

  const ModelInfo& info() const { return info_; }
  const DecoderConfig& config() const { return config_; }
  cpu::Isa isa() const { return ctx_.isa; }
  int num_threads() const { return pool_.num_threads(); }

  Status init_kv_cache(const KvCacheConfig& config);
  Status forward(const ForwardBatch& batch, std::span<float> out);
  Status copy_blocks(std::span<const BlockCopy> copies);

 private:
  struct Activations;
  void run_layer(int32_t layer_index, const cpu::BatchSlots& slots, Activations& a);
  // Bytes of one block of one layer's K (or V): the pool is [layers][K, V][num_blocks] of them.
  std::size_t kv_block_bytes() const;

  DecoderConfig config_;
  WeightStore store_;  // owns the mapped files the weights point into
  DecoderWeights weights_;
  RopeFrequencies rope_;
  cpu::ThreadPool pool_;
  cpu::CpuContext ctx_;
  ModelInfo info_;
  KvCacheConfig kv_config_;
  AlignedBuffer kv_pool_;  // [layers][K, V][num_blocks, kv_heads, block_size, head_dim] of info_.kv_dtype
  std::vector<float> buffer_;  // activations, grown to the largest batch seen
};

static_assert(Model<DecoderLM>);

}  // namespace llaisys::decoder
