#pragma once
// linear: y = x W^T + b (or y += x W^T + b), the projection every transformer block is made of.
//
// x: [M, K] of ctx.activation_dtype() (row stride free); y: [M, N] f32 (row stride free), N =
// weight.out_features, columns [0, N) written. On the CPU the result of a row is bit-identical
// whatever M is (cpu/linear.hpp: batch invariance); on CUDA it comes from cuBLASLt (bf16 inputs,
// f32 accumulation).

#include "llaisys/ops/weights.hpp"

namespace llaisys::ops {

Status linear(DeviceContext& ctx, const TensorView& x, const LinearWeight& weight, const TensorView& y,
              bool accumulate = false);

}  // namespace llaisys::ops
