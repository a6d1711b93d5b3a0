// Qwen2ForCausalLM (Qwen2, Qwen2.5): the Llama-family decoder of plugins/common with biases on the
// q, k and v projections (always; transformers' Qwen2 reads no attention_bias/mlp_bias key).
// Everything else — config mapping, tensor names, the forward pass — is the shared decoder.

#include "decoder_plugin.hpp"
#include "llaisys/model/plugin_export.hpp"

namespace llaisys::qwen2 {

inline constexpr decoder::DecoderVariant kQwen2Variant{.architecture = "Qwen2ForCausalLM", .qkv_bias = true};
using Qwen2Model = decoder::DecoderPlugin<kQwen2Variant>;
static_assert(PluginModel<Qwen2Model>);

}  // namespace llaisys::qwen2

LLAISYS_EXPORT_PLUGIN(llaisys::qwen2::Qwen2Model, "qwen2", "0.1.0", "Qwen2ForCausalLM")
