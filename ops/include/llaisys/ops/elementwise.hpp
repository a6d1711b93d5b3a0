#pragma once
// Element-wise ops on f32 [rows, width] views (row strides free).
//   add:     y += x                       (a residual connection after a post-norm)
//   scale:   x *= s                       (Gemma's embeddings times sqrt(hidden))
//   softcap: x = cap * tanh(x / cap)      (Gemma 2's final_logit_softcapping)

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

Status add(DeviceContext& ctx, const TensorView& y, const TensorView& x);
Status scale(DeviceContext& ctx, const TensorView& x, float s);
Status softcap(DeviceContext& ctx, const TensorView& x, float cap);

}  // namespace llaisys::ops
