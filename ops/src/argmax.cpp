#include "llaisys/ops/argmax.hpp"

#include <span>

#include "check.hpp"
#include "cpu_device.hpp"
#include "llaisys/sampling/sampler.hpp"
#ifdef LLAISYS_HAVE_CUDA
#include "cuda/cuda_status.hpp"
#include "cuda/launch.hpp"
#include "cuda_device.hpp"
#endif

namespace llaisys::ops {

Status argmax(DeviceContext& ctx, const TensorView& logits, const TensorView& ids) {
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "argmax", "logits", logits, DType::f32));
  LLAISYS_RETURN_IF_ERROR(detail::check_rows(ctx, "argmax", "ids", ids, DType::i32, logits.dim(0), 1));
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  if (rows == 0) return Status();
  switch (ctx.device().kind) {
    case Device::Kind::cpu:
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = logits.data_as<const float>() + r * detail::row_stride(logits);
        ids.data_as<int32_t>()[r * detail::row_stride(ids)] =
            llaisys::argmax(std::span<const float>(row, static_cast<std::size_t>(vocab)));
      }
      return Status();
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda:
      if (detail::row_stride(ids) != 1) return Status(ErrorCode::invalid_argument, "argmax: ids must be contiguous");
      return cuda::cuda_status(cuda::launch::argmax_rows(as_cuda(ctx).kernels().stream, logits.data_as<const float>(),
                                                         detail::row_stride(logits), rows, vocab, ids.data_as<int32_t>()),
                               "argmax kernel");
#endif
    default: return detail::unsupported_device(ctx, "argmax");
  }
}

}  // namespace llaisys::ops
