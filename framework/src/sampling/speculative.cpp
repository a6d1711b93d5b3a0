#include "llaisys/sampling/speculative.hpp"

#include <algorithm>
#include <vector>

#include "llaisys/sampling/philox.hpp"

namespace llaisys {

uint64_t speculative_seed(uint64_t seed, SpeculativeStream stream) {
  return splitmix64(seed ^ splitmix64(0x5bec0000ull + static_cast<uint64_t>(stream)));
}

TokenId draw_from(std::span<const float> probs, double uniform) {
  double total = 0.0;
  for (float p : probs) total += static_cast<double>(std::max(p, 0.0f));
  double threshold = uniform * total;
  TokenId last = -1;
  for (std::size_t v = 0; v < probs.size(); ++v) {
    if (!(probs[v] > 0.0f)) continue;
    last = static_cast<TokenId>(v);
    threshold -= static_cast<double>(probs[v]);
    if (threshold < 0.0) return last;
  }
  return last;
}

DraftVerdict verify_draft(std::span<const float> p, std::span<const float> q, TokenId draft, double u_accept,
                          double u_residual) {
  const auto x = static_cast<std::size_t>(draft);
  const double px = x < p.size() ? static_cast<double>(p[x]) : 0.0;
  const double qx = x < q.size() ? static_cast<double>(q[x]) : 0.0;
  // Accept when u < p(x) / q(x), written without the division (q(x) = 0 cannot come from a draw
  // from q; such a draft is accepted only where the target is sure of it).
  if (u_accept * qx < px) return {.token = draft, .accepted = true};
  // Rejected, so p(x) < q(x): the residual is 0 at x and the draw never returns the draft.
  std::vector<float> residual(p.size());
  for (std::size_t v = 0; v < p.size(); ++v) residual[v] = std::max(p[v] - (v < q.size() ? q[v] : 0.0f), 0.0f);
  if (x < residual.size()) residual[x] = 0.0f;
  TokenId token = draw_from(residual, u_residual);
  if (token < 0) token = draw_from(p, u_residual);  // p == q up to rounding: p itself
  return {.token = token, .accepted = false};
}

}  // namespace llaisys
