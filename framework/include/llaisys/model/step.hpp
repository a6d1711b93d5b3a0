#pragma once
// One model step's sampling instructions and outputs: the C++ faces of llaisys_sample_row and
// llaisys_step_output (plugin_abi.h, where the full contract is). Views over caller-owned memory;
// conversions to and from the C structs copy no arrays.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/forward_batch.hpp"
#include "llaisys/model/plugin_abi.h"
#include "llaisys/model/types.hpp"

namespace llaisys {

// How to pick the token of one output row (order and semantics: llaisys_sample_row).
struct SampleRow {
  float temperature = 0.0f;         // <= 0: greedy
  int32_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off (prompt and output tokens)
  float presence_penalty = 0.0f;    // 0: off (output tokens)
  float frequency_penalty = 0.0f;   // 0: off (output tokens)
  uint64_t seed = 0;                // the draw's uniform is counter_uniform01(seed, counter)
  uint64_t counter = 0;
  int32_t seq_slot = -1;            // -1: no sequence state; else the slot the penalties read
  bool reset_slot = false;          // reset the slot to `history` first
  std::span<const TokenId> history; // prompt tokens, then output tokens (when reset_slot)
  int32_t num_history_prompt = 0;
  std::span<const TokenId> logit_bias_ids;
  std::span<const float> logit_bias_values;  // added; -inf forbids
  std::span<const uint32_t> allowed;         // empty: every token; else ceil(vocab / 32) words
  int32_t num_top_logprobs = -1;    // -1: none; n >= 0: chosen logprob + the n most likely
  int32_t logits_row = -1;          // -1, or the StepOutput::rows row that gets the raw logits

  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
  bool greedy() const { return temperature <= 0.0f; }
  bool is_allowed(TokenId token) const {
    return allowed.empty() || (allowed[static_cast<std::size_t>(token) / 32] >> (static_cast<uint32_t>(token) % 32) & 1u) != 0;
  }
};

// Where a step's time went (llaisys_step_timings).
struct StepTimings {
  uint64_t forward_ns = 0;
  uint64_t sample_ns = 0;
};
static_assert(sizeof(StepTimings) == sizeof(llaisys_step_timings));

// Where a step writes (see llaisys_step_output). Spans may be empty when unused.
struct StepOutput {
  std::span<int32_t> tokens;        // [num_outputs] with sampling rows
  std::span<float> logprobs;        // [num_outputs] rows with num_top_logprobs >= 0
  int32_t top_width = 0;
  std::span<int32_t> top_ids;       // [num_outputs x top_width]
  std::span<float> top_logprobs;    // [num_outputs x top_width]
  std::span<float> rows;            // raw rows: asked logits rows, or every row without sampling
  StepTimings* timings = nullptr;   // filled when not null
  // Not null: the rows' allowed masks are still being written (the host computes them while the
  // forward pass runs). The model calls it once, after its forward pass and before it reads any
  // mask word (a model does so when it says waits_for_masks(); step_pending_masks in the C ABI).
  const std::function<Status()>* wait_for_masks = nullptr;
};

// Words of an allowed-token bitmask over `vocab_size` tokens.
inline std::size_t allowed_mask_words(int32_t vocab_size) {
  return (static_cast<std::size_t>(vocab_size > 0 ? vocab_size : 0) + 31) / 32;
}

llaisys_sample_row to_c(const SampleRow& row);
// Fails on negative counts or NULL arrays with a positive count; does not check contents.
Result<SampleRow> sample_row_from_c(const llaisys_sample_row& row, int32_t vocab_size);
llaisys_step_output to_c(const StepOutput& out);
// Fails when counts are negative or arrays are missing; does not check contents.
Result<StepOutput> step_output_from_c(const llaisys_step_output& out, int32_t num_outputs, bool sampling);

struct ModelInfo;

// Everything a model relies on before it touches memory, besides validate_forward_batch: with
// sampling rows, one per output row, the batch's kind is logits, every parameter in range (the
// SamplingParams ranges), slots inside [0, kv_config.num_seq_slots) and none named twice, penalties
// only with a slot, history and bias ids inside the vocabulary, a mask of allowed_mask_words words
// with at least one allowed token, num_top_logprobs <= out.top_width, logits_row distinct and inside
// out.rows; the output spans as large as the rows need. Without sampling rows, out.rows holds every
// output row exactly.
// With out.wait_for_masks the masks' contents are not read (validate_masks, after the wait).
Status validate_step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out,
                     const ModelInfo& info, const KvCacheConfig& kv_config);
// Every row's mask (if any) allows at least one token of the vocabulary.
Status validate_masks(std::span<const SampleRow> sampling, const ModelInfo& info);

}  // namespace llaisys
