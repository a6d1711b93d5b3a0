#include <algorithm>
#include <cassert>

#include "llaisys/sampling/penalties.hpp"

namespace llaisys {
namespace {

float* logit_of(std::span<float> logits, TokenId token) {
  return token >= 0 && static_cast<std::size_t>(token) < logits.size() ? &logits[static_cast<std::size_t>(token)]
                                                                       : nullptr;
}

}  // namespace

void SlotCounts::reset(std::span<const TokenId> prompt, std::span<const TokenId> output_tokens) {
  // Count the output tokens in sorted order, then merge in the prompt's distinct tokens.
  seen.assign(output_tokens.begin(), output_tokens.end());
  std::sort(seen.begin(), seen.end());
  output.clear();
  for (std::size_t i = 0; i < seen.size();) {
    std::size_t j = i;
    while (j < seen.size() && seen[j] == seen[i]) ++j;
    output.emplace_back(seen[i], static_cast<int32_t>(j - i));
    i = j;
  }
  seen.insert(seen.end(), prompt.begin(), prompt.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
}

void SlotCounts::add_output(TokenId token) {
  const auto s = std::lower_bound(seen.begin(), seen.end(), token);
  if (s == seen.end() || *s != token) seen.insert(s, token);
  const auto o = std::lower_bound(output.begin(), output.end(), token,
                                  [](const std::pair<TokenId, int32_t>& entry, TokenId t) { return entry.first < t; });
  if (o != output.end() && o->first == token) {
    ++o->second;
  } else {
    output.insert(o, {token, 1});
  }
}

void SlotCounts::clear() {
  seen.clear();
  output.clear();
}

void apply_penalties(std::span<float> logits, const SlotCounts& counts, const PenaltyParams& penalties) {
  if (penalties.repetition != 1.0f) {
    for (TokenId token : counts.seen) {
      if (float* l = logit_of(logits, token)) *l = *l > 0.0f ? *l / penalties.repetition : *l * penalties.repetition;
    }
  }
  if (penalties.presence != 0.0f || penalties.frequency != 0.0f) {
    for (const auto& [token, count] : counts.output) {
      if (float* l = logit_of(logits, token)) {
        *l -= penalties.presence + penalties.frequency * static_cast<float>(count);
      }
    }
  }
}

void apply_logit_bias(std::span<float> logits, std::span<const TokenId> ids, std::span<const float> values) {
  assert(ids.size() == values.size());
  for (std::size_t i = 0; i < ids.size() && i < values.size(); ++i) {
    if (float* l = logit_of(logits, ids[i])) *l += values[i];
  }
}

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<TokenId, float>> bias) {
  for (const auto& [token, value] : bias) {
    if (float* l = logit_of(logits, token)) *l += value;
  }
}

}  // namespace llaisys
