#pragma once
// The weights of a Llama-family decoder (Llama, Qwen2, Mistral, ...) under their Hugging Face names,
// checked against the config: every tensor present with the shape the config implies.
//
// Matrices stay where they are (views into the mapped safetensors files, bf16/f16/f32: the kernels
// read each dtype exactly); only the small vectors (norm weights, biases) are converted to f32
// copies. Any other dtype is refused by name.

#include <cstdint>
#include <vector>

#include "cpu/linear.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/hf_config.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys::decoder {

// What differs between members of the family (one constant per plugin).
struct DecoderVariant {
  const char* architecture = "";  // the HF architecture the plugin serves
  // Qwen2: the q/k/v projections always have biases, o and the MLP never (transformers' Qwen2 does
  // not read attention_bias/mlp_bias).
  bool qkv_bias = false;
  // Llama: config.json's attention_bias gives q/k/v/o biases, mlp_bias gate/up/down biases.
  bool biases_from_config = false;
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
  RopeScaling rope_scaling;
  bool qkv_bias = false;  // q, k, v projections
  bool o_bias = false;    // output projection
  bool mlp_bias = false;  // gate, up, down projections
  bool tie_word_embeddings = false;
  TokenId bos_token_id = -1;
  std::vector<TokenId> eos_token_ids;
};

// Maps `hf` for `variant`; refuses what the variant cannot follow (e.g. mlp_bias for Qwen2).
Result<DecoderConfig> make_decoder_config(const HfTransformerConfig& hf, const DecoderVariant& variant);

struct DecoderLayerWeights {
  std::vector<float> input_norm;  // [hidden]
  cpu::WeightMatrix q, k, v, o;   // [heads*hd, hidden], [kv*hd, hidden] x2, [hidden, heads*hd]
  std::vector<float> q_bias, k_bias, v_bias;  // empty without qkv_bias
  std::vector<float> o_bias;                  // empty without o_bias
  std::vector<float> post_norm;   // [hidden]
  cpu::WeightMatrix gate, up, down;  // [inter, hidden] x2, [hidden, inter]
  std::vector<float> gate_bias, up_bias, down_bias;  // empty without mlp_bias
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
