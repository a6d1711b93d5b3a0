#pragma once
// embedding: out[t, :] = table[id_t, :] as f32 for the pass's tokens (ids validated with the batch).
// gather_rows: out[r, :] = x[output_token_indices[r], :], the rows of the pass that want an output.

#include "llaisys/ops/pass.hpp"
#include "llaisys/ops/weights.hpp"

namespace llaisys::ops {

// table: [vocab, hidden] (upload_matrix); out: [num_tokens, hidden] f32.
Status embedding(DeviceContext& ctx, const Pass& pass, const Tensor& table, const TensorView& out);
// x: [num_tokens, width] f32; out: [num_outputs, width] f32.
Status gather_rows(DeviceContext& ctx, const Pass& pass, const TensorView& x, const TensorView& out);

}  // namespace llaisys::ops
