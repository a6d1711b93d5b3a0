#include "llaisys/ops/elementwise.hpp"

#include "check.hpp"
#include "cpu/elementwise.hpp"
#include "cpu/softcap.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/elementwise.hpp"
#include "cuda/softcap.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

Status add(DeviceContext& ctx, const TensorView& y, const TensorView& x) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "add", "y", y, DType::f32));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "add", "x", x, DType::f32, y.dim(0), y.dim(1)));
  if (y.dim(0) == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      cpu::add_rows(as_cpu(ctx).kernels(), y.data_as<float>(), detail::row_stride(y), x.data_as<const float>(),
                    detail::row_stride(x), y.dim(0), y.dim(1));
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      return cuda::add_rows(as_cuda(ctx).kernels(), y.data_as<float>(), detail::row_stride(y), x.data_as<const float>(),
                            detail::row_stride(x), y.dim(0), y.dim(1));
#endif
    default: return detail::unsupported_device(ctx, "add");
  }
}

Status scale(DeviceContext& ctx, const TensorView& x, float s) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "scale", "x", x, DType::f32));
  if (x.dim(0) == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      cpu::scale_rows(as_cpu(ctx).kernels(), x.data_as<float>(), detail::row_stride(x), x.dim(0), x.dim(1), s);
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      return cuda::scale_rows(as_cuda(ctx).kernels(), x.data_as<float>(), detail::row_stride(x), x.dim(0), x.dim(1), s);
#endif
    default: return detail::unsupported_device(ctx, "scale");
  }
}

Status softcap(DeviceContext& ctx, const TensorView& x, float cap) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "softcap", "x", x, DType::f32));
  if (!(cap > 0.0f)) return make_error(ErrorCode::invalid_argument, "softcap: cap must be positive, got {}", cap);
  if (x.dim(0) == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      cpu::softcap(as_cpu(ctx).kernels(), x.data_as<float>(), detail::row_stride(x), x.dim(0), x.dim(1), cap);
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      return cuda::softcap(as_cuda(ctx).kernels(), x.data_as<float>(), detail::row_stride(x), x.dim(0), x.dim(1), cap);
#endif
    default: return detail::unsupported_device(ctx, "softcap");
  }
}

}  // namespace llaisys::ops
