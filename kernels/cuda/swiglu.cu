#include "gated.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

struct Silu {
  __device__ static float apply(float g) { return __fdiv_rn(g, __fadd_rn(1.0f, expf(-g))); }
};

}  // namespace

cudaError_t launch::swiglu(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                           int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                           int64_t out_stride) {
  return detail::launch_gated<Silu>(stream, gate, gate_stride, up, up_stride, num_rows, width, out, out_bf16,
                                    out_stride);
}

}  // namespace llaisys::cuda
