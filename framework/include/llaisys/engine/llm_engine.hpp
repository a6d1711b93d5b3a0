#pragma once
// LLMEngine: many requests over one model, one step at a time, on the caller's thread.
//
// Contract:
//  - submit / add_request / add_embedding queue a request after validate(); abort(id) finishes it
//    (finish_reason abort) and frees its KV immediately, wherever it is (queued, prefilling,
//    decoding). Neither runs the model.
//  - step() runs one engine step: schedule -> the model's step (forward and sampling) -> stop rules and outputs. It
//    returns the deltas of every request with news (see request.hpp), including final outputs of
//    requests aborted or ignored since the previous step. Call it while has_unfinished().
//  - Stop rules, in order: EOS (unless ignore_eos), stop token ids, stop strings (text never holds
//    any part of one), max_tokens, then the end of the context or of the KV cache (length).
//  - Prompt logprobs (GenerateRequest::num_prompt_logprobs): every prompt position runs (no prefix
//    cache), each prompt token after the first is scored once (also across preemptions), and the
//    scores come together in the output with the first sampled token. A step holds at most 64 MiB
//    of their logits rows, so a long prompt is scored over several steps.
//  - Batch invariance: a request's tokens do not depend on what else runs (greedy: bit-exact on the
//    CPU; seeded sampling: a choice's draw at position p is a function of its seed and p alone).
//  - A failed model pass does not throw or stop the engine: the requests in that step finish with
//    finish_reason error (the message in finish_detail), their KV is rolled back and released, and
//    the next step serves everyone else.
//  - Not thread-safe: one thread drives it (AsyncEngine runs it on its own thread).

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/engine/engine_model.hpp"
#include "llaisys/engine/request.hpp"
#include "llaisys/kv/kv_store.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys {

struct EngineConfig {
  int32_t block_size = 16;                 // tokens per KV block
  int32_t num_kv_blocks = 0;               // 0: as many as kv_cache_bytes holds (see below)
  uint64_t kv_cache_bytes = 1ull << 30;    // KV budget, at ModelInfo::kv_bytes_per_token
  int32_t max_num_seqs = 64;               // sequences decoding at once
  int32_t max_num_batched_tokens = 2048;   // tokens per forward pass (decode + prefill chunks)
  int32_t max_context = 0;                 // 0: the model's max_context
  bool enable_prefix_cache = true;
  std::string cache_namespace;             // this model's key space in the prefix cache
  std::optional<uint64_t> seed;            // seeds unseeded requests; unset: std::random_device
  // Speculative decoding: each decode step of an eligible request also verifies up to
  // num_speculative_tokens drafts; the output is the same as without (greedy: token for token;
  // sampled: the same distribution, and with guessed drafts the same tokens). Eligible: every
  // generating request without penalties that did not opt out.
  SpeculativeMethod speculative = SpeculativeMethod::none;
  int32_t num_speculative_tokens = 4;
  // Used instead of `speculative`: a draft model (DraftModelProposer), test and benchmark proposers.
  std::shared_ptr<DraftProposer> proposer;
};

inline constexpr int32_t kMaxChoices = 64;  // largest n
inline constexpr int32_t kMaxSpeculativeTokens = 16;  // largest num_speculative_tokens

// Where the engine's steps spent their time, summed over steps (nanoseconds on the engine thread).
// forward and sample come from the model (StepTimings); the rest is the host's share.
struct StepTimes {
  uint64_t schedule_ns = 0;   // the scheduler's plan (admission, KV blocks, preemption)
  uint64_t prepare_ns = 0;    // sampling rows
  uint64_t mask_ns = 0;       // structured output's token masks (made while the forward pass runs)
  uint64_t mask_wait_ns = 0;  // of which the model waited for, after its forward pass (inside forward_ns
                              // or model_other_ns, as the model counts it)
  uint64_t forward_ns = 0;    // the model's pass
  uint64_t sample_ns = 0;     // the model's sampling
  uint64_t model_other_ns = 0;  // the rest of the model call (block copies, embedding passes, the ABI)
  uint64_t output_ns = 0;     // stop rules, text, outputs, and recording the step in the scheduler
  uint64_t host_ns() const { return schedule_ns + prepare_ns + output_ns; }
  uint64_t total_ns() const { return host_ns() + forward_ns + sample_ns + model_other_ns; }
};

