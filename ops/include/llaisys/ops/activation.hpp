#pragma once
// gated_activation: out = act(gate) * up, the MLP's gate of a GLU (SwiGLU for Llama-family models,
// GeGLU with the tanh GELU for Gemma).
//   silu:      act(g) = g / (1 + exp(-g))
//   gelu_tanh: act(g) = 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3)))   (gelu_pytorch_tanh)
// gate, up: [rows, width] f32 (row strides free); out: [rows, width] of ctx.activation_dtype(), may be
// the gate or up view itself when that is f32.

#include <optional>
#include <string_view>

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

enum class Activation { silu, gelu_tanh };

// Hugging Face's hidden_act names: "silu" / "swish" -> silu; "gelu_pytorch_tanh" / "gelu_tanh" ->
// gelu_tanh; anything else nullopt.
std::optional<Activation> parse_activation(std::string_view name);
std::string_view to_string(Activation activation);

Status gated_activation(DeviceContext& ctx, Activation activation, const TensorView& gate, const TensorView& up,
                        const TensorView& out);

}  // namespace llaisys::ops
