// Phi3ForCausalLM (Phi-3-mini and Phi-3-medium, 4k context): the Llama-family decoder with fused
// projections, built outside the llaisys tree against the installed SDK (README.md). What transformers'
// Phi3 reads, and what this plugin does with it:
//  - self_attn.qkv_proj [q + 2 kv, hidden] and mlp.gate_up_proj [2 intermediate, hidden] (gate rows
//    first) instead of q/k/v and gate/up;
//  - no biases: its Linear layers have none, whatever attention_bias or mlp_bias say;
//  - hidden_act: SiLU, the one implemented; rms_norm_eps defaults to 1e-5 (Phi3Config's) when absent;
//  - sliding_window (when not null) on every layer: the token at p attends to p - window < j <= p
//    (Phi-3-mini-4k says 2047);
//  - rope_scaling: Phi3Config takes only longrope (older files: su, yarn), which llaisys does not
//    implement: refused, as the family's linear and llama3 are (not Phi-3's); original_max_position_embeddings
//    matters only with longrope. partial_rotary_factor other than 1 is refused by the shared reader;
//  - resid_pdrop, embd_pdrop, attention_dropout: training only.

#include "decoder_plugin.hpp"

namespace phi3 {

using namespace llaisys;

Result<decoder::DecoderSpec> describe(const ConfigReader& config) {
  LLAISYS_ASSIGN_OR_RETURN(decoder::DecoderSpec spec, decoder::read_decoder_config(config, "Phi3ForCausalLM"));
  if (!config.contains("rms_norm_eps")) spec.norm_eps = 1e-5f;
  if (spec.rope.scaling.kind != decoder::RopeScaling::Kind::none) {
    return config.unsupported(config.contains("rope_scaling") ? "rope_scaling" : "rope_parameters",
                              "Phi3ForCausalLM takes only longrope, which llaisys does not implement");
  }
  config.mark_read({"original_max_position_embeddings"});
  LLAISYS_ASSIGN_OR_RETURN(spec.activation, decoder::read_activation(config, "hidden_act", {ops::Activation::silu}));
  config.mark_read({"attention_bias", "mlp_bias"});  // transformers' Phi3 reads neither: no biases

  spec.names.qkv = "model.layers.{}.self_attn.qkv_proj.weight";
  spec.names.gate_up = "model.layers.{}.mlp.gate_up_proj.weight";

  if (config.contains("sliding_window")) {
    LLAISYS_ASSIGN_OR_RETURN(const int32_t window, config.integer("sliding_window"));
    spec.layer_windows.assign(static_cast<std::size_t>(spec.num_layers), window);
  }
  config.mark_read({"sliding_window"});
  return spec;
}

}  // namespace phi3

LLAISYS_EXPORT_DECODER_PLUGIN(phi3::describe, "phi3", "0.1.0", "Phi3ForCausalLM")
