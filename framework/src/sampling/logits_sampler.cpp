#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/sampler.hpp"

namespace llaisys {
namespace {

bool in_vocab(TokenId token, std::size_t vocab_size) {
  return token >= 0 && static_cast<std::size_t>(token) < vocab_size;
}

// The largest non-NaN value (-inf when none), in independent lanes the compiler vectorises.
float max_ignoring_nan(std::span<const float> values) {
  constexpr std::size_t kLanes = 16;
  std::array<float, kLanes> lane;
  lane.fill(-std::numeric_limits<float>::infinity());
  std::size_t i = 0;
  for (; i + kLanes <= values.size(); i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] = values[i + l] > lane[l] ? values[i + l] : lane[l];
  }
  for (; i < values.size(); ++i) lane[0] = values[i] > lane[0] ? values[i] : lane[0];
  float best = lane[0];
  for (float v : lane) best = v > best ? v : best;
  return best;
}


// top_p's buckets of likelihood: kBucketsPerNat per unit of scaled logit below the maximum, the
// last one open-ended (it holds weights below e^-63, never where a nucleus ends).
constexpr std::size_t kNumBuckets = 1024;
constexpr float kBucketsPerNat = 16.0f;

}  // namespace

// Which tokens are candidates (finite enough, above the min_p floor) and their weights.
struct LogitsSampler::Window {
  float max;    // the largest scaled logit (finite)
  float floor;  // max + log(min_p), or -inf

  bool admits(float l) const { return l >= floor && l > -std::numeric_limits<float>::infinity(); }
  double weight(float l) const { return std::exp(static_cast<double>(l - max)); }
  // Monotone: a more likely token never lands in a later bucket.
  std::size_t bucket(float l) const {
    const float depth = (max - l) * kBucketsPerNat;
    return depth < static_cast<float>(kNumBuckets - 1) ? static_cast<std::size_t>(depth) : kNumBuckets - 1;
  }
};

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Rng make_rng(uint64_t seed, uint32_t choice) { return Rng(choice_seed(seed, choice)); }

DrawParams draw_params(const SamplingParams& params) {
  return {.temperature = params.temperature, .top_k = params.top_k, .top_p = params.top_p, .min_p = params.min_p};
}

PenaltyParams penalty_params(const SamplingParams& params) {
  return {.repetition = params.repetition_penalty,
          .presence = params.presence_penalty,
          .frequency = params.frequency_penalty};
}

void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                     SlotCounts& scratch) {
  const PenaltyParams penalties = penalty_params(params);
  if (penalties.any()) {
    scratch.reset(history.prompt, history.output);
    apply_penalties(logits, scratch, penalties);
  }
  apply_logit_bias(logits, params.logit_bias);
}

TokenId masked_argmax(std::span<float> logits, std::span<const uint32_t> allowed) {
  if (allowed.empty()) return argmax(logits);
  const std::size_t vocab = logits.size();
  const std::size_t num_words = std::min(allowed.size(), (vocab + 31) / 32);
  TokenId first_allowed = -1;
  for (std::size_t w = 0; w < num_words; ++w) {
    const std::size_t base = w * 32;
    const std::size_t end = std::min(vocab, base + 32);
    const uint32_t bits = allowed[w] & (end - base == 32 ? ~0u : (1u << (end - base)) - 1u);
    if (first_allowed < 0 && bits != 0u) {
      first_allowed = static_cast<TokenId>(base + static_cast<std::size_t>(std::countr_zero(bits)));
    }
    if (bits == 0u) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(base), logits.begin() + static_cast<std::ptrdiff_t>(end),
                -std::numeric_limits<float>::infinity());
      continue;
    }
    for (uint32_t clear = ~bits; clear != 0u; clear &= clear - 1) {
      const std::size_t v = base + static_cast<std::size_t>(std::countr_zero(clear));
      if (v >= end) break;
      logits[v] = -std::numeric_limits<float>::infinity();
    }
  }
  // Tokens past the mask's words count as disallowed.
  std::fill(logits.begin() + static_cast<std::ptrdiff_t>(std::min(vocab, num_words * 32)), logits.end(),
            -std::numeric_limits<float>::infinity());
  // Disallowed logits are now -inf, so argmax lands on a disallowed token only when no allowed one
  // is above -inf (NaN at index 0 would win, but a disallowed index 0 holds -inf).
  const TokenId best = argmax(logits);
  const auto b = static_cast<std::size_t>(best);
  const bool best_allowed = b / 32 < num_words && ((allowed[b / 32] >> (b % 32)) & 1u) != 0u;
  return best_allowed || first_allowed < 0 ? best : first_allowed;
}

