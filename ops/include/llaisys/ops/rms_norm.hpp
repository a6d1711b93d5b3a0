#pragma once
// rms_norm: y = x / sqrt(mean(x^2) + eps) * weight, row by row, in f32 (Hugging Face's order:
// (x * inv_rms) * weight). On the CPU the sum of squares follows the canonical 16-lane order.
//
//  - x: [rows, width] f32 -> y: [rows, width] f32 or ctx.activation_dtype(); y may be x.
//  - x: [tokens, heads, width] f32 with y == x: every head of every token normalised in place (the
//    per-head q/k norm of Qwen3); the view's head stride must be `width`.
// weight: [width] f32 (upload_vector; Gemma's 1 + w is folded in there).

#include "llaisys/ops/weights.hpp"

namespace llaisys::ops {

Status rms_norm(DeviceContext& ctx, const TensorView& x, const Tensor& weight, float eps, const TensorView& y);

}  // namespace llaisys::ops
