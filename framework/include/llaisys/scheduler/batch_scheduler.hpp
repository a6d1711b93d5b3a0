#pragma once
// BatchScheduler: continuous batching over a PagedKVStore (see scheduler.hpp for the contract).
//
// Policy, each step, under max_num_batched_tokens and max_num_seqs:
//  1. Running sequences, oldest first: decodes (one token left to compute) before prefills that
//     are still in progress, each prefill taking as large a chunk as the remaining budget allows. A
//     long prompt therefore never stalls running streams: they are served first, it gets the rest.
//  2. When a running sequence needs blocks that are not there, the newest running sequence not yet
//     scheduled this step is preempted (KV released, back at the head of the queue, recomputed
//     later, mostly from the prefix cache); if there is none, the sequence itself is.
//  3. If nobody was preempted, waiting sequences are admitted first-come first-served: the prefix
//     cache is matched first (those tokens cost neither budget nor blocks), then a chunk of the rest
//     is scheduled. The queue head blocks the queue (no overtaking) when it does not fit.
//  Prompt chunks of requests that read every prompt position's logits (prompt logprobs) also share
//  max_prompt_logprob_tokens per step, which bounds the logits rows a step produces for them.
// A request with n > 1 choices prefills once (choice 0); when its prompt is complete the other
// choices fork from it, sharing its blocks copy-on-write, and sample from the same logits row.
// With a sliding window (KVStoreConfig::sliding_window), every successful update() lets each running
// sequence give back the blocks that fell before its window (PagedKVStore::release_outside_window).
// Admission and chunking stay conservative: they count blocks as if none were ever given back.
// Speculative decoding (SchedulerRequest::num_speculative_tokens > 0, a proposer in the config): a
// decoding sequence runs its last token plus up to k drafts from the proposer (fewer when the token
// budget, the context or the free blocks are short: drafts never cause a preemption); update() keeps
// the tokens the engine accepted, counts the K/V of the accepted ones as computed and truncates the
// rest, so neither the table nor the prefix cache ever holds a rejected token. A verification that
// accepts nothing makes the sequence skip speculation for 1, 2, 4 .. 32 decode steps (back-off).
// The proposer is asked once per step for every speculating sequence (a draft model runs them as
// one batch) and told when a sequence is preempted or finished (it may keep state per sequence).
// Each schedule() that returns chunks opens a PagedKVStore::Step; update() commits it, fail_step()
// drops it (the KV rolls back) and puts the sequences it admitted back at the head of the queue, so
// scheduling again gives the same step.

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "llaisys/kv/paged_kv_store.hpp"
#include "llaisys/scheduler/draft_proposer.hpp"
#include "llaisys/scheduler/scheduler.hpp"
#include "llaisys/scheduler/step_plan.hpp"

namespace llaisys {

struct SchedulerConfig {
  int32_t max_num_seqs = 64;              // running sequences (pending forks count)
  int32_t max_num_batched_tokens = 2048;  // tokens per forward pass
  int32_t max_context = 4096;             // positions per sequence
  int32_t max_prompt_logprob_tokens = 2048;  // prompt tokens of prompt_logprobs sequences per step
  std::shared_ptr<DraftProposer> proposer;   // speculative decoding; null: none
};

struct SchedulerRequest {
  RequestId id = -1;
  std::vector<TokenId> prompt;
  int32_t n = 1;                          // choices sharing the prompt
  std::string cache_namespace;            // prefix-cache key space (model, adapter, salt)
  OutputKind output_kind = OutputKind::logits;
  bool use_prefix_cache = true;           // false when every prompt position must be computed
  bool prompt_logprobs = false;           // every prompt position's logits are read (see the policy)
  int32_t num_speculative_tokens = 0;     // drafts per decode step (0: none)
  std::vector<DraftSampling> draft_sampling;  // per choice (a sampling proposer's draws); empty: greedy
};

struct SchedulerStats {
  int32_t num_waiting = 0;                // sequences, preempted ones included
  int32_t num_running = 0;
  int64_t num_preemptions = 0;
  int64_t prefix_query_tokens = 0;        // prompt tokens looked up at admission
  int64_t prefix_hit_tokens = 0;          // of which found in the prefix cache
  int64_t num_draft_tokens = 0;           // speculative drafts verified
  int64_t num_accepted_draft_tokens = 0;  // of which accepted
  KVStats kv;
  double prefix_hit_rate() const {
    return prefix_query_tokens > 0
               ? static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_query_tokens)
               : 0.0;
  }
};

