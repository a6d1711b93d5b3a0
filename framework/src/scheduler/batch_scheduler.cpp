#include "llaisys/scheduler/batch_scheduler.hpp"

#include <algorithm>
#include <unordered_set>

#include "llaisys/core/log.hpp"

namespace llaisys {

std::string_view to_string(SeqStatus status) {
  switch (status) {
    case SeqStatus::waiting: return "waiting";
    case SeqStatus::running: return "running";
    case SeqStatus::preempted: return "preempted";
    case SeqStatus::finished_stopped: return "finished_stopped";
    case SeqStatus::finished_length_capped: return "finished_length_capped";
    case SeqStatus::finished_aborted: return "finished_aborted";
    case SeqStatus::finished_ignored: return "finished_ignored";
    case SeqStatus::finished_error: return "finished_error";
  }
  return "unknown";
}

BatchScheduler::BatchScheduler(const SchedulerConfig& config, const KVStoreConfig& kv_config)
    : config_(config), kv_(std::make_unique<PagedKVStore>(kv_config)) {}

// Tokens the whole cache holds, in 64 bits: blocks x block size can pass INT32_MAX.
int64_t BatchScheduler::cache_tokens() const { return int64_t{kv_->num_blocks()} * kv_->block_size(); }

int32_t BatchScheduler::max_sequence_tokens() const {
  return static_cast<int32_t>(std::min<int64_t>(config_.max_context, cache_tokens()));
}

std::size_t BatchScheduler::num_waiting() const { return waiting_.size(); }

const Sequence* BatchScheduler::sequence(SeqId id) const {
  auto it = sequences_.find(id);
  return it == sequences_.end() ? nullptr : &it->second;
}

int32_t BatchScheduler::running_seats() const {
  int32_t seats = 0;
  for (SeqId id : running_) seats += 1 + static_cast<int32_t>(sequences_.at(id).pending_forks.size());
  return seats;
}

std::optional<std::string> BatchScheduler::unrunnable_reason(const Sequence& s) const {
  if (1 + static_cast<int32_t>(s.pending_forks.size()) > config_.max_num_seqs) {
    return fmt::format("{} choices cannot run at once with max_num_seqs {}", 1 + s.pending_forks.size(),
                       config_.max_num_seqs);
  }
  // A generating sequence needs room for its prompt plus one generated token.
  const int32_t needed = s.num_tokens() + (s.output_kind == OutputKind::logits ? 1 : 0);
  if (needed > config_.max_context) {
    return fmt::format("the prompt has {} tokens but the context holds {}{}", s.num_tokens(),
                       config_.max_context,
                       s.output_kind == OutputKind::logits ? " including at least one generated token" : "");
  }
  if (needed > cache_tokens()) {
    return fmt::format("the prompt needs {} KV blocks but the cache has {} blocks of {} tokens",
                       kv_->blocks_for(needed), kv_->num_blocks(), kv_->block_size());
  }
  return std::nullopt;
}

Result<std::vector<SeqId>> BatchScheduler::add(SchedulerRequest request) {
  if (request.prompt.empty()) return Status(ErrorCode::invalid_argument, "the prompt is empty");
  if (request.n < 1) return make_error(ErrorCode::invalid_argument, "n must be >= 1, got {}", request.n);
  if (requests_.contains(request.id)) {
    return make_error(ErrorCode::invalid_argument, "request id {} is already in use", request.id);
  }
  std::vector<SeqId> ids;
  std::vector<Sequence> seqs;
  for (int32_t choice = 0; choice < request.n; ++choice) {
    Sequence s{.id = next_seq_id_++,
               .request_id = request.id,
               .choice = choice,
               .tokens = request.prompt,
               .num_prompt_tokens = static_cast<int32_t>(request.prompt.size()),
               .output_kind = request.output_kind,
               .use_prefix_cache = request.use_prefix_cache,
               .prompt_logprobs = request.prompt_logprobs,
               .cache_namespace = request.cache_namespace,
               .num_speculative_tokens = request.num_speculative_tokens};
    if (static_cast<std::size_t>(choice) < request.draft_sampling.size()) {
      s.draft_sampling = request.draft_sampling[static_cast<std::size_t>(choice)];
    }
    ids.push_back(s.id);
    seqs.push_back(std::move(s));
  }
  for (std::size_t c = 1; c < seqs.size(); ++c) {
    seqs[c].fork_parent = ids[0];
    seqs[0].pending_forks.push_back(ids[c]);
  }
  if (std::optional<std::string> reason = unrunnable_reason(seqs[0])) {
    for (const Sequence& s : seqs) {
      finished_before_running_.push_back({.seq = s.id,
                                          .request_id = s.request_id,
                                          .choice = s.choice,
                                          .status = SeqStatus::finished_ignored,
                                          .detail = *reason});
    }
    return ids;
  }
  for (Sequence& s : seqs) sequences_.emplace(s.id, std::move(s));
  requests_[request.id] = ids;
  waiting_.push_back(ids[0]);
  return ids;
}

SchedulerOutput BatchScheduler::schedule() {
  SchedulerOutput out;
  out.finished = std::move(finished_before_running_);
  finished_before_running_.clear();
  if (kv_step_) {
    log::error("scheduler: schedule() called before the previous step was recorded; undoing it");
    fail_step();
  }
  kv_step_.emplace(kv_->begin_step());
  Budget budget{.tokens = config_.max_num_batched_tokens,
                .prompt_logprob_tokens = config_.max_prompt_logprob_tokens};
  const bool preempted = schedule_running(out, budget);
  if (!preempted) schedule_waiting(out, budget);
  if (out.chunks.empty()) {  // nothing runs, so neither update() nor fail_step() follows
    kv_step_->commit();
    kv_step_.reset();
  }
  return out;
}

int32_t BatchScheduler::Budget::chunk_limit(const Sequence& s) const {
  const bool in_prompt = s.prompt_logprobs && s.num_computed_tokens < s.num_prompt_tokens;
  return in_prompt ? std::min(tokens, prompt_logprob_tokens) : tokens;
}

void BatchScheduler::Budget::take(const Sequence& s, int32_t num_tokens) {
  if (s.prompt_logprobs && s.num_computed_tokens < s.num_prompt_tokens) prompt_logprob_tokens -= num_tokens;
  tokens -= num_tokens;
}

bool BatchScheduler::schedule_running(SchedulerOutput& out, Budget& budget) {
  std::vector<SeqId> order;
  for (SeqId id : running_) {
    if (seq(id).num_uncomputed_tokens() <= 1) order.push_back(id);  // decodes first
  }
  for (SeqId id : running_) {
    if (seq(id).num_uncomputed_tokens() > 1) order.push_back(id);
  }
  std::unordered_map<SeqId, Draft> drafts = propose_drafts(order, budget.tokens);
  std::unordered_set<SeqId> scheduled;
  for (SeqId id : order) {
    if (budget.tokens <= 0) break;
    auto it = sequences_.find(id);
    if (it == sequences_.end() || it->second.status != SeqStatus::running) continue;  // preempted
    Sequence& s = it->second;
    int32_t n = std::min(s.num_uncomputed_tokens(), budget.chunk_limit(s));
    if (n <= 0) continue;
    if (auto d = drafts.find(s.id); d != drafts.end() && n == 1) {
      Draft& draft = d->second;
      const auto num_drafts = std::min(static_cast<int32_t>(draft.tokens.size()), budget.tokens - n);
      if (num_drafts > 0 && kv_->can_append(s.id, n + num_drafts)) {
        if (Status status = kv_->append(s.id, n + num_drafts, out.block_copies); status.ok()) {
          if (!draft.probs.empty()) draft.probs.resize(draft.probs.size() / draft.tokens.size() * static_cast<std::size_t>(num_drafts));
          draft.tokens.resize(static_cast<std::size_t>(num_drafts));
          budget.take(s, n + num_drafts);
          add_chunk(out, s, n, std::move(draft));
          scheduled.insert(s.id);
          continue;
        }
      }
    }
    while (!kv_->can_append(s.id, n)) {  // drafts that do not fit are dropped, never worth a preemption
      auto victim = std::find_if(running_.rbegin(), running_.rend(),
                                 [&](SeqId v) { return v != s.id && !scheduled.contains(v); });
      if (victim == running_.rend()) break;
      preempt(seq(*victim), out);
    }
    while (n > 1 && !kv_->can_append(s.id, n)) n /= 2;  // a prefill may take a smaller chunk
    if (!kv_->can_append(s.id, n)) {
      preempt(s, out);
      continue;
    }
    if (Status status = kv_->append(s.id, n, out.block_copies); !status.ok()) {
      log::error("scheduler: {}", status.message());  // can_append said yes: a bug, not a crash
      preempt(s, out);
      continue;
    }
    budget.take(s, n);
    add_chunk(out, s, n);
    scheduled.insert(s.id);
  }
  return !out.preempted.empty();
}

void BatchScheduler::schedule_waiting(SchedulerOutput& out, Budget& budget) {
  while (!waiting_.empty() && budget.tokens > 0) {
    Sequence& s = seq(waiting_.front());
    const auto seats = 1 + static_cast<int32_t>(s.pending_forks.size());
    if (running_seats() + seats > config_.max_num_seqs) break;
    const std::span<const TokenId> key = s.use_prefix_cache ? std::span<const TokenId>(s.tokens)
                                                            : std::span<const TokenId>();
    const int32_t cached = kv_->match_prefix(s.id, key, s.cache_namespace);
    const int32_t n = std::min(s.num_tokens() - cached, budget.chunk_limit(s));
    if (n <= 0 || !kv_->can_append(s.id, n)) {
      kv_->free(s.id);  // head of the queue does not fit: nobody overtakes it
      break;
    }
    if (Status status = kv_->append(s.id, n, out.block_copies); !status.ok()) {
      log::error("scheduler: {}", status.message());
      kv_->free(s.id);
      break;
    }
    admitted_.push_back({.seq = s.id,
                         .status = s.status,
                         .admitted_once = s.admitted_once,
                         .num_cached_tokens = s.num_cached_tokens,
                         .prefix_query_tokens = s.use_prefix_cache ? s.num_tokens() : 0,
                         .prefix_hit_tokens = s.use_prefix_cache ? cached : 0});
    s.num_computed_tokens = cached;
    s.status = SeqStatus::running;
    if (!s.admitted_once) {
      s.admitted_once = true;
      s.num_cached_tokens = cached;
    }
    prefix_query_tokens_ += admitted_.back().prefix_query_tokens;
    prefix_hit_tokens_ += admitted_.back().prefix_hit_tokens;
    waiting_.pop_front();
    running_.push_back(s.id);
    budget.take(s, n);
    add_chunk(out, s, n);
  }
}

std::unordered_map<SeqId, Draft> BatchScheduler::propose_drafts(std::span<const SeqId> order, int32_t budget_tokens) {
  std::unordered_map<SeqId, Draft> drafts;
  if (!config_.proposer) return drafts;
  std::vector<DraftRequest> requests;
  int32_t num_decodes = 0;
  for (SeqId id : order) num_decodes += seq(id).num_uncomputed_tokens() == 1 ? 1 : 0;
  int32_t spare = budget_tokens - num_decodes;  // what the decodes leave, given out in order
  for (SeqId id : order) {
    Sequence& s = seq(id);
    if (s.num_speculative_tokens <= 0 || s.num_uncomputed_tokens() != 1 || !s.pending_forks.empty() ||
        s.output_kind != OutputKind::logits) {
      continue;
    }
    if (s.speculation_skip > 0) {
      --s.speculation_skip;
      continue;
    }
    // Every draft takes a KV slot and may become a token: stay inside the context and the pool.
    const int32_t max_drafts = std::min({spare, s.num_speculative_tokens, max_sequence_tokens() - s.num_tokens()});
    if (max_drafts <= 0) continue;
    spare -= max_drafts;
    requests.push_back({.seq = s.id,
                        .tokens = s.tokens,
                        .num_prompt_tokens = s.num_prompt_tokens,
                        .max_drafts = max_drafts,
                        .sampling = s.draft_sampling});
  }
  if (requests.empty()) return drafts;
  std::vector<Draft> answers(requests.size());
  config_.proposer->propose(requests, answers);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Draft& draft = answers[i];
    const auto max_drafts = static_cast<std::size_t>(requests[i].max_drafts);
    if (draft.tokens.empty()) continue;
    const std::size_t width = draft.probs.size() / draft.tokens.size();
    if (!draft.probs.empty() && width * draft.tokens.size() != draft.probs.size()) {
      log::error("scheduler: the proposer's draft distributions do not match its {} tokens", draft.tokens.size());
      continue;
    }
    if (draft.tokens.size() > max_drafts) {
      draft.tokens.resize(max_drafts);
      if (!draft.probs.empty()) draft.probs.resize(width * max_drafts);
    }
    drafts.emplace(requests[i].seq, std::move(draft));
  }
  return drafts;
}

