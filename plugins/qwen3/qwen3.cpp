// Qwen3ForCausalLM (Qwen3 dense models): the Llama-family decoder with a per-head RMSNorm on q and k
// (q_norm, k_norm: weight [head_dim], after the projections, before RoPE) and head_dim given
// explicitly (8 heads x 128 can exceed hidden_size). attention_bias gives q/k/v/o biases (false in
// the released models); SiLU MLP without biases.
//
// Config keys beyond the family's: attention_bias; use_sliding_window is refused when true (as for
// Qwen2), sliding_window / max_window_layers / layer_types only matter with it.

#include "decoder_plugin.hpp"

namespace llaisys::qwen3 {

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec, decoder::read_decoder_config(config, "Qwen3ForCausalLM"));
  LLAISYS_ASSIGN_OR_RETURN(spec.activation, decoder::read_activation(config, "hidden_act", {ops::Activation::silu}));
  spec.qk_norm = true;
  LLAISYS_ASSIGN_OR_RETURN(const bool attention_bias, config.boolean("attention_bias", false));
  spec.qkv_bias = spec.o_bias = attention_bias;
  LLAISYS_RETURN_IF_ERROR(decoder::refuse_if_set(config, "use_sliding_window",
                                                 "sliding-window attention is not implemented for Qwen3", "false"));
  config.mark_read({"sliding_window", "max_window_layers", "layer_types"});  // used only with use_sliding_window
  return spec;
}

}  // namespace llaisys::qwen3

LLAISYS_EXPORT_DECODER_PLUGIN(llaisys::qwen3::describe, "qwen3", "0.1.0", "Qwen3ForCausalLM")
