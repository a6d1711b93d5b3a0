#pragma once
// embedding on the GPU: rows of a bf16 table gathered and converted exactly to f32 (the residual
// stream), as cpu::embedding does.

#include <cstdint>

#include "context.hpp"
#include "linear.hpp"

namespace llaisys::cuda {

// out[t, :] = table[ids[t], :] for t < num_tokens (ids, out in device memory). An id outside
// [0, table.rows) gives a row of zeros: ids are validated upstream, and a bad one must not read
// out of bounds.
Status embedding(const CudaContext& ctx, const DeviceMatrix& table, const int32_t* ids, int64_t num_tokens,
                 float* out, int64_t out_stride);

// dst[r, :] = src[indices[r], :] for r < num_rows, `width` f32 per row (indices in device memory):
// the rows of the residual stream that want an output. An index outside [0, src_rows) gives zeros.
Status gather_rows(const CudaContext& ctx, const float* src, int64_t src_stride, int64_t src_rows,
                   const int32_t* indices, int64_t num_rows, int64_t width, float* dst, int64_t dst_stride);

}  // namespace llaisys::cuda