struct EngineStats {
  int32_t num_unfinished_requests = 0;
  int32_t num_running_seqs = 0;
  int32_t num_waiting_seqs = 0;            // queued or preempted
  KVStats kv;                              // kv.usage(): fraction of blocks pinned by sequences
  int64_t prefix_query_tokens = 0;         // prompt tokens looked up at admission
  int64_t prefix_hit_tokens = 0;           // of which served from the cache
  int64_t num_preemptions = 0;
  int64_t num_computed_tokens = 0;         // tokens run through the model (prefill + decode)
  int64_t num_generated_tokens = 0;        // tokens sampled
  int64_t num_draft_tokens = 0;            // speculative drafts verified
  int64_t num_accepted_draft_tokens = 0;   // of which accepted (each a token won without a step)
  std::string_view speculative_method;     // the proposer's DraftProposer::method(); empty: none
  int32_t num_draft_kv_blocks_used = 0;     // the proposer's own KV blocks held (a draft model's)
  int64_t num_steps = 0;
  int64_t num_failed_steps = 0;
  std::array<int64_t, 5> num_finished{};   // requests, indexed by FinishReason
  StepTimes times;
  double prefix_hit_rate() const {
    return prefix_query_tokens > 0
               ? static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_query_tokens)
               : 0.0;
  }
};

class LLMEngine {
 public:
  // Sizes the KV pool (num_kv_blocks, else kv_cache_bytes / (kv_bytes_per_token x block_size),
  // capped at what max_num_seqs full contexts need), allocates it in the model and sets up the
  // scheduler. The tokenizer is optional: without one, outputs carry token ids only and stop
  // strings are refused.
  static Result<std::unique_ptr<LLMEngine>> create(EngineModel model, const EngineConfig& config,
                                                   std::shared_ptr<const text::Tokenizer> tokenizer = nullptr);
  ~LLMEngine();
  LLMEngine(const LLMEngine&) = delete;
  LLMEngine& operator=(const LLMEngine&) = delete;

  // invalid_argument with an OpenAI-style message when the request is malformed: empty prompt, ids
  // outside the vocabulary, bad sampling values, n outside [1, kMaxChoices], stop strings without a
  // tokenizer. A prompt too long for the context is not an error here: it finishes as ignored.
  // Reads only immutable state: safe from any thread.
  Status validate(const GenerateRequest& request) const;
  Status validate(const EmbedRequest& request) const;

  using TimePoint = RequestTimes::TimePoint;
  Result<RequestId> submit(GenerateRequest request);           // the engine picks the id
  // A caller-chosen unique id; `arrival` (default: now) is when the caller received the request, so
  // TTFT includes any queueing before the engine saw it.
  Status add_request(RequestId id, GenerateRequest request, TimePoint arrival = {});
  Status add_embedding(RequestId id, EmbedRequest request, TimePoint arrival = {});
  // True when the request was unfinished; its final output comes with the next step().
  bool abort(RequestId id);
  // Finishes every unfinished request with finish_reason error and `reason` (a broken model).
  void fail_all(std::string_view reason);

  std::vector<RequestOutput> step();
  bool has_unfinished() const;

  EngineStats stats() const;
  // The KV store's invariant check (ref counts, locks, radix tree, tables); for tests and debugging.
  Status check_kv_invariants() const;
  const ModelInfo& model_info() const;
  // The most tokens (prompt + output) one sequence can hold: the context or the KV cache.
  int32_t max_sequence_tokens() const;
  const std::shared_ptr<const text::Tokenizer>& tokenizer() const;

 private:
  struct State;
  explicit LLMEngine(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace llaisys
