#pragma once
// The Sampler concept: picks the next token of one sequence from its row of logits.
//
// Contract:
//  - `logits` ([vocab_size]) is that sequence's row; the sampler may modify it in place (penalties,
//    bias, temperature, masks).
//  - `history` is the sequence's tokens so far (prompt + generated), for penalties.
//  - Randomness comes only from `rng`, which belongs to the sequence: a seeded sequence gives the
//    same tokens whatever else is in the batch.
//  - Greedy (temperature 0) picks the lowest id among the maximal logits.

#include <concepts>
#include <span>

#include "llaisys/model/types.hpp"
#include "llaisys/sampling/sampling_params.hpp"

namespace llaisys {

template <class S>
concept Sampler = requires(S& sampler, std::span<float> logits, std::span<const TokenId> history,
                           const SamplingParams& params, Rng& rng) {
  { sampler.sample(logits, history, params, rng) } -> std::same_as<TokenId>;
};

// Index of the largest value (lowest index on ties); -1 for an empty row.
TokenId argmax(std::span<const float> logits);

// The simplest Sampler: always greedy.
struct GreedySampler {
  TokenId sample(std::span<float> logits, std::span<const TokenId> /*history*/,
                 const SamplingParams& /*params*/, Rng& /*rng*/) const {
    return argmax(logits);
  }
};
static_assert(Sampler<GreedySampler>);

}  // namespace llaisys
