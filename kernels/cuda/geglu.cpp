#include "geglu.hpp"

#include "gated_args.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, float* out, int64_t out_stride) {
  return detail::run_gated("geglu_tanh", &launch::geglu_tanh, ctx, gate, gate_stride, up, up_stride, num_rows, width,
                           out, false, out_stride);
}

Status geglu_tanh(const CudaContext& ctx, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  int64_t num_rows, int64_t width, bf16_t* out, int64_t out_stride) {
  return detail::run_gated("geglu_tanh", &launch::geglu_tanh, ctx, gate, gate_stride, up, up_stride, num_rows, width,
                           out, true, out_stride);
}

}  // namespace llaisys::cuda
