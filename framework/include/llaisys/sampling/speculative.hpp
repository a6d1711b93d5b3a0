#pragma once
// Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): a draft token x drawn from a draft
// model's distribution q is kept with probability min(1, p(x) / q(x)), p being the target model's
// distribution at that position; otherwise the token is drawn from the residual max(0, p - q),
// normalised. Whatever q is, the token that results is distributed exactly as p: speculation changes
// how fast tokens come, never which tokens are likely.
//
// Both p and q are the distributions the sampling chain draws from (LogitsSampler::distribution):
// after logit_bias, the allowed mask, temperature, min_p, top_k and top_p.

#include <cstdint>
#include <span>

#include "llaisys/model/types.hpp"

namespace llaisys {

// The (seed, counter) uniform streams speculation draws from, apart from the target's own draws
// (the choice's seed itself): the draft model's draws, the acceptance test, the residual draw. The
// counter is always the position of the token being decided, so a seeded request gives the same
// tokens every run.
enum class SpeculativeStream : uint64_t { draft = 1, accept = 2, residual = 3 };
uint64_t speculative_seed(uint64_t choice_seed, SpeculativeStream stream);

struct DraftVerdict {
  TokenId token = -1;     // the draft when accepted, else the residual draw (never the draft then)
  bool accepted = false;
};

// p, q: [vocab] probabilities; `draft` was drawn from q (q[draft] > 0). u_accept, u_residual in [0, 1).
DraftVerdict verify_draft(std::span<const float> p, std::span<const float> q, TokenId draft, double u_accept,
                          double u_residual);

// Inverse-CDF draw over `probs` (non-negative, summing to about 1) in token order; a rounding sliver
// at the end goes to the last token with a positive probability. -1 when none is positive.
TokenId draw_from(std::span<const float> probs, double uniform);

}  // namespace llaisys
