// LlamaForCausalLM (Llama 2 / 3 and the many models in its layout, e.g. TinyStories, SmolLM,
// TinyLlama): the Llama-family decoder as it is. config.json decides grouped-query attention
// (num_key_value_heads), attention_bias (q/k/v/o biases), mlp_bias (gate/up/down biases), a tied or
// separate lm_head, rope_theta and rope_scaling (linear, llama3), rms_norm_eps (decoder_config.hpp).

#include "decoder_plugin.hpp"

namespace llaisys::llama {

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec, decoder::read_decoder_config(config, "LlamaForCausalLM"));
  LLAISYS_ASSIGN_OR_RETURN(spec.activation, decoder::read_activation(config, "hidden_act", {ops::Activation::silu}));
  LLAISYS_ASSIGN_OR_RETURN(const bool attention_bias, config.boolean("attention_bias", false));
  spec.qkv_bias = spec.o_bias = attention_bias;
  LLAISYS_ASSIGN_OR_RETURN(spec.mlp_bias, config.boolean("mlp_bias", false));
  return spec;
}

}  // namespace llaisys::llama

LLAISYS_EXPORT_DECODER_PLUGIN(llaisys::llama::describe, "llama", "0.2.0", "LlamaForCausalLM")
