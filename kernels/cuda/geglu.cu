#include "gated.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// PyTorch's tanh GELU in the order of cpu::geglu_tanh, each step rounded (no contraction).
struct GeluTanh {
  __device__ static float apply(float g) {
    const float cube = __fmul_rn(__fmul_rn(g, g), g);
    const float inner = __fmul_rn(kSqrt2OverPi, __fadd_rn(g, __fmul_rn(kCubic, cube)));
    return __fmul_rn(__fmul_rn(0.5f, g), __fadd_rn(1.0f, tanhf(inner)));
  }
};

}  // namespace

cudaError_t launch::geglu_tanh(cudaStream_t stream, const float* gate, int64_t gate_stride, const float* up,
                               int64_t up_stride, int64_t num_rows, int64_t width, void* out, bool out_bf16,
                               int64_t out_stride) {
  return detail::launch_gated<GeluTanh>(stream, gate, gate_stride, up, up_stride, num_rows, width, out, out_bf16,
                                        out_stride);
}

}  // namespace llaisys::cuda
