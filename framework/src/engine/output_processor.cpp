#include "output_processor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "llaisys/core/log.hpp"
#include "llaisys/sampling/penalties.hpp"
#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/speculative.hpp"
#include "pooling.hpp"

namespace llaisys::engine_detail {
namespace {

using Clock = std::chrono::steady_clock;

bool contains_token(std::span<const TokenId> tokens, TokenId token) {
  return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
}

}  // namespace

FinishReason finish_reason_of(SeqStatus status) {
  switch (status) {
    case SeqStatus::finished_stopped: return FinishReason::stop;
    case SeqStatus::finished_length_capped: return FinishReason::length;
    case SeqStatus::finished_aborted: return FinishReason::abort;
    case SeqStatus::finished_ignored: return FinishReason::ignored;
    default: return FinishReason::error;
  }
}

OutputProcessor::OutputProcessor(const ModelInfo& info, std::shared_ptr<const text::Tokenizer> tokenizer,
                                 int32_t max_sequence_tokens, uint64_t seed, int32_t num_seq_slots)
    : info_(info),
      tokenizer_(std::move(tokenizer)),
      max_sequence_tokens_(max_sequence_tokens),
      seed_source_(seed),
      slots_(num_seq_slots) {}

void OutputProcessor::add_generate(RequestId id, GenerateRequest request, std::span<const SeqId> seqs,
                                   RequestTimes::TimePoint arrival) {
  RequestState& r = requests_[id];
  r.usage.prompt_tokens = static_cast<int32_t>(request.prompt_ids.size());
  r.times.arrival = arrival == RequestTimes::TimePoint{} ? Clock::now() : arrival;
  // Only an unseeded request draws from the engine's stream (value_or would draw for every request,
  // so what an unseeded request got would depend on how many seeded ones came before it).
  const uint64_t seed = request.sampling.seed ? *request.sampling.seed : seed_source_();
  for (const auto& [token, bias] : request.sampling.logit_bias) {
    r.bias_ids.push_back(token);
    r.bias_values.push_back(bias);
  }
  for (std::size_t c = 0; c < seqs.size(); ++c) {
    Choice choice{.seq = seqs[c], .seed = choice_seed(seed, static_cast<uint32_t>(c))};
    choice.delta.index = static_cast<int32_t>(c);
    if (tokenizer_) {
      choice.detokenizer.emplace(tokenizer_,
                                 text::DetokenizerOptions{.skip_special_tokens = request.skip_special_tokens,
                                                          .stop_strings = request.stop.stop},
                                 request.prompt_ids);
    }
    if (request.grammar) choice.matcher.emplace(request.grammar);
    owners_[seqs[c]] = {id, static_cast<int32_t>(c)};
    r.choices.push_back(std::move(choice));
  }
  r.num_unfinished = static_cast<int32_t>(seqs.size());
  // The scheduler holds the prompt; a copy stays here only when a slot reset or the prompt's
  // logprobs may need it.
  const SamplingParams& p = request.sampling;
  r.has_penalties = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (!r.has_penalties && request.num_prompt_logprobs < 0) {
    request.prompt_ids.clear();
    request.prompt_ids.shrink_to_fit();
  }
  r.request = std::move(request);
}

void OutputProcessor::add_embedding(RequestId id, EmbedRequest request, SeqId seq, RequestTimes::TimePoint arrival) {
  RequestState& r = requests_[id];
  r.is_embedding = true;
  r.pool.pooling = request.pooling;
  r.pool.normalize = request.normalize;
  r.usage.prompt_tokens = static_cast<int32_t>(request.prompt_ids.size());
  r.times.arrival = arrival == RequestTimes::TimePoint{} ? Clock::now() : arrival;
  r.choices.push_back(Choice{.seq = seq});
  r.num_unfinished = 1;
  owners_[seq] = {id, 0};
}

Choice* OutputProcessor::choice_of(SeqId seq, RequestState** request) {
  auto owner = owners_.find(seq);
  if (owner == owners_.end()) return nullptr;
  auto r = requests_.find(owner->second.first);
  if (r == requests_.end()) return nullptr;
  *request = &r->second;
  return &r->second.choices[static_cast<std::size_t>(owner->second.second)];
}

void OutputProcessor::finish_request(RequestId id, FinishReason reason, const std::string& detail) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  for (Choice& c : it->second.choices) {
    if (!c.finished) finish_choice(it->second, c, reason, detail);
  }
}

