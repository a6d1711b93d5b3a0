#pragma once
// argmax: for each row of logits, the index of its largest value (the lowest on ties; a NaN is never
// chosen after index 0), on the model's device, so greedy decoding needs only ids back.
//
// logits: [rows, vocab] f32 (row stride free); ids: [rows, 1] i32 on the same device.

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

Status argmax(DeviceContext& ctx, const TensorView& logits, const TensorView& ids);

}  // namespace llaisys::ops
