#include "llaisys/scheduler/draft_proposer.hpp"

#include <algorithm>

namespace llaisys {

void TokenProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  for (std::size_t i = 0; i < requests.size() && i < drafts.size(); ++i) {
    propose_tokens(requests[i].tokens, requests[i].num_prompt_tokens, requests[i].max_drafts, drafts[i].tokens);
  }
}

void NgramProposer::propose_tokens(std::span<const TokenId> tokens, int32_t /*num_prompt_tokens*/, int32_t max_drafts,
                            std::vector<TokenId>& drafts) {
  const auto size = static_cast<int64_t>(tokens.size());
  if (max_drafts <= 0) return;
  for (int32_t n = max_ngram_; n >= std::max(min_ngram_, 1); --n) {
    if (size <= n) continue;
    const std::span<const TokenId> suffix = tokens.last(static_cast<std::size_t>(n));
    // The most recent earlier occurrence: its continuation is likeliest to be the current one. A
    // linear scan: prompts are at most a few thousand tokens and this runs once per decode step.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_drafts, size - from);
      drafts.insert(drafts.end(), tokens.begin() + from, tokens.begin() + from + count);
      return;
    }
  }
}

void ReplayProposer::propose_tokens(std::span<const TokenId> tokens, int32_t /*num_prompt_tokens*/, int32_t max_drafts,
                             std::vector<TokenId>& drafts) {
  for (const std::vector<TokenId>& known : known_) {
    if (known.size() <= tokens.size() || !std::equal(tokens.begin(), tokens.end(), known.begin())) continue;
    const std::size_t count = std::min(static_cast<std::size_t>(std::max(max_drafts, 0)), known.size() - tokens.size());
    for (std::size_t i = 0; i < count; ++i) {
      const TokenId token = known[tokens.size() + i];
      drafts.push_back(always_wrong_ ? (token + 1) % vocab_size_ : token);
    }
    return;
  }
}

Result<SpeculativeMethod> parse_speculative_method(std::string_view name) {
  if (name == "none" || name.empty()) return SpeculativeMethod::none;
  if (name == "ngram") return SpeculativeMethod::ngram;
  return make_error(ErrorCode::invalid_argument, "unknown speculative method '{}' (none, ngram)", name);
}

std::string_view to_string(SpeculativeMethod method) {
  return method == SpeculativeMethod::ngram ? "ngram" : "none";
}

}  // namespace llaisys