void OutputProcessor::finish_choice(RequestState& r, Choice& c, FinishReason reason, std::string detail) {
  if (c.finished) return;
  if (c.detokenizer) c.delta.text += c.detokenizer->finish();  // held-back text, "" after a stop string
  c.finished = true;
  slots_.release(std::exchange(c.slot, -1));
  c.has_news = true;
  c.delta.finish_reason = reason;
  c.delta.finish_detail = std::move(detail);
  if (--r.num_unfinished == 0) {
    r.times.finished = Clock::now();
    ++num_finished_[static_cast<std::size_t>(reason)];
  }
}

void OutputProcessor::on_scheduled(const SchedulerOutput& plan) {
  const auto now = Clock::now();
  for (const ScheduledChunk& chunk : plan.chunks) {
    RequestState* r = nullptr;
    if (choice_of(chunk.seq, &r) == nullptr) continue;
    if (r->times.first_scheduled == RequestTimes::TimePoint{}) r->times.first_scheduled = now;
    if (!r->cached_tokens_known) {
      r->cached_tokens_known = true;
      r->usage.cached_tokens = chunk.num_cached_tokens;
    }
  }
  for (SeqId seq : plan.preempted) {
    RequestState* r = nullptr;
    Choice* c = choice_of(seq, &r);
    if (c == nullptr) continue;
    ++r->times.num_preemptions;
    slots_.release(std::exchange(c->slot, -1));  // its counts are sent again when it resumes
  }
}

SamplingRows& OutputProcessor::sampling_rows(const SchedulerOutput& plan) {
  sampling_.clear();
  for (std::size_t index = 0; index < plan.chunks.size(); ++index) {
    const ScheduledChunk& chunk = plan.chunks[index];
    if (chunk.output_kind != OutputKind::logits) continue;
    RequestState* owner = nullptr;
    if (choice_of(chunk.seq, &owner) != nullptr && owner->request.num_prompt_logprobs >= 0) {
      add_prompt_rows(*owner, index, chunk);
    }
    for (SeqId target : chunk.sample_for) {
      RequestState* r = nullptr;
      Choice* c = choice_of(target, &r);
      if (c == nullptr || c->finished) continue;
      // A speculative chunk samples at its last token and after every draft, in position order;
      // rows checking a sampled draft keep their logits (verify_draft_row).
      for (int32_t d = chunk.num_draft_tokens; d >= 0; --d) {
        const std::span<const TokenId> ahead =
            std::span<const TokenId>(chunk.token_ids).subspan(1, static_cast<std::size_t>(chunk.num_draft_tokens - d));
        const bool keep_logits = d > 0 && !chunk.draft_probs.empty();
        if (Status status = sampling_.add(*r, *c, index, chunk.end_position() - d, info_, slots_, ahead, keep_logits);
            !status.ok()) {
          log::error("engine: sequence {}: {}", target, status.message());
          finish_choice(*r, *c, FinishReason::error, status.message());
          break;
        }
      }
    }
  }
  sampling_.finish();
  return sampling_;
}

// The row after position p scores prompt token p + 1. Token 0 has no row; neither has the prompt's
// last token, whose row is the first sampling row.
void OutputProcessor::add_prompt_rows(const RequestState& r, std::size_t index, const ScheduledChunk& chunk) {
  const std::vector<TokenId>& prompt = r.request.prompt_ids;
  const int32_t last = std::min(chunk.end_position(), static_cast<int32_t>(prompt.size()) - 1);
  for (int32_t t = std::max(chunk.start_position, r.num_prompt_logprobs) + 1; t <= last; ++t) {
    sampling_.add_prompt_row(index, chunk.seq, t - 1, prompt[static_cast<std::size_t>(t)]);
  }
}

