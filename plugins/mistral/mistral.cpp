// MistralForCausalLM (Mistral 7B and its layout): the Llama-family decoder without biases, with
// `sliding_window` (when not null) on every layer: the token at position p attends only to positions
// p - window < j <= p. Positions keep counting from the start (RoPE), and the engine gives back the
// KV blocks that fall wholly outside every live sequence's window (ModelInfo::sliding_window).

#include "decoder_plugin.hpp"

namespace llaisys::mistral {

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec, decoder::read_decoder_config(config, "MistralForCausalLM"));
  LLAISYS_ASSIGN_OR_RETURN(spec.activation, decoder::read_activation(config, "hidden_act", {ops::Activation::silu}));
  if (config.contains("sliding_window")) {
    LLAISYS_ASSIGN_OR_RETURN(const int32_t window, config.integer("sliding_window"));
    spec.layer_windows.assign(static_cast<std::size_t>(spec.num_layers), window);
  }
  config.mark_read({"sliding_window"});
  return spec;
}

}  // namespace llaisys::mistral

LLAISYS_EXPORT_DECODER_PLUGIN(llaisys::mistral::describe, "mistral", "0.1.0", "MistralForCausalLM")
