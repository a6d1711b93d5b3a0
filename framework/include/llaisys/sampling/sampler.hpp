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
#include "llaisys/sampling/penalties.hpp"
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

// How the chain picks once penalties and bias are applied (the SamplingParams / SampleRow fields).
struct DrawParams {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off

  bool greedy() const { return temperature <= 0.0f; }
};
DrawParams draw_params(const SamplingParams& params);
PenaltyParams penalty_params(const SamplingParams& params);

// The full chain (vLLM's order): penalties and logit_bias (penalties.hpp), then pick(): the allowed
// mask, then greedy, or temperature -> min_p -> top_k -> top_p -> one draw from what is left. Ties
// are broken by the lower token id everywhere, and the draw walks candidates in an order fixed by
// the input (most likely first with top_k, token order without), so a given uniform always yields
// the same token. Linear in the vocabulary: top-k keeps a heap of k, top-p finds its cut by buckets
// of likelihood and a quickselect inside one; neither sorts the vocabulary. Keeps scratch buffers
// between calls: one per thread.
class LogitsSampler {
 public:
  // The whole chain for one sequence with its history, drawing one uniform01(rng) unless greedy.
  TokenId sample(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                 Rng& rng);

  // The chain after penalties and bias, the one implementation every sampler here runs.
  //  logits: [vocab] modified in place (masked, scaled by the temperature).
  //  uniform: in [0, 1), the draw (unused when greedy).
  //  allowed: empty (every token), or ceil(vocab / 32) words, token t allowed when bit t % 32 of
  //  word t / 32 is set (at least one). A disallowed token is never returned: when no allowed token
  //  is above -inf (all -inf or NaN), the answer is the lowest allowed id.
  TokenId pick(std::span<float> logits, const DrawParams& params, double uniform,
               std::span<const uint32_t> allowed = {});
  // The distribution pick() draws from, as probabilities per token ([vocab], 0 for every token it
  // never returns; one-hot when greedy): pick(u) for u uniform in [0, 1) returns v with chance
  // probs[v]. Same arguments and in-place changes to `logits` as pick().
  void distribution(std::span<float> logits, const DrawParams& params, std::vector<float>& probs,
                    std::span<const uint32_t> allowed = {});

 private:
  struct Candidate {
    float logit;    // scaled by the temperature
    TokenId token;
    double weight;  // exp(logit - max): unnormalised probability
  };
  struct Window;  // the scaled maximum and the min_p floor (logits_sampler.cpp)
  // Total order: more likely first, ties to the lower id.
  static bool more_likely(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
  }
  // Reorders `candidates` so that the smallest most-likely set whose weight reaches `target` comes
  // first (in no particular order); returns its size (at least 1).
  static std::size_t select_top_p(std::vector<Candidate>& candidates, double target);
  // The draw over scaled logits: with top_k (< vocab) among the k most likely, walked most likely
  // first; without, among every candidate, walked in token order.
  TokenId draw_top_k(std::span<const float> scaled, const Window& window, std::size_t k, float top_p,
                     double uniform);
  TokenId draw_all(std::span<const float> scaled, const Window& window, float top_p, double uniform);
  // What the draws keep. keep_top_k: the kept candidates in candidates_ (most likely first, weights
  // set), returns their total weight. keep_all: weights_ per token; every token at least as likely
  // as the returned cut is kept, with total weight kept_total.
  double keep_top_k(std::span<const float> scaled, const Window& window, std::size_t k, float top_p);
  Candidate keep_all(std::span<const float> scaled, const Window& window, float top_p, double& kept_total);

  std::vector<Candidate> candidates_;    // top_k's candidates, or top_p's boundary bucket
  std::vector<double> weights_;          // [vocab] per-token weights (draw_all)
  std::vector<double> bucket_weights_;   // top_p: weight per likelihood bucket
  SlotCounts counts_;                    // the history's counts, when penalties are on
};
static_assert(Sampler<LogitsSampler>);

// Applies the penalties and logit_bias of `params` to `logits` in place (penalties.hpp); `scratch`
// receives the history's counts when a penalty is on.
void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                     SlotCounts& scratch);

// argmax over the allowed tokens (all of them when `allowed` is empty), with LogitsSampler::pick's
// rule for rows where no allowed token is above -inf. Sets disallowed logits to -inf.
TokenId masked_argmax(std::span<float> logits, std::span<const uint32_t> allowed);

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

// The pieces of compute_logprobs, for callers that keep their own buffers: logprob(t) is
// raw_logit(t) - log_normalizer(raw), rounded to float.
double log_normalizer(std::span<const float> raw_logits);
inline float logprob_of(float raw_logit, double log_normalizer) {
  return static_cast<float>(static_cast<double>(raw_logit) - log_normalizer);
}
// ids = the min(n, size) most likely tokens of a raw row, largest logit first, ties by lower id (NaN
// ranks with -inf). One pass over the row with a heap of n: O(size log n), no vocabulary-sized buffer.
void select_top_tokens(std::span<const float> raw_logits, std::size_t n, std::vector<TokenId>& ids);

// The `k` largest raw logits (the model's output row, before any processing), largest first, ties
// by lower id: what a debugging dump compares with another implementation's logits.
std::vector<std::pair<TokenId, float>> top_raw_logits(std::span<const float> raw_logits, int32_t k);

}  // namespace llaisys
