#pragma once
// The argument checks of the gated activations' Status wrappers (swiglu.cpp, geglu.cpp), then their
// launcher (launch.hpp). Internal to kernels/cuda.

#include <string_view>

#include "context.hpp"
#include "cuda_status.hpp"

namespace llaisys::cuda::detail {

using GatedLauncher = cudaError_t (*)(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                                      int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                                      int64_t out_stride);

inline Status run_gated(std::string_view op, GatedLauncher launcher, const CudaContext& ctx, const float* gate,
                        int64_t gate_stride, const float* up, int64_t up_stride, int64_t num_rows, int64_t width,
                        void* out, bool out_bf16, int64_t out_stride) {
  if (num_rows < 0 || num_rows > 0x7fffffff || width <= 0 || gate_stride < width || up_stride < width ||
      out_stride < width || (num_rows > 0 && (gate == nullptr || up == nullptr || out == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "{}: bad shape ({} rows of {}, strides gate {} up {} out {})", op,
                      num_rows, width, gate_stride, up_stride, out_stride);
  }
  if (num_rows == 0) return {};
  return cuda_status(launcher(ctx.stream, gate, gate_stride, up, up_stride, num_rows, width, out, out_bf16, out_stride),
                     op);
}

}  // namespace llaisys::cuda::detail
