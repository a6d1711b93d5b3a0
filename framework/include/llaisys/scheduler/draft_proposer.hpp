#pragma once
// DraftProposer: guesses the tokens a sequence will generate next, for speculative decoding. The
// engine verifies the guesses in one forward pass (one output row per draft position) and keeps the
// longest prefix the model agrees with plus the model's own next token, so a proposer only changes
// speed, never output: a wrong guess costs a wasted row, nothing else.
//
// The interface is one call on the sequence's tokens so that a draft-model proposer (its own KV in
// the same engine) can implement it later; the proposers here need no model.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // Appends at most max_drafts tokens guessed to follow `tokens` (prompt + output so far, the last
  // token not yet run through the model) to `drafts` (empty on entry). Appending none is fine: the
  // sequence then decodes one token as without speculation. Called on the engine thread.
  virtual void propose(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
                       std::vector<TokenId>& drafts) = 0;
};

// Prompt lookup (llama.cpp's lookup decoding, vLLM's ngram proposer): finds the most recent earlier
// occurrence of the last n tokens (n = max_ngram down to min_ngram) and proposes the tokens that
// followed it. Pays off on repetitive text (code edits, quoting the prompt, summaries).
class NgramProposer final : public DraftProposer {
 public:
  explicit NgramProposer(int32_t min_ngram = 1, int32_t max_ngram = 3)
      : min_ngram_(min_ngram), max_ngram_(max_ngram) {}
  void propose(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
               std::vector<TokenId>& drafts) override;

 private:
  int32_t min_ngram_;
  int32_t max_ngram_;
};

// For tests and benchmarks only: replays known token sequences (prompt + its greedy continuation).
// For a sequence whose tokens are a prefix of one of them it proposes what follows there: always
// right when the continuation is the model's greedy one. With `always_wrong` every proposed token is
// shifted by one (mod vocab_size), so no draft is ever accepted.
class ReplayProposer final : public DraftProposer {
 public:
  ReplayProposer(std::vector<std::vector<TokenId>> known, int32_t vocab_size, bool always_wrong = false)
      : known_(std::move(known)), vocab_size_(vocab_size), always_wrong_(always_wrong) {}
  void propose(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
               std::vector<TokenId>& drafts) override;

 private:
  std::vector<std::vector<TokenId>> known_;
  int32_t vocab_size_;
  bool always_wrong_;
};

enum class SpeculativeMethod : uint8_t { none, ngram };
Result<SpeculativeMethod> parse_speculative_method(std::string_view name);
std::string_view to_string(SpeculativeMethod method);

}  // namespace llaisys
