#pragma once
// The weights of a Llama-family decoder (Llama, Qwen2, Mistral, ...) under their Hugging Face names,
// checked against the config: every tensor present with the shape the config implies.
//
// Matrices stay where they are (views into the mapped safetensors files, bf16/f16/f32); only the
// small vectors (norm weights, biases) are converted to f32 copies.

#include <cstdint>
#include <vector>

#include "cpu/linear.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/hf_config.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys::decoder {

// What differs between members of the family.
struct DecoderVariant {
  const char* architecture = "";  // the HF architecture the plugin serves
  bool qkv_bias = false;          // Qwen2: q/k/v projections have biases
};

struct DecoderConfig {
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t max_context = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  double rope_position_scale = 1.0;  // linear rope scaling divides positions by this
  bool qkv_bias = false;
  bool tie_word_embeddings = false;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;
};

// Checks the parts of `hf` this decoder cannot follow (e.g. mlp_bias) and maps it.
Result<DecoderConfig> make_decoder_config(const HfTransformerConfig& hf, const DecoderVariant& variant);

struct DecoderLayerWeights {
  std::vector<float> input_norm;  // [hidden]
  cpu::WeightMatrix q, k, v, o;   // [heads*hd, hidden], [kv*hd, hidden] x2, [hidden, heads*hd]
  std::vector<float> q_bias, k_bias, v_bias;  // empty without qkv_bias
  std::vector<float> post_norm;   // [hidden]
  cpu::WeightMatrix gate, up, down;  // [inter, hidden] x2, [hidden, inter]
};

struct DecoderWeights {
  cpu::WeightMatrix embed;  // [vocab, hidden]
  std::vector<DecoderLayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  cpu::WeightMatrix lm_head;      // [vocab, hidden]; the embedding when tied
  uint64_t bytes_per_decode_step = 0;  // matrices read for one token (lm head included, embedding not)
};

Result<DecoderWeights> load_decoder_weights(const WeightStore& store, const DecoderConfig& config);

}  // namespace llaisys::decoder
