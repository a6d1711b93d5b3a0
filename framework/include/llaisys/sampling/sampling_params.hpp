#pragma once
// Per-request sampling parameters (OpenAI / vLLM semantics).

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy
  int32_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off (CTRL-style, on prompt and output tokens)
  float presence_penalty = 0.0f;    // OpenAI, on output tokens
  float frequency_penalty = 0.0f;   // OpenAI, on output tokens
  std::optional<uint64_t> seed;     // unset: drawn from the engine's entropy
  std::vector<std::pair<TokenId, float>> logit_bias;
  int32_t num_logprobs = -1;        // -1: none; k >= 0: the chosen token's logprob + top k
  int32_t num_top_logits = 0;       // debugging: the k largest raw logits of every sampled step

  bool greedy() const { return temperature <= 0.0f; }
  // Range checks with OpenAI-like messages ("temperature must be in [0, 2], got 3").
  Status validate(int32_t vocab_size) const;
};

// Each sequence owns its generator, so seeded output never depends on the rest of the batch.
using Rng = std::mt19937_64;

}  // namespace llaisys
