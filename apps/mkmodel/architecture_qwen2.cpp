// Qwen2ForCausalLM: tests/data/tiny-qwen2/WEIGHTS.md (q/k/v biases, o_proj from heads*head_dim).

#include <fmt/format.h>

#include "architectures.hpp"

namespace llaisys::mkmodel {

std::vector<TensorSpec> qwen2_tensors(const ModelShape& s) {
  const int64_t h = s.hidden_size;
  const int64_t i = s.intermediate_size;
  const int64_t q_dim = s.num_heads * s.head_dim;
  const int64_t kv_dim = s.num_kv_heads * s.head_dim;
  const double in_scale = unit_variance_scale(h);
  const double o_scale = 0.5 * unit_variance_scale(q_dim);
  const double down_scale = 0.5 * unit_variance_scale(i);
  std::vector<TensorSpec> specs;
  specs.push_back({"model.embed_tokens.weight", {s.vocab_size, h}, 0.5, 0.0});
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    specs.push_back({p + "input_layernorm.weight", {h}, 0.1, 1.0});
    specs.push_back({p + "self_attn.q_proj.weight", {q_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.q_proj.bias", {q_dim}, 0.1, 0.0});
    specs.push_back({p + "self_attn.k_proj.weight", {kv_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.k_proj.bias", {kv_dim}, 0.1, 0.0});
    specs.push_back({p + "self_attn.v_proj.weight", {kv_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.v_proj.bias", {kv_dim}, 0.1, 0.0});
    specs.push_back({p + "self_attn.o_proj.weight", {h, q_dim}, o_scale, 0.0});
    specs.push_back({p + "post_attention_layernorm.weight", {h}, 0.1, 1.0});
    specs.push_back({p + "mlp.gate_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.up_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.down_proj.weight", {h, i}, down_scale, 0.0});
  }
  specs.push_back({"model.norm.weight", {h}, 0.1, 1.0});
  if (!s.tie_word_embeddings) specs.push_back({"lm_head.weight", {s.vocab_size, h}, 4.0 * in_scale, 0.0});
  return specs;
}

std::string qwen2_config_json(const ModelShape& s) {
  return fmt::format(
      R"({{
  "hidden_size": {},
  "intermediate_size": {},
  "num_hidden_layers": {},
  "num_attention_heads": {},
  "num_key_value_heads": {},
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "model_type": "qwen2",
  "vocab_size": {},
  "max_position_embeddings": {},
  "rope_theta": 1000000.0,
  "rms_norm_eps": 1e-06,
  "hidden_act": "silu",
  "tie_word_embeddings": {},
  "torch_dtype": "bfloat16",
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "use_sliding_window": false,
  "sliding_window": {},
  "max_window_layers": {},
  "attention_dropout": 0.0,
  "initializer_range": 0.02,
  "use_cache": true
}}
)",
      s.hidden_size, s.intermediate_size, s.num_layers, s.num_heads, s.num_kv_heads, s.vocab_size,
      s.max_position_embeddings, s.tie_word_embeddings, s.max_position_embeddings, s.num_layers);
}

std::string qwen2_generation_config_json() {
  return R"({
  "bos_token_id": 151643,
  "eos_token_id": [
    151645,
    151643
  ],
  "pad_token_id": 151643,
  "do_sample": true,
  "temperature": 0.7,
  "top_p": 0.8,
  "top_k": 20,
  "repetition_penalty": 1.05
}
)";
}

}  // namespace llaisys::mkmodel
