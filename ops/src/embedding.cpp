#include "llaisys/ops/embedding.hpp"

#include <cstring>

#include "check.hpp"
#include "cpu/embedding.hpp"
#include "cpu_device.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/embedding.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

Status embedding(DeviceContext& ctx, const Pass& pass, const Tensor& table, const TensorView& out) {
  if (table.view.rank() != 2 || table.view.device() != ctx.device()) {
    return make_error(ErrorCode::invalid_argument, "embedding: bad table {}", table.view.to_string());
  }
  const int64_t hidden = table.dim(1);
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "embedding", "out", out, DType::f32, pass.num_tokens(), hidden));
  if (pass.num_tokens() == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: {
      const cpu::WeightMatrix matrix{.data = table.view.data(), .dtype = table.dtype(), .rows = table.dim(0), .cols = hidden};
      cpu::embedding(as_cpu(ctx).kernels(), matrix, pass.batch().token_ids.data(), pass.num_tokens(),
                     out.data_as<float>(), detail::row_stride(out));
      return Status();
    }
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: {
      const cuda::DeviceMatrix matrix{.data = table.view.data_as<const bf16_t>(), .rows = table.dim(0), .cols = hidden};
      return cuda::embedding(as_cuda(ctx).kernels(), matrix, as_cuda(pass).token_ids, pass.num_tokens(),
                             out.data_as<float>(), detail::row_stride(out));
    }
#endif
    default: return detail::unsupported_device(ctx, "embedding");
  }
}

Status gather_rows(DeviceContext& ctx, const Pass& pass, const TensorView& x, const TensorView& out) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "gather_rows", "x", x, DType::f32, pass.num_tokens()));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "gather_rows", "out", out, DType::f32, pass.num_outputs(), x.dim(1)));
  if (pass.num_outputs() == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu: {
      const auto row_bytes = static_cast<std::size_t>(x.dim(1)) * sizeof(float);
      for (int64_t r = 0; r < pass.num_outputs(); ++r) {
        const int64_t token = pass.batch().output_token_indices[static_cast<std::size_t>(r)];
        std::memcpy(out.data_as<float>() + r * detail::row_stride(out),
                    x.data_as<const float>() + token * detail::row_stride(x), row_bytes);
      }
      return Status();
    }
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      return cuda::gather_rows(as_cuda(ctx).kernels(), x.data_as<const float>(), detail::row_stride(x), x.dim(0),
                               as_cuda(pass).output_indices, pass.num_outputs(), x.dim(1), out.data_as<float>(),
                               detail::row_stride(out));
#endif
    default: return detail::unsupported_device(ctx, "gather_rows");
  }
}

}  // namespace llaisys::ops