void BatchScheduler::settle_speculation(Sequence& s, std::span<const TokenId> drafts, int32_t num_appended) {
  // The chunk computed the last token and every draft; the appended tokens are the drafts the model
  // agreed with, then its own token (or fewer, cut by a stop rule). The K/V at a draft's position is
  // valid only if that draft was appended, and the last appended token has none yet: so everything
  // but the last appended token is computed. With nothing appended the last token's K/V is still
  // valid (the "no token" check below then ends the sequence).
  s.num_computed_tokens += std::max(num_appended, 1);
  kv_->truncate(s.id, s.num_computed_tokens);  // rejected drafts' slots go before anything is cached
  kv_->commit(s.id, s.computed());
  const std::span<const TokenId> appended = std::span<const TokenId>(s.tokens).last(
      static_cast<std::size_t>(std::max(num_appended, 0)));
  const auto accepted = static_cast<int32_t>(
      std::mismatch(appended.begin(), appended.end(), drafts.begin(), drafts.end()).first - appended.begin());
  num_draft_tokens_ += static_cast<int64_t>(drafts.size());
  num_accepted_draft_tokens_ += accepted;
  if (accepted > 0) {
    s.speculation_backoff = 0;
  } else {  // a proposer that keeps missing costs a wide pass per step: probe less and less often
    s.speculation_backoff = std::min(std::max(2 * s.speculation_backoff, 1), 32);
    s.speculation_skip = s.speculation_backoff;
  }
}

