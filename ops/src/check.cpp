#include "check.hpp"

namespace llaisys::ops::detail {

Status check_rows(const DeviceContext& ctx, std::string_view op, std::string_view name, const TensorView& view,
                  DType dtype, int64_t rows, int64_t cols) {
  if (view.rank() != 2 || view.data() == nullptr || view.strides()[1] != 1 || view.strides()[0] < view.dim(1)) {
    return make_error(ErrorCode::invalid_argument, "{}: {} must be rows of contiguous elements, got {}", op, name,
                      view.to_string());
  }
  if (view.device() != ctx.device()) {
    return make_error(ErrorCode::invalid_argument, "{}: {} is on {}, the context on {}", op, name,
                      view.device().to_string(), ctx.device().to_string());
  }
  if (view.dtype() != dtype) {
    return make_error(ErrorCode::invalid_argument, "{}: {} must be {}, got {}", op, name, to_string(dtype),
                      view.to_string());
  }
  if ((rows >= 0 && view.dim(0) != rows) || (cols >= 0 && view.dim(1) != cols)) {
    return make_error(ErrorCode::invalid_argument, "{}: {} must be [{}, {}], got {}", op, name, rows, cols,
                      view.to_string());
  }
  return Status();
}

Status check_heads(const DeviceContext& ctx, std::string_view op, std::string_view name, const TensorView& view,
                   int64_t tokens, int64_t heads, int64_t head_dim) {
  if (view.rank() != 3 || view.data() == nullptr || view.dtype() != DType::f32 || view.device() != ctx.device() ||
      view.dim(0) != tokens || view.dim(1) != heads || view.dim(2) != head_dim || view.strides()[2] != 1 ||
      view.strides()[1] != head_dim || view.strides()[0] < heads * head_dim) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: {} must be f32 [{}, {}, {}] with contiguous heads on {}, got {}", op, name, tokens, heads,
                      head_dim, ctx.device().to_string(), view.to_string());
  }
  return Status();
}

Status unsupported_device(const DeviceContext& ctx, std::string_view op) {
  return make_error(ErrorCode::unsupported, "{}: not implemented on {} in this build", op, ctx.device().to_string());
}

}  // namespace llaisys::ops::detail
