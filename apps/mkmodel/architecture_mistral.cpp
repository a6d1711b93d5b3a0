// MistralForCausalLM: tests/data/tiny-mistral/WEIGHTS.md (Llama layout without biases, a sliding
// window on every layer, which only config.json carries).

#include <fmt/format.h>

#include "architectures.hpp"

namespace llaisys::mkmodel {

std::vector<TensorSpec> mistral_tensors(const ModelShape& s) {
  return llama_layout_tensors(s, {.embed = 0.5, .output = 0.5, .head = 4.0});
}

std::string mistral_config_json(const ModelShape& s) {
  return fmt::format(
      R"({{
  "architectures": [
    "MistralForCausalLM"
  ],
  "model_type": "mistral",
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
  "sliding_window": {},
  "attention_dropout": 0.0,
  "torch_dtype": "bfloat16",
  "bos_token_id": 1,
  "eos_token_id": 2,
  "pad_token_id": null,
  "initializer_range": 0.02,
  "use_cache": true
}}
)",
      s.hidden_size, s.intermediate_size, s.num_layers, s.num_heads, s.num_kv_heads, s.head_dim, s.vocab_size,
      s.max_position_embeddings, s.tie_word_embeddings, s.sliding_window);
}

std::string mistral_generation_config_json() {
  return R"({
  "bos_token_id": 1,
  "eos_token_id": 2
}
)";
}

}  // namespace llaisys::mkmodel
