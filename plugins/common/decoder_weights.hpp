#pragma once
// The weights of a decoder described by a DecoderSpec, found under the spec's tensor names, checked
// against its shape (every tensor present with the shape the config implies, a floating dtype) and
// prepared on the model's device (llaisys/ops/weights.hpp: in place on the CPU, bf16 on CUDA).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "decoder_spec.hpp"
#include "llaisys/model/safetensors.hpp"
#include "llaisys/ops/weights.hpp"

namespace llaisys::decoder {

struct LayerWeights {
  ops::Tensor attn_norm, ffn_norm;            // [hidden]
  ops::Tensor post_attn_norm, post_ffn_norm;  // [hidden], or empty
  ops::Tensor q_norm, k_norm;                 // [head_dim], or empty
  ops::LinearWeight qkv;                      // [q + 2 kv, hidden] (+ bias)
  ops::LinearWeight o;                        // [hidden, q] (+ bias)
  ops::LinearWeight gate_up;                  // [2 intermediate, hidden] (+ bias), gate rows first
  ops::LinearWeight down;                     // [hidden, intermediate] (+ bias)
};

struct DecoderWeights {
  ops::Tensor embed;                 // [vocab, hidden]
  std::vector<LayerWeights> layers;
  ops::Tensor final_norm;            // [hidden]
  ops::LinearWeight lm_head;         // [vocab, hidden]: the embedding when tied
  uint64_t bytes_per_decode_step = 0;  // matrices read for one token (lm head included, embedding not)
};

// `store` stays referenced by the tensors that point into its files (the CPU's). `quantize_to`: the
// matrices (linear layers, embedding, lm head) that are not quantized already are quantized to it
// once here (ops::quantize_matrix; CPU only), except those whose rows are not whole blocks.
Result<DecoderWeights> load_decoder_weights(ops::DeviceContext& ctx, const std::shared_ptr<const WeightStore>& store,
                                            const DecoderSpec& spec, std::optional<DType> quantize_to = std::nullopt);

}  // namespace llaisys::decoder