class BatchScheduler {
 public:
  using Request = SchedulerRequest;
  using Output = SchedulerOutput;
  using StepResult = llaisys::StepResult;

  BatchScheduler(const SchedulerConfig& config, const KVStoreConfig& kv_config);

  Result<std::vector<SeqId>> add(SchedulerRequest request);
  SchedulerOutput schedule();
  void update(const StepResult& result);
  void fail_step();
  // Finishes every unfinished sequence of the request with `status` and frees its KV now.
  std::vector<FinishedSeq> finish_request(RequestId id, SeqStatus status, std::string detail);

  bool has_unfinished() const { return !sequences_.empty(); }
  std::size_t num_waiting() const;
  std::size_t num_running() const { return running_.size(); }
  // The longest a sequence may grow: the context or the KV pool, whichever is smaller.
  int32_t max_sequence_tokens() const;
  const Sequence* sequence(SeqId seq) const;
  SchedulerStats stats() const;
  const PagedKVStore& kv() const { return *kv_; }
  const DraftProposer* proposer() const { return config_.proposer.get(); }

 private:
  int64_t cache_tokens() const;
  Sequence& seq(SeqId id) { return sequences_.at(id); }
  int32_t running_seats() const;
  std::optional<std::string> unrunnable_reason(const Sequence& s) const;
  // What is left of a step's token budgets while it is scheduled.
  struct Budget {
    int32_t tokens = 0;
    int32_t prompt_logprob_tokens = 0;
    // The largest chunk `s` may take now.
    int32_t chunk_limit(const Sequence& s) const;
    void take(const Sequence& s, int32_t num_tokens);
  };
  bool schedule_running(SchedulerOutput& out, Budget& budget);
  void schedule_waiting(SchedulerOutput& out, Budget& budget);
  // num_tokens of the sequence's own tokens, then the draft's tokens (speculative decoding).
  void add_chunk(SchedulerOutput& out, Sequence& s, int32_t num_tokens, Draft draft = {});
  // Drafts for the decoding sequences among `order` that speculate in this step, from one call to
  // the proposer; the drafts of all of them together fit `budget_tokens` beside their own tokens.
  std::unordered_map<SeqId, Draft> propose_drafts(std::span<const SeqId> order, int32_t budget_tokens);
  // After a speculative chunk's tokens were appended (num_appended of them): the K/V of all but the
  // last counts as computed, the rest of the step's slots go, the back-off and counters move.
  void settle_speculation(Sequence& s, std::span<const TokenId> drafts, int32_t num_appended);
  void preempt(Sequence& s, SchedulerOutput& out);
  void finish(Sequence& s, SeqStatus status, std::string detail, std::vector<FinishedSeq>* report);

  // A sequence the open step admitted, with what admission changed: fail_step() puts it back.
  struct Admission {
    SeqId seq = -1;
    SeqStatus status = SeqStatus::waiting;  // waiting or preempted
    bool admitted_once = false;
    int32_t num_cached_tokens = 0;
    int32_t prefix_query_tokens = 0;        // what admission added to the hit-rate counters
    int32_t prefix_hit_tokens = 0;
  };

  SchedulerConfig config_;
  std::unique_ptr<PagedKVStore> kv_;  // on the heap: kv_step_ refers to it, moves keep it in place
  std::unordered_map<SeqId, Sequence> sequences_;            // unfinished sequences only
  std::unordered_map<RequestId, std::vector<SeqId>> requests_;
  std::deque<SeqId> waiting_;                                // choice 0s (and forked choices) queued
  std::vector<SeqId> running_;                               // in admission order
  std::vector<FinishedSeq> finished_before_running_;         // reported by the next schedule()
  // The step of the last schedule(), open until update() commits it or fail_step() rolls it back.
  std::optional<PagedKVStore::Step> kv_step_;
  struct ScheduledTokens {
    SeqId seq = -1;
    int32_t num_tokens = 0;          // of the sequence's own tokens
    std::vector<TokenId> drafts;     // verified after them (speculative decoding)
  };
  std::vector<ScheduledTokens> scheduled_chunks_;            // of the open step
  std::vector<Admission> admitted_;                          // by the open step, in admission order
  SeqId next_seq_id_ = 1;
  int64_t num_preemptions_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t num_draft_tokens_ = 0;
  int64_t num_accepted_draft_tokens_ = 0;
};

static_assert(Scheduler<BatchScheduler>);

}  // namespace llaisys