void BatchScheduler::add_chunk(SchedulerOutput& out, Sequence& s, int32_t num_tokens, Draft draft) {
  const std::vector<TokenId>& drafts = draft.tokens;
  const auto start = static_cast<std::size_t>(s.num_computed_tokens);
  ScheduledChunk chunk{.seq = s.id,
                       .request_id = s.request_id,
                       .start_position = s.num_computed_tokens,
                       .token_ids = std::vector<TokenId>(s.tokens.begin() + static_cast<std::ptrdiff_t>(start),
                                                         s.tokens.begin() + static_cast<std::ptrdiff_t>(start) + num_tokens),
                       .output_kind = s.output_kind,
                       .completes_sequence = s.num_computed_tokens + num_tokens == s.num_tokens(),
                       .num_cached_tokens = s.num_cached_tokens,
                       .num_draft_tokens = static_cast<int32_t>(drafts.size()),
                       .draft_probs = std::move(draft.probs)};
  chunk.token_ids.insert(chunk.token_ids.end(), drafts.begin(), drafts.end());
  const std::span<const BlockId> table = kv_->block_table(s.id);
  chunk.block_table.assign(table.begin(), table.end());
  if (chunk.completes_sequence && s.output_kind == OutputKind::logits) {
    chunk.sample_for.push_back(s.id);
    chunk.sample_for.insert(chunk.sample_for.end(), s.pending_forks.begin(), s.pending_forks.end());
  }
  out.num_batched_tokens += chunk.num_tokens();
  scheduled_chunks_.push_back({.seq = s.id, .num_tokens = num_tokens, .drafts = {drafts.begin(), drafts.end()}});
  out.chunks.push_back(std::move(chunk));
}

