// LlamaForCausalLM (Llama 2 / 3 and the many models in its layout, e.g. TinyStories, SmolLM,
// TinyLlama): the Llama-family decoder of plugins/common. config.json decides the rest: grouped-query
// attention (num_key_value_heads), attention_bias (q/k/v/o biases), mlp_bias, a tied or separate
// lm_head (tie_word_embeddings), rope_theta, rope_scaling (linear, llama3), rms_norm_eps.

#include "decoder_plugin.hpp"
#include "llaisys/model/plugin_export.hpp"

namespace llaisys::llama {

inline constexpr decoder::DecoderVariant kLlamaVariant{.architecture = "LlamaForCausalLM",
                                                       .biases_from_config = true};
using LlamaModel = decoder::DecoderPlugin<kLlamaVariant>;
static_assert(PluginModel<LlamaModel>);

}  // namespace llaisys::llama

LLAISYS_EXPORT_PLUGIN(llaisys::llama::LlamaModel, "llama", "0.1.0", "LlamaForCausalLM")
