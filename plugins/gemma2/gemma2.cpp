// Gemma2ForCausalLM (Gemma 2): the shared decoder with Gemma's pieces —
//  - RMSNorm multiplying by (1 + w) everywhere (the file stores w);
//  - pre- and post-norms around both blocks: x += post_attention_layernorm(attn(input_layernorm(x))),
//    x += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)));
//  - GeGLU MLP with the tanh GELU (hidden_activation; transformers' Gemma 2 ignores hidden_act);
//  - embeddings times sqrt(hidden_size) (rounded to f32, as transformers does for f32 weights);
//  - attention scores scaled by query_pre_attn_scalar^-0.5 (not head_dim's), then soft-capped by
//    attn_logit_softcapping; final logits soft-capped by final_logit_softcapping (either may be null);
//  - sliding_window on the layers layer_types marks sliding (transformers' default when absent: the
//    even layers), full attention on the others;
//  - tied embeddings by default; attention_bias gives q/k/v/o biases.

#include <cmath>

#include "decoder_plugin.hpp"

namespace llaisys::gemma2 {

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  if (!config.contains("head_dim")) {
    // transformers' Gemma2Config defaults head_dim to 256, not hidden / heads: be explicit.
    return make_error(ErrorCode::invalid_argument, "{}: missing \"head_dim\"", config.source());
  }
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec,
                           decoder::read_decoder_config(config, "Gemma2ForCausalLM", {.tie_word_embeddings = true}));
  LLAISYS_ASSIGN_OR_RETURN(spec.activation,
                           decoder::read_activation(config, "hidden_activation", {ops::Activation::gelu_tanh}));
  config.mark_read({"hidden_act"});
  spec.norm_weight_offset = 1.0f;
  spec.post_attention_norm = spec.post_ffn_norm = true;
  spec.names.post_attn_norm = "model.layers.{}.post_attention_layernorm.weight";
  spec.names.ffn_norm = "model.layers.{}.pre_feedforward_layernorm.weight";
  spec.names.post_ffn_norm = "model.layers.{}.post_feedforward_layernorm.weight";
  spec.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(spec.hidden_size)));
  LLAISYS_ASSIGN_OR_RETURN(const double scalar, config.number("query_pre_attn_scalar", 256.0));
  if (!(scalar > 0)) return config.invalid("query_pre_attn_scalar", "must be positive");
  spec.attention_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  LLAISYS_ASSIGN_OR_RETURN(const double attn_cap, config.number("attn_logit_softcapping", 0.0));
  LLAISYS_ASSIGN_OR_RETURN(const double final_cap, config.number("final_logit_softcapping", 0.0));
  if (attn_cap < 0) return config.invalid("attn_logit_softcapping", "must be positive or null");
  if (final_cap < 0) return config.invalid("final_logit_softcapping", "must be positive or null");
  spec.attention_softcap = static_cast<float>(attn_cap);
  spec.final_softcap = static_cast<float>(final_cap);
  LLAISYS_ASSIGN_OR_RETURN(const bool attention_bias, config.boolean("attention_bias", false));
  spec.qkv_bias = spec.o_bias = attention_bias;

  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::vector<bool>> sliding, decoder::read_layer_types(config, spec.num_layers));
  if (!sliding) {
    sliding.emplace();
    for (int32_t i = 0; i < spec.num_layers; ++i) sliding->push_back(i % 2 == 0);
  }
  int32_t window = 0;
  if (config.contains("sliding_window")) {
    LLAISYS_ASSIGN_OR_RETURN(window, config.integer("sliding_window"));
  }
  config.mark_read({"sliding_window"});
  for (const bool slides : *sliding) spec.layer_windows.push_back(slides ? window : 0);
  return spec;
}

}  // namespace llaisys::gemma2

LLAISYS_EXPORT_DECODER_PLUGIN(llaisys::gemma2::describe, "gemma2", "0.1.0", "Gemma2ForCausalLM")