void BatchScheduler::preempt(Sequence& s, SchedulerOutput& out) {
  kv_->release(s.id, s.computed());  // computed full blocks stay cached: recompute mostly hits
  s.num_computed_tokens = 0;
  s.status = SeqStatus::preempted;
  ++s.num_preemptions;
  ++num_preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), s.id));
  waiting_.push_front(s.id);
  out.preempted.push_back(s.id);
  if (config_.proposer) config_.proposer->release(s.id);
}

void BatchScheduler::update(const StepResult& result) {
  if (kv_step_) {
    kv_step_->commit();
    kv_step_.reset();
  }
  admitted_.clear();
  std::vector<ScheduledTokens> speculative;  // settled once their tokens are appended
  for (ScheduledTokens& chunk : scheduled_chunks_) {
    auto it = sequences_.find(chunk.seq);
    if (it == sequences_.end() || it->second.status != SeqStatus::running) continue;
    if (!chunk.drafts.empty()) {
      speculative.push_back(std::move(chunk));
      continue;
    }
    it->second.num_computed_tokens += chunk.num_tokens;
    kv_->commit(chunk.seq, it->second.computed());
  }
  std::vector<SeqId> touched;
  for (const ScheduledTokens& chunk : scheduled_chunks_) touched.push_back(chunk.seq);
  scheduled_chunks_.clear();

  // Choices waiting for their prompt fork from choice 0 before anything else changes.
  for (const SeqUpdate& u : result.updates) {
    auto it = sequences_.find(u.seq);
    if (it == sequences_.end() || it->second.fork_parent < 0) continue;
    Sequence& child = it->second;
    auto parent_it = sequences_.find(child.fork_parent);
    if (parent_it == sequences_.end() || parent_it->second.num_uncomputed_tokens() != 0 ||
        !kv_->fork(parent_it->second.id, child.id).ok()) {
      log::error("scheduler: sequence {} cannot fork from {}", child.id, child.fork_parent);
      continue;
    }
    Sequence& parent = parent_it->second;
    child.tokens = parent.tokens;
    child.num_computed_tokens = parent.num_computed_tokens;
    child.num_cached_tokens = parent.num_cached_tokens;
    child.admitted_once = true;
    child.status = SeqStatus::running;
    child.fork_parent = -1;
    std::erase(parent.pending_forks, child.id);
    running_.push_back(child.id);
    touched.push_back(child.id);
  }
  std::unordered_map<SeqId, int32_t> num_appended;
  for (const SeqUpdate& u : result.updates) {
    auto it = sequences_.find(u.seq);
    if (it != sequences_.end() && it->second.status == SeqStatus::running && u.token) {
      it->second.tokens.push_back(*u.token);
      it->second.tokens.insert(it->second.tokens.end(), u.extra_tokens.begin(), u.extra_tokens.end());
      num_appended[u.seq] += 1 + static_cast<int32_t>(u.extra_tokens.size());
    }
  }
  for (const ScheduledTokens& chunk : speculative) {
    auto it = num_appended.find(chunk.seq);
    settle_speculation(seq(chunk.seq), chunk.drafts, it == num_appended.end() ? 0 : it->second);
  }
  for (const SeqUpdate& u : result.updates) {
    auto it = sequences_.find(u.seq);
    if (it != sequences_.end() && is_finished(u.finish)) finish(it->second, u.finish, "", nullptr);
  }
  // A running sequence with nothing left to compute was not given its token: the engine broke the
  // contract. End it rather than spin.
  for (SeqId id : touched) {
    auto it = sequences_.find(id);
    if (it != sequences_.end() && it->second.status == SeqStatus::running &&
        it->second.num_uncomputed_tokens() == 0) {
      log::error("scheduler: sequence {} finished its step without a sampled token", id);
      finish(it->second, SeqStatus::finished_error, "no token was sampled", &finished_before_running_);
    }
  }
  // Sliding window: blocks no later token can read go back to the pool (a no-op without a window).
  for (SeqId id : running_) kv_->release_outside_window(id, seq(id).num_computed_tokens);
}

