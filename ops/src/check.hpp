#pragma once
// The argument checks every op makes once, before dispatching (internal to ops/src).

#include <string_view>

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops::detail {

// A view of rows: rank 2, elements contiguous within a row (row stride >= the row), on the context's
// device, of `dtype`; `rows` / `cols` checked when >= 0. invalid_argument naming op and argument.
Status check_rows(const DeviceContext& ctx, std::string_view op, std::string_view name, const TensorView& view,
                  DType dtype, int64_t rows = -1, int64_t cols = -1);
// A [tokens, heads, head_dim] view with contiguous heads (head stride == head_dim), on the device, f32.
Status check_heads(const DeviceContext& ctx, std::string_view op, std::string_view name, const TensorView& view,
                   int64_t tokens, int64_t heads, int64_t head_dim);

inline int64_t row_stride(const TensorView& view) { return view.strides()[0]; }

Status unsupported_device(const DeviceContext& ctx, std::string_view op);

}  // namespace llaisys::ops::detail
