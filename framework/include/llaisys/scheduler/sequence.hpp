#pragma once
// Sequence: one choice of a request as the scheduler sees it (tokens, progress, state).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/model/types.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"

namespace llaisys {

// waiting -> running -> finished_*; running -> preempted (KV freed, back in the queue, recomputed
// when admitted again) -> running. finished_ignored: never ran (e.g. the prompt does not fit the
// context), with the reason in finish_detail. finished_error: a failed model pass.
enum class SeqStatus : uint8_t {
  waiting,
  running,
  preempted,
  finished_stopped,
  finished_length_capped,
  finished_aborted,
  finished_ignored,
  finished_error,
};

constexpr bool is_finished(SeqStatus status) { return status >= SeqStatus::finished_stopped; }
std::string_view to_string(SeqStatus status);

struct Sequence {
  SeqId id = -1;
  RequestId request_id = -1;
  int32_t choice = 0;                 // index among the request's n choices
  std::vector<TokenId> tokens;        // prompt, then generated tokens
  int32_t num_prompt_tokens = 0;
  int32_t num_computed_tokens = 0;    // tokens whose K/V is in the cache
  int32_t num_cached_tokens = 0;      // prefix-cache hit at the first admission (usage.cached_tokens)
  int32_t num_preemptions = 0;
  bool admitted_once = false;
  SeqStatus status = SeqStatus::waiting;
  OutputKind output_kind = OutputKind::logits;
  bool use_prefix_cache = true;
  bool prompt_logprobs = false;       // its prompt chunks count against max_prompt_logprob_tokens
  std::string cache_namespace;
  SeqId fork_parent = -1;             // choices > 0 before they fork from choice 0's prompt
  std::vector<SeqId> pending_forks;   // choice 0: the choices still waiting to fork from it
  int32_t num_speculative_tokens = 0; // drafts verified per decode step (0: no speculation)
  int32_t speculation_backoff = 0;    // steps skipped after the last verification accepted nothing
  int32_t speculation_skip = 0;       // decode steps left to run without drafts
  DraftSampling draft_sampling;       // how a sampling proposer draws this sequence's drafts

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  int32_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  std::span<const TokenId> prompt() const {
    return std::span<const TokenId>(tokens).first(static_cast<std::size_t>(num_prompt_tokens));
  }
  std::span<const TokenId> output() const {
    return std::span<const TokenId>(tokens).subspan(static_cast<std::size_t>(num_prompt_tokens));
  }
  std::span<const TokenId> computed() const {
    return std::span<const TokenId>(tokens).first(static_cast<std::size_t>(num_computed_tokens));
  }
};

}  // namespace llaisys