StepResult OutputProcessor::process(const SchedulerOutput& plan, const StepRows& rows) {
  for (const SamplingRows::MaskFailure& failure : sampling_.mask_failures()) {
    RequestState* r = nullptr;
    Choice* c = choice_of(failure.seq, &r);
    if (c == nullptr || c->finished) continue;
    log::error("engine: sequence {}: {}", failure.seq, failure.message);
    finish_choice(*r, *c, FinishReason::error, failure.message);
  }
  StepResult result;
  std::size_t row = 0;
  for (std::size_t index = 0; index < plan.chunks.size(); ++index) {
    const ScheduledChunk& chunk = plan.chunks[index];
    RequestState* r = nullptr;
    if (chunk.output_kind == OutputKind::hidden) {
      Choice* c = choice_of(chunk.seq, &r);
      if (c == nullptr) continue;
      SeqUpdate update{.seq = c->seq};
      if (pool_hidden(r->pool, chunk, rows.hidden(index), info_.hidden_size)) {
        r->times.first_token = r->times.last_token = Clock::now();
        finish_choice(*r, *c, FinishReason::stop, "");
        update.finish = SeqStatus::finished_stopped;
      }
      result.updates.push_back(update);
      continue;
    }
    // Speculative chunks: rows go in position order; row j's token counts while every earlier
    // row's token equalled the draft row j read after. A stop rule ends the choice, so later rows
    // are dropped as if never sampled.
    std::optional<SeqUpdate> verified;
    int32_t num_verified_rows = 0;
    bool verifying = true;
    for (; row < sampling_.size() && sampling_.chunk(row) == index; ++row) {
      Choice* c = choice_of(sampling_.seq(row), &r);
      if (c == nullptr) continue;
      if (const TokenId target = sampling_.prompt_target(row); target >= 0) {
        r->prompt_logprobs.push_back(compute_logprobs(rows.logits(sampling_.rows()[row].logits_row), target,
                                                      r->request.num_prompt_logprobs));
        ++r->num_prompt_logprobs;
        continue;
      }
      if (c->finished) continue;
      if (chunk.num_draft_tokens == 0) {
        result.updates.push_back(apply_token(*r, *c, rows, row, chunk.end_position()));
        continue;
      }
      if (!verifying) continue;
      const int32_t j = num_verified_rows++;
      const int32_t position = chunk.start_position + 1 + j;
      const bool has_draft = j < chunk.num_draft_tokens;
      const TokenId draft = has_draft ? chunk.token_ids[static_cast<std::size_t>(j) + 1] : -1;
      // A guessed draft is checked against the row's own draw; a sampled one by speculative sampling.
      std::optional<TokenId> decided;
      if (has_draft && !chunk.draft_probs.empty()) {
        const std::size_t width = chunk.draft_probs.size() / static_cast<std::size_t>(chunk.num_draft_tokens);
        decided = verify_draft_row(*c, rows, row, position, draft,
                                   std::span<const float>(chunk.draft_probs).subspan(static_cast<std::size_t>(j) * width, width));
      }
      SeqUpdate update = apply_token(*r, *c, rows, row, position, decided);
      const TokenId token = *update.token;
      if (!verified) {
        verified = std::move(update);
      } else {
        verified->extra_tokens.push_back(token);
        verified->finish = verified->finish == SeqStatus::running ? update.finish : verified->finish;
      }
      verifying = has_draft && token == draft;
    }
    if (verified) result.updates.push_back(std::move(*verified));
  }
  return result;
}

TokenId OutputProcessor::verify_draft_row(const Choice& c, const StepRows& rows, std::size_t row, int32_t position,
                                          TokenId draft, std::span<const float> q) {
  // p: the distribution the row's own draw came from (the model's chain on its raw logits: bias,
  // mask, then the draw parameters). Penalties never reach here (such requests do not speculate).
  const SampleRow& sample = sampling_.rows()[row];
  const std::span<const float> raw = rows.logits(sample.logits_row);
  target_logits_.assign(raw.begin(), raw.end());
  apply_logit_bias(target_logits_, sample.logit_bias_ids, sample.logit_bias_values);
  verifier_.distribution(target_logits_,
                         DrawParams{.temperature = sample.temperature,
                                    .top_k = sample.top_k,
                                    .top_p = sample.top_p,
                                    .min_p = sample.min_p},
                         target_probs_, sample.allowed);
  const auto counter = static_cast<uint64_t>(position);
  return verify_draft(target_probs_, q, draft,
                      counter_uniform01(speculative_seed(c.seed, SpeculativeStream::accept), counter),
                      counter_uniform01(speculative_seed(c.seed, SpeculativeStream::residual), counter))
      .token;
}

