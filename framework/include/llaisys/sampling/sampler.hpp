#pragma once
// The Sampler concept: picks the next token of one sequence from its row of logits.
//
// Contract:
//  - `logits` ([vocab_size]) is that sequence's row; the sampler may modify it in place (penalties,
//    bias, temperature, masks).
//  - `history` is the sequence's tokens so far, split into prompt and output: the repetition penalty
//    looks at both, presence and frequency penalties at the output only.
//  - Randomness comes only from `rng`, which belongs to the sequence: a seeded sequence gives the
//    same tokens whatever else is in the batch.
//  - Greedy (temperature 0) picks the lowest id among the maximal logits (after penalties and bias).

#include <concepts>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "llaisys/model/types.hpp"
#include "llaisys/sampling/sampling_params.hpp"

namespace llaisys {

struct TokenHistory {
  TokenHistory() = default;
  TokenHistory(std::span<const TokenId> prompt_tokens, std::span<const TokenId> output_tokens)
      : prompt(prompt_tokens), output(output_tokens) {}
  // All tokens so far, without a prompt/output split (counted as prompt).
  template <class Tokens>
    requires std::convertible_to<const Tokens&, std::span<const TokenId>>
  TokenHistory(const Tokens& all_tokens) : prompt(all_tokens) {}  // NOLINT implicit

  std::span<const TokenId> prompt;
  std::span<const TokenId> output;
};

template <class S>
concept Sampler = requires(S& sampler, std::span<float> logits, const TokenHistory& history,
                           const SamplingParams& params, Rng& rng) {
  { sampler.sample(logits, history, params, rng) } -> std::same_as<TokenId>;
};

// Index of the largest value (lowest index on ties); -1 for an empty row.
TokenId argmax(std::span<const float> logits);

// The simplest Sampler: always greedy, ignores penalties.
struct GreedySampler {
  TokenId sample(std::span<float> logits, const TokenHistory& /*history*/,
                 const SamplingParams& /*params*/, Rng& /*rng*/) const {
    return argmax(logits);
  }
};
static_assert(Sampler<GreedySampler>);

// The full chain (vLLM's order): repetition, presence and frequency penalties; logit_bias; then
// greedy, or temperature -> min_p -> top_k -> top_p -> one draw from what is left. Ties are broken by
// the lower token id everywhere, and the draw walks candidates in an order fixed by the input, so a
// given rng state always yields the same token. Linear in the vocabulary (top-k and top-p select,
// they do not sort it). Keeps scratch buffers between calls: one per thread.
class LogitsSampler {
 public:
  TokenId sample(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                 Rng& rng);

 private:
  struct Candidate {
    float logit;    // scaled by the temperature
    TokenId token;
    double weight;  // exp(logit - max): unnormalised probability
  };
  // Total order: more likely first, ties to the lower id.
  static bool more_likely(const Candidate& a, const Candidate& b);
  // Reorders `candidates` so that the smallest most-likely set whose weight reaches `target` comes
  // first (in no particular order); returns its size (at least 1).
  static std::size_t select_top_p(std::vector<Candidate>& candidates, double target);
  std::vector<Candidate> candidates_;
  std::vector<TokenId> scratch_;
};
static_assert(Sampler<LogitsSampler>);

// Applies the penalties and logit_bias of `params` to `logits` in place.
void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                     std::vector<TokenId>& scratch);

// A uniform double in [0, 1) from 53 random bits (the same on every platform, unlike
// std::uniform_real_distribution).
double uniform01(Rng& rng);

// The generator for choice `choice` of a request seeded with `seed`: choice 0 of seed s is Rng(s);
// other choices get independent, reproducible streams.
Rng make_rng(uint64_t seed, uint32_t choice);

// Log-probabilities of the model's raw distribution (before penalties and temperature, as vLLM
// reports them by default).
struct TokenLogprob {
  TokenId token = -1;
  float logprob = 0.0f;
  std::vector<std::pair<TokenId, float>> top;  // the num_top most likely tokens, most likely first
};
TokenLogprob compute_logprobs(std::span<const float> raw_logits, TokenId chosen, int32_t num_top);

// The `k` largest raw logits (the model's output row, before any processing), largest first, ties
// by lower id: what a debugging dump compares with another implementation's logits.
std::vector<std::pair<TokenId, float>> top_raw_logits(std::span<const float> raw_logits, int32_t k);

}  // namespace llaisys