void BatchScheduler::fail_step() {
  kv_step_.reset();  // rolls back: tables as schedule() found them, admitted sequences freed
  for (auto a = admitted_.rbegin(); a != admitted_.rend(); ++a) {
    Sequence& s = seq(a->seq);
    s.num_computed_tokens = 0;
    s.status = a->status;
    s.admitted_once = a->admitted_once;
    s.num_cached_tokens = a->num_cached_tokens;
    prefix_query_tokens_ -= a->prefix_query_tokens;
    prefix_hit_tokens_ -= a->prefix_hit_tokens;
    std::erase(running_, s.id);
    waiting_.push_front(s.id);
  }
  admitted_.clear();
  scheduled_chunks_.clear();
}

std::vector<FinishedSeq> BatchScheduler::finish_request(RequestId id, SeqStatus status, std::string detail) {
  std::vector<FinishedSeq> report;
  auto it = requests_.find(id);
  if (it == requests_.end()) return report;
  const std::vector<SeqId> ids = it->second;
  for (SeqId seq_id : ids) {
    auto s = sequences_.find(seq_id);
    if (s != sequences_.end()) finish(s->second, status, detail, &report);
  }
  return report;
}

void BatchScheduler::finish(Sequence& s, SeqStatus status, std::string detail,
                            std::vector<FinishedSeq>* report) {
  const SeqId id = s.id;
  const RequestId request = s.request_id;
  if (kv_->contains(id)) kv_->release(id, s.computed());
  std::erase(running_, id);
  if (auto w = std::find(waiting_.begin(), waiting_.end(), id); w != waiting_.end()) waiting_.erase(w);
  std::erase_if(scheduled_chunks_, [id](const ScheduledTokens& entry) { return entry.seq == id; });
  std::erase_if(admitted_, [id](const Admission& a) { return a.seq == id; });
  const std::vector<SeqId> orphans = s.pending_forks;  // choices that never forked end with it
  if (config_.proposer) config_.proposer->release(id);
  if (report != nullptr) {
    report->push_back({.seq = id, .request_id = request, .choice = s.choice, .status = status, .detail = detail});
  }
  sequences_.erase(id);
  if (auto r = requests_.find(request); r != requests_.end()) {
    std::erase(r->second, id);
    if (r->second.empty()) requests_.erase(r);
  }
  for (SeqId orphan : orphans) {
    auto o = sequences_.find(orphan);
    if (o != sequences_.end()) {
      finish(o->second, status, detail, report != nullptr ? report : &finished_before_running_);
    }
  }
}

SchedulerStats BatchScheduler::stats() const {
  return {.num_waiting = static_cast<int32_t>(waiting_.size()),
          .num_running = static_cast<int32_t>(running_.size()),
          .num_preemptions = num_preemptions_,
          .prefix_query_tokens = prefix_query_tokens_,
          .prefix_hit_tokens = prefix_hit_tokens_,
          .num_draft_tokens = num_draft_tokens_,
          .num_accepted_draft_tokens = num_accepted_draft_tokens_,
          .kv = kv_->stats()};
}

}  // namespace llaisys
