// Gemma2ForCausalLM: tests/data/tiny-gemma2/WEIGHTS.md (norms stored as w for a (1 + w) multiplier,
// pre/post norms around attention and MLP, tied embeddings; the window on even layers, the soft caps
// and query_pre_attn_scalar are config.json's).

#include <fmt/format.h>

#include "architectures.hpp"

namespace llaisys::mkmodel {

std::vector<TensorSpec> gemma2_tensors(const ModelShape& s) {
  const int64_t h = s.hidden_size;
  const int64_t i = s.intermediate_size;
  const int64_t q_dim = s.num_heads * s.head_dim;
  const int64_t kv_dim = s.num_kv_heads * s.head_dim;
  const double in_scale = unit_variance_scale(h);
  // Small embeddings and large post-norms keep the tied, x16-scaled embeddings from dominating the
  // residual stream; larger q/k make the attention soft cap matter (WEIGHTS.md).
  std::vector<TensorSpec> specs;
  specs.push_back({"model.embed_tokens.weight", {s.vocab_size, h}, 0.05, 0.0});
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    specs.push_back({p + "input_layernorm.weight", {h}, 0.1, 0.0});
    specs.push_back({p + "self_attn.q_proj.weight", {q_dim, h}, 2.0 * in_scale, 0.0});
    specs.push_back({p + "self_attn.k_proj.weight", {kv_dim, h}, 2.0 * in_scale, 0.0});
    specs.push_back({p + "self_attn.v_proj.weight", {kv_dim, h}, in_scale, 0.0});
    specs.push_back({p + "self_attn.o_proj.weight", {h, q_dim}, 0.5 * unit_variance_scale(q_dim), 0.0});
    specs.push_back({p + "post_attention_layernorm.weight", {h}, 0.1, 2.0});
    specs.push_back({p + "pre_feedforward_layernorm.weight", {h}, 0.1, 0.0});
    specs.push_back({p + "mlp.gate_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.up_proj.weight", {i, h}, in_scale, 0.0});
    specs.push_back({p + "mlp.down_proj.weight", {h, i}, 0.5 * unit_variance_scale(i), 0.0});
    specs.push_back({p + "post_feedforward_layernorm.weight", {h}, 0.1, 2.0});
  }
  specs.push_back({"model.norm.weight", {h}, 0.1, 10.0});
  return specs;  // tied: the logits use embed_tokens
}

std::string gemma2_config_json(const ModelShape& s) {
  std::vector<std::string> layer_types;
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    layer_types.emplace_back(layer % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  return fmt::format(
      R"({{
  "architectures": [
    "Gemma2ForCausalLM"
  ],
  "model_type": "gemma2",
  "hidden_size": {},
  "intermediate_size": {},
  "num_hidden_layers": {},
  "num_attention_heads": {},
  "num_key_value_heads": {},
  "head_dim": {},
  "vocab_size": {},
  "max_position_embeddings": {},
  "rope_theta": 10000.0,
  "rms_norm_eps": 1e-06,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_act": "gelu_pytorch_tanh",
  "tie_word_embeddings": {},
  "attention_bias": false,
  "attention_dropout": 0.0,
  "query_pre_attn_scalar": 96,
  "sliding_window": {},
  "layer_types": {},
  "attn_logit_softcapping": 50.0,
  "final_logit_softcapping": 30.0,
  "cache_implementation": "hybrid",
  "torch_dtype": "bfloat16",
  "bos_token_id": 1,
  "eos_token_id": 2,
  "pad_token_id": null,
  "initializer_range": 0.02,
  "use_cache": true
}}
)",
      s.hidden_size, s.intermediate_size, s.num_layers, s.num_heads, s.num_kv_heads, s.head_dim, s.vocab_size,
      s.max_position_embeddings, s.tie_word_embeddings, s.sliding_window, json_string_array(layer_types));
}

std::string gemma2_generation_config_json() {
  return R"({
  "bos_token_id": 1,
  "eos_token_id": 2,
  "cache_implementation": "hybrid"
}
)";
}

}  // namespace llaisys::mkmodel
