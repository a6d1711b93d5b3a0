// Qwen2ForCausalLM (Qwen2, Qwen2.5): the Llama-family decoder with biases on the q, k and v
// projections (always: transformers' Qwen2 reads no attention_bias key), SiLU MLP without biases.
//
// Config keys beyond the family's (decoder_config.hpp): use_sliding_window (sliding-window attention
// is refused: no released Qwen2 model turns it on, and it is untested here); sliding_window,
// max_window_layers and layer_types only matter with it.

#include "decoder_plugin.hpp"

namespace llaisys::qwen2 {

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec, decoder::read_decoder_config(config, "Qwen2ForCausalLM"));
  LLAISYS_ASSIGN_OR_RETURN(spec.activation, decoder::read_activation(config, "hidden_act", {ops::Activation::silu}));
  spec.qkv_bias = true;
  config.mark_read({"attention_bias"});  // transformers' Qwen2 has q/k/v biases whatever it says
  LLAISYS_RETURN_IF_ERROR(decoder::refuse_if_set(config, "mlp_bias", "Qwen2ForCausalLM has no MLP biases", "false"));
  LLAISYS_RETURN_IF_ERROR(decoder::refuse_if_set(config, "use_sliding_window",
                                                 "sliding-window attention is not implemented for Qwen2", "false"));
  config.mark_read({"sliding_window", "max_window_layers", "layer_types"});  // used only with use_sliding_window
  return spec;
}

}  // namespace llaisys::qwen2

LLAISYS_EXPORT_DECODER_PLUGIN(llaisys::qwen2::describe, "qwen2", "0.2.0", "Qwen2ForCausalLM")
