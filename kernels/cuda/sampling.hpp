#pragma once
// Sampling on the device: one token id per row of logits, so only ids come back to the host.
//
// Semantics follow LogitsSampler (sampling/sampler.hpp) for what runs here: greedy (temperature 0:
// the lowest id among the maximal logits, as argmax), else temperature -> min_p -> top_k -> top_p
// -> one draw. Penalties, logit_bias and allowed masks are applied to the rows beforehand, in place,
// by prepare_rows (sampling_prep.hpp), which keeps the sequences' token counts on the device.
//
// How: all rows get the argmax kernel (CUB block reduction). If any row samples, the rows are
// sorted (CUB segmented radix sort, descending and stable, so equal logits keep the lower id
// first) and a kernel per row walks the sorted prefix with CUB block scans in double: the min_p
// floor, the top_k cut, the smallest top_p prefix whose weight reaches top_p * total, then the first
// candidate whose cumulative weight exceeds uniform * total. The draw walks candidates in
// probability order (the CPU sampler walks top-k candidates in that order too, top-p-only ones in
// token order), so for the same uniform the chosen token is the same as the CPU's whenever
// top_k is set, and always one of the same candidate set otherwise.
// Known difference: candidates with equal scaled logits but different raw logits are ordered by
// the raw logit here (by id on the CPU); a row whose scaled maximum overflows to +inf keeps the
// raw argmax.

#include <cstddef>
#include <cstdint>
#include <span>

#include "context.hpp"
#include "device_memory.hpp"
#include "llaisys/core/status.hpp"
#include "sampling_row.hpp"

namespace llaisys::cuda {

// Scratch of sample_tokens, grown as needed (reuse one per stream).
struct SamplingWorkspace {
  DeviceBuffer<float> sorted_logits;
  DeviceBuffer<int32_t> ids;
  DeviceBuffer<int32_t> sorted_ids;
  DeviceBuffer<int32_t> offsets;  // [2 * rows]: begin offsets, then end offsets
  DeviceBuffer<std::byte> sort_temp;
  DeviceBuffer<RowSampling> params;
  PinnedBuffer<RowSampling> params_host;
  PinnedBuffer<int32_t> offsets_host;
};

// logits: [num_rows, vocab] f32 in device memory (row stride logits_stride); params: one per row
// (host); tokens: [num_rows] int32 in device memory. Enqueues only: copy tokens back (or feed them to
// the next step's embedding) on the same stream.
Status sample_tokens(const CudaContext& ctx, const float* logits, int64_t logits_stride, int64_t num_rows,
                     int64_t vocab, std::span<const RowSampling> params, SamplingWorkspace& workspace,
                     int32_t* tokens);

}  // namespace llaisys::cuda