TokenId LogitsSampler::sample(std::span<float> logits, const TokenHistory& history, const SamplingParams& params,
                              Rng& rng) {
  apply_penalties(logits, history, params, counts_);
  const double uniform = params.greedy() || logits.empty() ? 0.0 : uniform01(rng);
  return pick(logits, draw_params(params), uniform);
}

TokenId LogitsSampler::pick(std::span<float> logits, const DrawParams& params, double uniform,
                            std::span<const uint32_t> allowed) {
  // The answer of greedy, and when scaling overflows (a temperature so small that 1 / t is huge or
  // infinite turns positive logits into +inf ties, negative ones into -inf and 0 into NaN): taken
  // before scaling.
  const TokenId raw_best = masked_argmax(logits, allowed);
  if (params.greedy() || logits.empty()) return raw_best;

  // Scale by the temperature; NaNs and -inf (disallowed tokens among them) never become candidates.
  const float inv_temperature = 1.0f / params.temperature;
  for (float& l : logits) l *= inv_temperature;
  const float max_scaled = max_ignoring_nan(logits);
  if (!std::isfinite(max_scaled)) return raw_best;
  // min_p: keep tokens with p >= min_p * p_max, i.e. scaled logit >= max + log(min_p).
  const Window window{.max = max_scaled,
                      .floor = params.min_p > 0.0f ? max_scaled + std::log(params.min_p)
                                                   : -std::numeric_limits<float>::infinity()};
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < logits.size()) {
    return draw_top_k(logits, window, static_cast<std::size_t>(params.top_k), params.top_p, uniform);
  }
  return draw_all(logits, window, params.top_p, uniform);
}

double LogitsSampler::keep_top_k(std::span<const float> scaled, const Window& window, std::size_t k, float top_p) {
  // The k most likely candidates in one pass: a heap with the least likely of them on top. Tokens
  // come in increasing id, so a later one beats the top only with a strictly greater logit.
  auto order = [](const Candidate& a, const Candidate& b) { return more_likely(a, b); };
  candidates_.clear();
  for (std::size_t v = 0; v < scaled.size(); ++v) {
    const float l = scaled[v];
    if (!window.admits(l)) continue;
    if (candidates_.size() < k) {
      candidates_.push_back({.logit = l, .token = static_cast<TokenId>(v), .weight = 0.0});
      if (candidates_.size() == k) std::make_heap(candidates_.begin(), candidates_.end(), order);
    } else if (l > candidates_.front().logit) {
      std::pop_heap(candidates_.begin(), candidates_.end(), order);
      candidates_.back() = {.logit = l, .token = static_cast<TokenId>(v), .weight = 0.0};
      std::push_heap(candidates_.begin(), candidates_.end(), order);
    }
  }
  // Most likely first: the weights (one exp each, for the k left) are summed and walked in this order.
  std::sort(candidates_.begin(), candidates_.end(), order);
  double total = 0.0;
  for (Candidate& c : candidates_) {
    c.weight = window.weight(c.logit);
    total += c.weight;
  }
  if (top_p < 1.0f) {  // the smallest most-likely prefix whose weight reaches top_p of the total
    const double target = static_cast<double>(top_p) * total;
    double prefix = 0.0;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      prefix += candidates_[i].weight;
      if (prefix >= target) {
        candidates_.resize(i + 1);
        break;
      }
    }
    total = prefix;
  }
  return total;
}

