#pragma once
// The row loop the gated activations share (swiglu.cpp: silu, geglu.cpp: tanh GELU): each row by the
// ISA's row function, rows split over the threads when the region pays for a wake-up. Which thread
// computes a row never changes its bits. Internal to kernels/cpu.

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// out[0, n) = act(g[0, n)) * u[0, n); out may be g or u.
using GatedRowFn = void (*)(const float* g, const float* u, int64_t n, float* out);

struct GatedRowFns {
  GatedRowFn scalar;
  GatedRowFn avx2;
  GatedRowFn avx512;
};

// work_per_element: the activation's cost in the pool's units (about one operation each).
inline void gated_rows(const CpuContext& ctx, const GatedRowFns& fns, const float* gate, int64_t gate_stride,
                       const float* up, int64_t up_stride, int64_t num_rows, int64_t width, float* out,
                       int64_t out_stride, int64_t work_per_element) {
  const GatedRowFn row = ctx.isa == Isa::avx512 ? fns.avx512 : ctx.isa == Isa::avx2 ? fns.avx2 : fns.scalar;
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row(gate + r * gate_stride, up + r * up_stride, width, out + r * out_stride);
  };
  if (num_rows * width < 16384) {
    rows(0, num_rows);
  } else {
    ctx.pool->parallel_for(num_rows, 1, rows, work_per_element * width);
  }
}

}  // namespace llaisys::cpu
