#pragma once
// softcap: x = cap * tanh(x / cap) in place (Gemma 2's final_logit_softcapping over logits rows, and
// attn_logit_softcapping over attention scores), with a real division and the canonical tanh
// (simd.hpp): the same bits on every ISA, element by element.

#include <cstdint>

#include "context.hpp"

namespace llaisys::cpu {

// x: [num_rows, width] (row stride `stride`); cap > 0. Parallel over rows and, for long rows (a
// vocabulary), over chunks of columns.
void softcap(const CpuContext& ctx, float* x, int64_t stride, int64_t num_rows, int64_t width, float cap);

// One row of n elements on the calling thread (what paged_attention applies to its score rows).
void softcap_row(Isa isa, float* x, int64_t n, float cap);

}  // namespace llaisys::cpu