void LogitsSampler::distribution(std::span<float> logits, const DrawParams& params, std::vector<float>& probs,
                                 std::span<const uint32_t> allowed) {
  probs.assign(logits.size(), 0.0f);
  if (logits.empty()) return;
  const TokenId raw_best = masked_argmax(logits, allowed);
  const auto one_hot = [&] { probs[static_cast<std::size_t>(raw_best)] = 1.0f; };
  if (params.greedy()) return one_hot();
  // pick()'s steps, with its kept set and weights: the chance of a token is its share of the walk.
  const float inv_temperature = 1.0f / params.temperature;
  for (float& l : logits) l *= inv_temperature;
  const float max_scaled = max_ignoring_nan(logits);
  if (!std::isfinite(max_scaled)) return one_hot();
  const Window window{.max = max_scaled,
                      .floor = params.min_p > 0.0f ? max_scaled + std::log(params.min_p)
                                                   : -std::numeric_limits<float>::infinity()};
  if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < logits.size()) {
    const double total = keep_top_k(logits, window, static_cast<std::size_t>(params.top_k), params.top_p);
    for (const Candidate& c : candidates_) probs[static_cast<std::size_t>(c.token)] = static_cast<float>(c.weight / total);
    return;
  }
  double total = 0.0;
  const Candidate cut = keep_all(logits, window, params.top_p, total);
  for (std::size_t v = 0; v < logits.size(); ++v) {
    const float l = logits[v];
    const bool keep = l > cut.logit || (l == cut.logit && static_cast<TokenId>(v) <= cut.token);
    if (keep) probs[v] = static_cast<float>(weights_[v] / total);
  }
}

TokenId LogitsSampler::draw_top_k(std::span<const float> scaled, const Window& window, std::size_t k, float top_p,
                                  double uniform) {
  const double total = keep_top_k(scaled, window, k, top_p);
  double threshold = uniform * total;
  for (const Candidate& c : candidates_) {
    threshold -= c.weight;
    if (threshold < 0.0) return c.token;
  }
  return candidates_.back().token;  // rounding left a sliver: the last candidate owns it
}

LogitsSampler::Candidate LogitsSampler::keep_all(std::span<const float> scaled, const Window& window, float top_p,
                                                 double& kept_total) {
  // Every candidate's weight, in token order (the one exp per token this path cannot avoid).
  const bool nucleus = top_p < 1.0f;
  weights_.resize(scaled.size());
  if (nucleus) bucket_weights_.assign(kNumBuckets, 0.0);
  double total = 0.0;
  for (std::size_t v = 0; v < scaled.size(); ++v) {
    const float l = scaled[v];
    double w = 0.0;
    if (window.admits(l)) {
      w = window.weight(l);
      total += w;
      if (nucleus) bucket_weights_[window.bucket(l)] += w;
    }
    weights_[v] = w;
  }
  // What is kept: every token at least as likely as `cut` (a logit and an id, in more_likely's
  // order). Without top_p that is every candidate: logit >= the min_p floor, or > -inf.
  const bool has_floor = window.floor > -std::numeric_limits<float>::infinity();
  Candidate cut{.logit = window.floor, .token = has_floor ? std::numeric_limits<TokenId>::max() : -1, .weight = 0.0};
  if (nucleus) {
    // top_p without sorting: the buckets (monotone in likelihood) give the bucket where the nucleus
    // ends, a quickselect inside it the least likely token kept. When rounding leaves no bucket
    // reaching the target, everything is kept.
    const double target = static_cast<double>(top_p) * total;
    double before = 0.0;
    std::size_t b = 0;
    while (b < kNumBuckets && before + bucket_weights_[b] < target) before += bucket_weights_[b++];
    if (b < kNumBuckets) {
      candidates_.clear();
      for (std::size_t v = 0; v < scaled.size(); ++v) {
        const float l = scaled[v];
        if (window.admits(l) && window.bucket(l) == b) {
          candidates_.push_back({.logit = l, .token = static_cast<TokenId>(v), .weight = weights_[v]});
        }
      }
      const auto kept = static_cast<std::ptrdiff_t>(select_top_p(candidates_, target - before));
      cut = *std::max_element(candidates_.begin(), candidates_.begin() + kept,
                              [](const Candidate& x, const Candidate& y) { return more_likely(x, y); });
      // The kept weight: the buckets before, then the kept part of this one. Summed in another
      // order than the walk below adds, so the walk may end a rounding sliver short (see there).
      total = before;
      for (auto it = candidates_.begin(); it != candidates_.begin() + kept; ++it) total += it->weight;
    }
  }
  kept_total = total;
  return cut;
}

