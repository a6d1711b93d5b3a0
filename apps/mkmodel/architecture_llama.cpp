// LlamaForCausalLM: tests/data/tiny-llama-gguf/WEIGHTS.md (the model llama.cpp's tools converted and
// quantized into the fixture's GGUF files; no biases, a separate lm_head).

#include <fmt/format.h>

#include "architectures.hpp"

namespace llaisys::mkmodel {

std::vector<TensorSpec> llama_layout_tensors(const ModelShape& s, const LlamaLayoutScales& scales) {
  const int64_t h = s.hidden_size;
  const int64_t i = s.intermediate_size;
  const int64_t q_dim = s.num_heads * s.head_dim;
  const int64_t kv_dim = s.num_kv_heads * s.head_dim;
  const double in_scale = unit_variance_scale(h);
  std::vector<TensorSpec> specs;
  specs.push_back({"model.embed_tokens.weight", {s.vocab_size, h}, scales.embed, 0.0});
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    specs.push_back({p + "input_layernorm.weight", {h}, 0.1, 1.0});
    specs.push_back({p + "self_attn.q_proj.weight", {q_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.k_proj.weight", {kv_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.v_proj.weight", {kv_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.o_proj.weight", {h, q_dim}, scales.output * unit_variance_scale(q_dim), 0.0});
    specs.push_back({p + "post_attention_layernorm.weight", {h}, 0.1, 1.0});
    specs.push_back({p + "mlp.gate_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.up_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.down_proj.weight", {h, i}, scales.output * unit_variance_scale(i), 0.0});
  }
  specs.push_back({"model.norm.weight", {h}, 0.1, 1.0});
  if (!s.tie_word_embeddings) specs.push_back({"lm_head.weight", {s.vocab_size, h}, scales.head * in_scale, 0.0});
  return specs;
}

std::vector<TensorSpec> llama_tensors(const ModelShape& s) {
  return llama_layout_tensors(s, {.embed = 1.0, .output = 1.0, .head = 3.0});
}

std::string llama_config_json(const ModelShape& s) {
  return fmt::format(
      R"({{
  "architectures": [
    "LlamaForCausalLM"
  ],
  "model_type": "llama",
  "hidden_size": {},
  "intermediate_size": {},
  "num_hidden_layers": {},
  "num_attention_heads": {},
  "num_key_value_heads": {},
  "head_dim": {},
  "vocab_size": {},
  "max_position_embeddings": {},
  "rope_theta": 10000.0,
  "rms_norm_eps": 1e-05,
  "hidden_act": "silu",
  "tie_word_embeddings": {},
  "attention_bias": false,
  "mlp_bias": false,
  "torch_dtype": "bfloat16",
  "bos_token_id": 1,
  "eos_token_id": 2,
  "initializer_range": 0.02,
  "use_cache": true
}})",
      s.hidden_size, s.intermediate_size, s.num_layers, s.num_heads, s.num_kv_heads, s.head_dim, s.vocab_size,
      s.max_position_embeddings, s.tie_word_embeddings);
}

std::string llama_generation_config_json() {
  return R"({
  "bos_token_id": 1,
  "eos_token_id": 2
})";
}

}  // namespace llaisys::mkmodel
