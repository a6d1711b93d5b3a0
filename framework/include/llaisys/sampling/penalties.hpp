#pragma once
// Penalties and logit_bias: the first steps of the sampling chain (vLLM's order), the one
// implementation behind LogitsSampler (a history per call) and StepSampler (counts kept across steps).
//
// Order and arithmetic: the repetition penalty once per distinct token seen (prompt or output): a
// positive logit is divided by it, a negative one multiplied (CTRL / Hugging Face); then, once per
// distinct output token, logit -= presence + frequency * count (OpenAI); then logit_bias is added.
// Tokens outside the row are ignored.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "llaisys/model/types.hpp"

namespace llaisys {

struct PenaltyParams {
  float repetition = 1.0f;  // 1: off (prompt and output tokens)
  float presence = 0.0f;    // 0: off (output tokens)
  float frequency = 0.0f;   // 0: off (output tokens, per occurrence)

  bool any() const { return repetition != 1.0f || presence != 0.0f || frequency != 0.0f; }
};

// One sequence's tokens as the penalties read them. reset() sorts the history once; add_output() is
// O(distinct tokens) and allocates only when the vectors outgrow their capacity.
struct SlotCounts {
  std::vector<TokenId> seen;                        // distinct prompt and output tokens, ascending
  std::vector<std::pair<TokenId, int32_t>> output;  // distinct output tokens with counts, ascending

  void reset(std::span<const TokenId> prompt, std::span<const TokenId> output_tokens);
  void add_output(TokenId token);
  void clear();
  bool operator==(const SlotCounts&) const = default;
};

// logits: [vocab] one row, modified in place.
void apply_penalties(std::span<float> logits, const SlotCounts& counts, const PenaltyParams& penalties);

// logits[ids[i]] += values[i] (-inf forbids the token); ids.size() == values.size().
void apply_logit_bias(std::span<float> logits, std::span<const TokenId> ids, std::span<const float> values);
void apply_logit_bias(std::span<float> logits, std::span<const std::pair<TokenId, float>> bias);

}  // namespace llaisys
