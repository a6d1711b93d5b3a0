#pragma once
// DraftProposer: guesses the tokens a sequence will generate next, for speculative decoding. The
// engine verifies the guesses in one forward pass (one output row per draft position) and keeps the
// longest prefix the model agrees with plus the model's own next token, so a proposer only changes
// speed, never output: a wrong guess costs a wasted row, nothing else.
//
// Proposers here need no model; the draft-model proposer (engine/draft_model_proposer.hpp) runs a
// second model with its own KV and says which distribution each draft came from.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys {

// How a sequence's drafts are drawn when the proposer samples them (a draft model does): the
// request's own temperature, min_p, top_k and top_p, and its choice's seed (the draft model's draws
// are speculative_seed(seed, SpeculativeStream::draft) at the position of the token drawn).
struct DraftSampling {
  float temperature = 0.0f;  // <= 0: the proposer's most likely token
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  uint64_t seed = 0;
  bool greedy() const { return temperature <= 0.0f; }
};

// One sequence asking for drafts in this step.
struct DraftRequest {
  SeqId seq = -1;
  std::span<const TokenId> tokens;  // prompt + output so far; the last one not yet run by the target
  int32_t num_prompt_tokens = 0;
  int32_t max_drafts = 0;           // >= 1
  DraftSampling sampling;
};

// A proposer's answer for one sequence.
struct Draft {
  std::vector<TokenId> tokens;  // at most max_drafts; none: the sequence decodes one token as usual
  // Empty: the tokens are guesses, checked against the target's own draw at each position (exact
  // for any sampling: the target draws as it would without speculation). Otherwise [tokens x
  // vocab]: row i is the distribution q token i was drawn from, checked by speculative sampling
  // (sampling/speculative.hpp).
  std::vector<float> probs;
};

class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // drafts[i] answers requests[i] (drafts.size() == requests.size(), each empty on entry). Called
  // on the engine thread once per step, with every sequence that speculates in it.
  virtual void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) = 0;
  // The sequence finished or was preempted: whatever the proposer keeps for it can go.
  virtual void release(SeqId /*seq*/) {}
  // Its name in statistics and metrics: "ngram", "draft", ...
  virtual std::string_view method() const = 0;
  // KV blocks of its own held for sequences (a draft model's pool); 0 for proposers without a model.
  virtual int32_t num_blocks_held() const { return 0; }
};

// A proposer that guesses from a sequence's tokens alone, one sequence at a time.
class TokenProposer : public DraftProposer {
 public:
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) final;
  // Appends at most max_drafts tokens guessed to follow `tokens` to `drafts` (empty on entry).
  virtual void propose_tokens(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
                              std::vector<TokenId>& drafts) = 0;
};

// Prompt lookup (llama.cpp's lookup decoding, vLLM's ngram proposer): finds the most recent earlier
// occurrence of the last n tokens (n = max_ngram down to min_ngram) and proposes the tokens that
// followed it. Pays off on repetitive text (code edits, quoting the prompt, summaries).
class NgramProposer final : public TokenProposer {
 public:
  explicit NgramProposer(int32_t min_ngram = 1, int32_t max_ngram = 3)
      : min_ngram_(min_ngram), max_ngram_(max_ngram) {}
  void propose_tokens(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
                      std::vector<TokenId>& drafts) override;
  std::string_view method() const override { return "ngram"; }

 private:
  int32_t min_ngram_;
  int32_t max_ngram_;
};

// For tests and benchmarks only: replays known token sequences (prompt + its greedy continuation).
// For a sequence whose tokens are a prefix of one of them it proposes what follows there: always
// right when the continuation is the model's greedy one. With `always_wrong` every proposed token is
// shifted by one (mod vocab_size), so no draft is ever accepted.
class ReplayProposer final : public TokenProposer {
 public:
  ReplayProposer(std::vector<std::vector<TokenId>> known, int32_t vocab_size, bool always_wrong = false)
      : known_(std::move(known)), vocab_size_(vocab_size), always_wrong_(always_wrong) {}
  void propose_tokens(std::span<const TokenId> tokens, int32_t num_prompt_tokens, int32_t max_drafts,
                      std::vector<TokenId>& drafts) override;
  std::string_view method() const override { return "replay"; }

 private:
  std::vector<std::vector<TokenId>> known_;
  int32_t vocab_size_;
  bool always_wrong_;
};

// The engine's built-in methods (EngineConfig::speculative); a draft model is given to the engine as
// its proposer (EngineConfig::proposer), the apps load it (`--speculative draft:DIR`).
enum class SpeculativeMethod : uint8_t { none, ngram };
Result<SpeculativeMethod> parse_speculative_method(std::string_view name);
std::string_view to_string(SpeculativeMethod method);

}  // namespace llaisys
