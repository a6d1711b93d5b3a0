#pragma once
// What consumers (the server, the chat, the offline app) hand the engine and get back from it.
//
// Requests are token ids plus parameters: text is encoded (and chat templates rendered) by the
// caller. Outputs are deltas: each RequestOutput carries only what is new since the previous one for
// that request, per choice; the last one has finished = true, a finish_reason on every choice and
// the final usage. Every request gets exactly one last output, whatever happens to it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/model/types.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/sampling_params.hpp"

namespace llaisys {

// stop: EOS, a stop token or a stop string; length: max_tokens or the end of the context (or of
// the KV cache); abort: abort() or shutdown; error: a failed model pass (finish_detail says what);
// ignored: the request could never run (finish_detail says why, e.g. prompt longer than the context).
enum class FinishReason : uint8_t { stop, length, abort, error, ignored };
std::string_view to_string(FinishReason reason);  // "stop", "length", "abort", "error", "ignored"

struct StopConditions {
  std::optional<int32_t> max_tokens;     // generated tokens per choice; unset: until the context ends
  int32_t min_tokens = 0;                // EOS and stop token ids cannot be sampled before this many
  std::vector<TokenId> stop_token_ids;   // end generation (the id is part of the output ids)
  std::vector<std::string> stop;         // stop strings: need a tokenizer; never part of the text
  bool ignore_eos = false;               // keep going past the model's EOS ids
};

struct GenerateRequest {
  std::vector<TokenId> prompt_ids;
  SamplingParams sampling;
  StopConditions stop;
  int32_t n = 1;                         // choices, sharing the prompt's KV
  bool skip_special_tokens = true;       // in the text deltas
  std::string cache_salt;                // requests with different salts never share cached KV
  // Structured output: only tokens the grammar allows are sampled, EOS exactly when it can end, and
  // a choice whose grammar is complete (no byte may follow) finishes with stop. Compiled against
  // this model's vocabulary (its vocab_size). Null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // -1: none. k in [0, 20]: the log-probability of every prompt token after the first under the
  // tokens before it, with the k most likely alternatives (RequestOutput::prompt_logprobs). Every
  // prompt position then needs its logits, so the prompt runs without the prefix cache.
  int32_t num_prompt_logprobs = -1;
  // false: this request never speculates, even where the engine would (EngineConfig::speculative).
  bool speculative = true;
};

enum class Pooling : uint8_t { last, mean };

struct EmbedRequest {
  std::vector<TokenId> prompt_ids;
  Pooling pooling = Pooling::last;
  bool normalize = true;                 // L2-normalise the pooled vector
  std::string cache_salt;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;         // over all choices, stop tokens included
  int32_t cached_tokens = 0;             // prompt tokens served from the prefix cache
  int32_t total_tokens() const { return prompt_tokens + completion_tokens; }
};

// steady_clock times of one request, for TTFT and inter-token latency; unset points are epoch 0.
struct RequestTimes {
  using TimePoint = std::chrono::steady_clock::time_point;
  TimePoint arrival;                     // submitted
  TimePoint first_scheduled;             // first chunk of its prompt ran
  TimePoint first_token;                 // first token sampled (end of prefill)
  TimePoint last_token;                  // latest token sampled
  TimePoint finished;
  int32_t num_preemptions = 0;
};

struct ChoiceDelta {
  int32_t index = 0;                     // which choice, 0..n-1
  std::string text;                      // new complete UTF-8 text (empty without a tokenizer)
  std::vector<TokenId> token_ids;        // new tokens
  std::vector<TokenLogprob> logprobs;    // one per new token when sampling.num_logprobs >= 0
  // one per new token when sampling.num_top_logits > 0: the largest raw logits of that step
  std::vector<std::vector<std::pair<TokenId, float>>> top_logits;
  std::optional<FinishReason> finish_reason;  // set on the choice's last delta
  std::string finish_detail;             // the stop string or token, or the error / ignore reason
};

struct RequestOutput {
  RequestId id = -1;
  std::vector<ChoiceDelta> choices;      // the choices with news, in index order
  bool finished = false;                 // the request's last output
  Usage usage;                           // totals so far (final when finished)
  RequestTimes times;
  std::vector<float> embedding;          // embedding requests: the pooled vector, in the last output
  // With num_prompt_logprobs >= 0: prompt tokens 1..P-1 (token 0 has no context), all at once, in
  // the output that carries the first sampled token.
  std::vector<TokenLogprob> prompt_logprobs;
};

}  // namespace llaisys
