#pragma once
// The per-sequence half of sampling on the device (plugin ABI v2, llaisys_sample_row): sequence
// slots holding the token counts penalties read, and the in-place preprocessing of a logits row
// before sample_tokens (sampling.hpp) picks its token. The CPU reference is StepSampler
// (sampling/step_sampler.hpp); ops::Sampler (ops/src/cuda_sampler.cpp) strings these together:
//
//   reset_slots -> prepare_rows -> sample_tokens -> finish_rows     (one stream, no host round trip)
//
// Slot layout (SlotArrays, sampling_row.hpp): per slot a dense int32 count of every token over the sequence's output,
// and a bitmask of the tokens in its prompt: vocab * 4 + ceil(vocab / 32) * 4 bytes a slot (~612 KB
// for a 152k vocabulary). A token counts as seen (repetition penalty) when its prompt bit is set or
// its output count is positive.
//
// Arithmetic is that of LogitsSampler, rounding for rounding (no fused multiply-adds): repetition
// penalty l > 0 ? l / r : l * r over seen tokens; then l - (presence + frequency * count) over
// output tokens; then the bias entries added in their order (a repeated id adds twice); disallowed
// tokens become -inf. The result is bit-identical to the CPU's penalised row.

#include <cstdint>

#include "context.hpp"
#include "llaisys/core/status.hpp"
#include "sampling_row.hpp"

namespace llaisys::cuda {

// Every pointer below is device memory, already filled on ctx.stream; the calls enqueue only. The
// arrays' contents are trusted (slots, tokens and bias ids in range, as validate_step checks): only
// counts and pointers are checked here.

// Rebuilds resets[0, num_resets) (distinct slots) from history: zeroes the slot, then sets the bits
// of its prompt tokens and counts its output tokens.
Status reset_slots(const CudaContext& ctx, const SlotArrays& slots, const SlotReset* resets, int64_t num_resets,
                   const int32_t* history);

// logits: [rows, vocab] f32 with row stride `stride`; applies preps[0, num_preps) (distinct rows) in
// place. bias_ids / bias_values: the bias entries the preps point into; masks: their allowed masks
// (mask_words(vocab) words each; may be null when no prep has one).
Status prepare_rows(const CudaContext& ctx, float* logits, int64_t stride, const SlotArrays& slots,
                    const RowPrep* preps, int64_t num_preps, const int32_t* bias_ids, const float* bias_values,
                    const uint32_t* masks);

// tokens: [num_rows] picked by sample_tokens. Row r: a token its mask disallows becomes the lowest
// allowed id (only possible when every allowed logit is -inf or NaN: the CPU sampler's answer too),
// then the token is added to its slot's output counts.
Status finish_rows(const CudaContext& ctx, const SlotArrays& slots, const RowFinish* finish, int64_t num_rows,
                   const uint32_t* masks, int32_t* tokens);

}  // namespace llaisys::cuda
