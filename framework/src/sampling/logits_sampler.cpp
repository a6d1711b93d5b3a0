#include <algorithm>
#include <cmath>
#include <limits>

#include "llaisys/sampling/sampler.hpp"

namespace llaisys {
namespace {

bool in_vocab(TokenId token, std::size_t vocab_size) {
  return token >= 0 && static_cast<std::size_t>(token) < vocab_size;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Rng make_rng(uint64_t seed, uint32_t choice) {
  if (choice == 0) return Rng(seed);
  return Rng(splitmix64(seed ^ splitmix64(choice)));
}

void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                     std::vector<TokenId>& scratch) {
  const std::size_t vocab = logits.size();
  if (params.repetition_penalty != 1.0f) {
    // CTRL / Hugging Face: every token seen (prompt or output) is made less likely.
    scratch.assign(history.prompt.begin(), history.prompt.end());
    scratch.insert(scratch.end(), history.output.begin(), history.output.end());
    std::sort(scratch.begin(), scratch.end());
    scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    for (TokenId token : scratch) {
      if (!in_vocab(token, vocab)) continue;
      float& l = logits[static_cast<std::size_t>(token)];
      l = l > 0.0f ? l / params.repetition_penalty : l * params.repetition_penalty;
    }
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    // OpenAI: logit -= presence * [count > 0] + frequency * count, over generated tokens.
    scratch.assign(history.output.begin(), history.output.end());
    std::sort(scratch.begin(), scratch.end());
    for (std::size_t i = 0; i < scratch.size();) {
      std::size_t j = i;
      while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
      if (in_vocab(scratch[i], vocab)) {
        logits[static_cast<std::size_t>(scratch[i])] -=
            params.presence_penalty + params.frequency_penalty * static_cast<float>(j - i);
      }
      i = j;
    }
  }
  for (const auto& [token, bias] : params.logit_bias) {
    if (in_vocab(token, vocab)) logits[static_cast<std::size_t>(token)] += bias;
  }
}

TokenId LogitsSampler::sample(std::span<float> logits, const TokenHistory& history,
                              const SamplingParams& params, Rng& rng) {
  apply_penalties(logits, history, params, scratch_);
  if (params.greedy() || logits.empty()) return argmax(logits);
  // The answer when scaling overflows (a temperature so small that 1 / t is huge or infinite turns
  // positive logits into +inf ties, negative ones into -inf and 0 into NaN): taken before scaling.
  const TokenId raw_best = argmax(logits);

  // Scale by the temperature; NaNs and -inf never become candidates.
  const float inv_temperature = 1.0f / params.temperature;
  float max_scaled = -std::numeric_limits<float>::infinity();
  for (float& l : logits) {
    l *= inv_temperature;
    if (l > max_scaled) max_scaled = l;
  }
  if (!std::isfinite(max_scaled)) return raw_best;
  // min_p: keep tokens with p >= min_p * p_max, i.e. scaled logit >= max + log(min_p).
  const float floor = params.min_p > 0.0f ? max_scaled + std::log(params.min_p)
                                          : -std::numeric_limits<float>::infinity();
  candidates_.clear();
  for (std::size_t v = 0; v < logits.size(); ++v) {
    if (logits[v] >= floor && logits[v] > -std::numeric_limits<float>::infinity()) {
      candidates_.push_back({.logit = logits[v],
                             .token = static_cast<TokenId>(v),
                             .weight = std::exp(static_cast<double>(logits[v] - max_scaled))});
    }
  }
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < candidates_.size()) {
    const auto k = static_cast<std::ptrdiff_t>(params.top_k);
    std::nth_element(candidates_.begin(), candidates_.begin() + k - 1, candidates_.end(), more_likely);
    candidates_.resize(static_cast<std::size_t>(k));
    std::sort(candidates_.begin(), candidates_.end(), more_likely);
  }
  if (params.top_p < 1.0f) {
    double total = 0.0;
    for (const Candidate& c : candidates_) total += c.weight;
    candidates_.resize(select_top_p(candidates_, static_cast<double>(params.top_p) * total));
  }
  double total = 0.0;
  for (const Candidate& c : candidates_) total += c.weight;
  double threshold = uniform01(rng) * total;
  for (const Candidate& c : candidates_) {
    threshold -= c.weight;
    if (threshold < 0.0) return c.token;
  }
  return candidates_.back().token;  // rounding left a sliver: the last candidate owns it
}

bool LogitsSampler::more_likely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

std::size_t LogitsSampler::select_top_p(std::vector<Candidate>& candidates, double target) {
  // Quickselect on cumulative weight: expected linear time, where sorting a 150k vocabulary per
  // token would dominate the step. Invariant: candidates[0, lo) are all more likely than
  // candidates[lo, hi), and their weight `before` is still short of the target.
  std::size_t lo = 0;
  std::size_t hi = candidates.size();
  double before = 0.0;
  while (lo < hi) {
    const Candidate& a = candidates[lo];
    const Candidate& b = candidates[lo + (hi - lo) / 2];
    const Candidate& c = candidates[hi - 1];
    const Candidate pivot = more_likely(a, b) ? (more_likely(b, c) ? b : (more_likely(a, c) ? c : a))
                                              : (more_likely(a, c) ? a : (more_likely(b, c) ? c : b));
    const auto first = candidates.begin() + static_cast<std::ptrdiff_t>(lo);
    const auto last = candidates.begin() + static_cast<std::ptrdiff_t>(hi);
    const auto split = std::partition(first, last, [&](const Candidate& x) { return more_likely(x, pivot); });
    double upper = 0.0;
    for (auto it = first; it != split; ++it) upper += it->weight;
    const auto s = static_cast<std::size_t>(split - candidates.begin());
    if (before + upper >= target) {  // the cut lies among the more likely ones
      hi = s;
      continue;
    }
    // The pivot is the most likely of the rest: put it next.
    std::iter_swap(split, std::find_if(split, last, [&](const Candidate& x) { return x.token == pivot.token; }));
    before += upper + candidates[s].weight;
    if (before >= target) return s + 1;
    lo = s + 1;
  }
  return std::max<std::size_t>(lo, 1);
}

std::vector<std::pair<TokenId, float>> top_raw_logits(std::span<const float> raw_logits, int32_t k) {
  const auto n = static_cast<std::size_t>(std::clamp<int32_t>(k, 0, static_cast<int32_t>(raw_logits.size())));
  std::vector<TokenId> ids(raw_logits.size());
  for (std::size_t v = 0; v < ids.size(); ++v) ids[v] = static_cast<TokenId>(v);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](TokenId a, TokenId b) {
    const float la = raw_logits[static_cast<std::size_t>(a)], lb = raw_logits[static_cast<std::size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  std::vector<std::pair<TokenId, float>> top;
  top.reserve(n);
  for (std::size_t i = 0; i < n; ++i) top.emplace_back(ids[i], raw_logits[static_cast<std::size_t>(ids[i])]);
  return top;
}

TokenLogprob compute_logprobs(std::span<const float> raw_logits, TokenId chosen, int32_t num_top) {
  TokenLogprob result{.token = chosen};
  if (raw_logits.empty()) return result;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float l : raw_logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  for (float l : raw_logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_normalizer = static_cast<double>(max_logit) + std::log(sum);
  auto logprob = [&](TokenId t) {
    return static_cast<float>(static_cast<double>(raw_logits[static_cast<std::size_t>(t)]) - log_normalizer);
  };
  if (in_vocab(chosen, raw_logits.size())) result.logprob = logprob(chosen);
  const auto n = static_cast<std::size_t>(std::clamp<int32_t>(num_top, 0, static_cast<int32_t>(raw_logits.size())));
  if (n > 0) {
    std::vector<TokenId> ids(raw_logits.size());
    for (std::size_t v = 0; v < ids.size(); ++v) ids[v] = static_cast<TokenId>(v);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](TokenId a, TokenId b) {
      const float la = raw_logits[static_cast<std::size_t>(a)], lb = raw_logits[static_cast<std::size_t>(b)];
      return la > lb || (la == lb && a < b);
    });
    for (std::size_t i = 0; i < n; ++i) result.top.emplace_back(ids[i], logprob(ids[i]));
  }
  return result;
}

}  // namespace llaisys