SeqUpdate OutputProcessor::apply_token(RequestState& r, Choice& c, const StepRows& rows, std::size_t row,
                                       int32_t position, std::optional<TokenId> decided) {
  const GenerateRequest& request = r.request;
  const StopConditions& stop = request.stop;
  const TokenId token = decided.value_or(rows.token(row));
  const auto now = Clock::now();
  if (r.times.first_token == RequestTimes::TimePoint{}) r.times.first_token = now;
  r.times.last_token = now;
  ++c.num_output_tokens;
  ++r.usage.completion_tokens;
  ++num_generated_tokens_;
  if (r.has_penalties) c.output_ids.push_back(token);
  c.has_news = true;
  c.delta.token_ids.push_back(token);
  if (request.sampling.num_logprobs >= 0) {
    c.delta.logprobs.push_back(decided ? compute_logprobs(rows.logits(sampling_.rows()[row].logits_row), token,
                                                          request.sampling.num_logprobs)
                                       : rows.logprobs(row, request.sampling.num_logprobs));
  }
  if (request.sampling.num_top_logits > 0) {
    c.delta.top_logits.push_back(top_raw_logits(rows.logits(sampling_.rows()[row].logits_row),
                                                request.sampling.num_top_logits));
  }

  SeqUpdate update{.seq = c.seq, .token = token};
  std::optional<FinishReason> reason;
  std::string detail;
  if (!stop.ignore_eos && contains_token(info_.eos_token_ids, token)) {
    reason = FinishReason::stop;
  } else if (contains_token(stop.stop_token_ids, token)) {
    reason = FinishReason::stop;
    detail = std::to_string(token);
  } else if (c.matcher && !c.matcher->accept(token)) {
    // The mask forbids such tokens: reaching this is a bug (or EOS under ignore_eos before the end).
    reason = FinishReason::error;
    detail = fmt::format("structured output: token {} does not continue the grammar", token);
  } else if (c.detokenizer) {
    text::IncrementalDetokenizer::Delta text = c.detokenizer->add(token);
    c.delta.text += text.text;
    if (text.stop_index) {
      reason = FinishReason::stop;
      detail = stop.stop[*text.stop_index];
    }
  }
  // A complete structure that nothing may extend ends the choice (no EOS step needed).
  if (!reason && c.matcher && c.matcher->is_terminated()) reason = FinishReason::stop;
  if (!reason && stop.max_tokens && c.num_output_tokens >= *stop.max_tokens) reason = FinishReason::length;
  if (!reason && position + 1 >= max_sequence_tokens_) {
    reason = FinishReason::length;
    detail = "the context is full";
  }
  if (reason) {
    finish_choice(r, c, *reason, std::move(detail));
    update.finish = *reason == FinishReason::stop     ? SeqStatus::finished_stopped
                    : *reason == FinishReason::length ? SeqStatus::finished_length_capped
                                                      : SeqStatus::finished_error;
  }
  return update;
}

void OutputProcessor::on_finished(std::span<const FinishedSeq> finished) {
  for (const FinishedSeq& f : finished) {
    RequestState* r = nullptr;
    Choice* c = choice_of(f.seq, &r);
    if (c != nullptr) finish_choice(*r, *c, finish_reason_of(f.status), f.detail);
  }
}

std::vector<RequestOutput> OutputProcessor::collect() {
  std::vector<RequestOutput> outputs;
  for (auto it = requests_.begin(); it != requests_.end();) {
    RequestState& r = it->second;
    RequestOutput out{.id = it->first, .usage = r.usage, .times = r.times};
    for (Choice& c : r.choices) {
      if (!c.has_news) continue;
      const int32_t index = c.delta.index;
      out.choices.push_back(std::move(c.delta));
      c.delta = ChoiceDelta{.index = index};
      c.has_news = false;
    }
    out.finished = r.num_unfinished == 0;
    if (out.choices.empty() && !out.finished) {
      ++it;
      continue;
    }
    if (r.request.num_prompt_logprobs >= 0 && !r.prompt_logprobs_sent &&
        r.num_prompt_logprobs == r.usage.prompt_tokens - 1) {
      out.prompt_logprobs = std::move(r.prompt_logprobs);
      r.prompt_logprobs_sent = true;
    }
    if (out.finished) {
      out.embedding = std::move(r.pool.embedding);
      for (const Choice& c : r.choices) owners_.erase(c.seq);
      it = requests_.erase(it);
    } else {
      ++it;
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

std::vector<RequestId> OutputProcessor::unfinished_requests() const {
  std::vector<RequestId> ids;
  for (const auto& [id, r] : requests_) {
    if (r.num_unfinished > 0) ids.push_back(id);
  }
  return ids;
}

}  // namespace llaisys::engine_detail