TokenId LogitsSampler::draw_all(std::span<const float> scaled, const Window& window, float top_p, double uniform) {
  double total = 0.0;
  const Candidate cut = keep_all(scaled, window, top_p, total);
  // The draw walks the kept tokens in token order. Branch-free: whether a token is kept is as
  // unpredictable as the data.
  double threshold = uniform * total;
  TokenId last = -1;
  for (std::size_t v = 0; v < scaled.size(); ++v) {
    const float l = scaled[v];
    const auto token = static_cast<TokenId>(v);
    const bool keep = (l > cut.logit) | ((l == cut.logit) & (token <= cut.token));
    threshold -= keep ? weights_[v] : 0.0;
    last = keep ? token : last;
    if (threshold < 0.0) return last;
  }
  return last;  // rounding left a sliver: the last kept token owns it
}

std::size_t LogitsSampler::select_top_p(std::vector<Candidate>& candidates, double target) {
  // Quickselect on cumulative weight: expected linear time. Invariant: candidates[0, lo) are all
  // more likely than candidates[lo, hi), and their weight `before` is still short of the target.
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

double log_normalizer(std::span<const float> raw_logits) {
  const float max_logit = max_ignoring_nan(raw_logits);
  double sum = 0.0;
  for (float l : raw_logits) sum += std::exp(static_cast<double>(l - max_logit));
  return static_cast<double>(max_logit) + std::log(sum);
}

void select_top_tokens(std::span<const float> raw_logits, std::size_t n, std::vector<TokenId>& ids) {
  n = std::min(n, raw_logits.size());
  ids.clear();
  if (n == 0) return;
  // NaN ranks with -inf, so the order is total (ties by id) and the answer unique.
  auto rank = [&](TokenId t) {
    const float l = raw_logits[static_cast<std::size_t>(t)];
    return std::isnan(l) ? -std::numeric_limits<float>::infinity() : l;
  };
  auto more_likely = [&](TokenId a, TokenId b) {
    const float ra = rank(a), rb = rank(b);
    return ra > rb || (ra == rb && a < b);
  };
  // A heap of the n most likely so far with the least likely of them on top. Later ids lose ties,
  // so a token replaces the top only when its logit is strictly greater.
  for (std::size_t v = 0; v < n; ++v) ids.push_back(static_cast<TokenId>(v));
  std::make_heap(ids.begin(), ids.end(), more_likely);
  float bar = rank(ids.front());
  for (std::size_t v = n; v < raw_logits.size(); ++v) {
    const float l = raw_logits[v];
    if (!(l > bar)) continue;
    std::pop_heap(ids.begin(), ids.end(), more_likely);
    ids.back() = static_cast<TokenId>(v);
    std::push_heap(ids.begin(), ids.end(), more_likely);
    bar = rank(ids.front());
  }
  std::sort_heap(ids.begin(), ids.end(), more_likely);
}

std::vector<std::pair<TokenId, float>> top_raw_logits(std::span<const float> raw_logits, int32_t k) {
  std::vector<TokenId> ids;
  select_top_tokens(raw_logits, static_cast<std::size_t>(std::max(k, 0)), ids);
  std::vector<std::pair<TokenId, float>> top;
  top.reserve(ids.size());
  for (TokenId t : ids) top.emplace_back(t, raw_logits[static_cast<std::size_t>(t)]);
  return top;
}

TokenLogprob compute_logprobs(std::span<const float> raw_logits, TokenId chosen, int32_t num_top) {
  TokenLogprob result{.token = chosen};
  if (raw_logits.empty()) return result;
  const double normalizer = log_normalizer(raw_logits);
  if (in_vocab(chosen, raw_logits.size())) {
    result.logprob = logprob_of(raw_logits[static_cast<std::size_t>(chosen)], normalizer);
  }
  std::vector<TokenId> ids;
  select_top_tokens(raw_logits, static_cast<std::size_t>(std::max(num_top, 0)), ids);
  result.top.reserve(ids.size());
  for (TokenId t : ids) result.top.emplace_back(t, logprob_of(raw_logits[static_cast<std::size_t>(t)], normalizer));
  return result;
}

}  // namespace llaisys
