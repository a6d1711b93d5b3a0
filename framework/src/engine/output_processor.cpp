#include "output_processor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "llaisys/core/log.hpp"

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
                                 int32_t max_sequence_tokens, uint64_t seed)
    : info_(info), tokenizer_(std::move(tokenizer)), max_sequence_tokens_(max_sequence_tokens), seed_source_(seed) {}

void OutputProcessor::add_generate(RequestId id, GenerateRequest request, std::span<const SeqId> seqs,
                                   RequestTimes::TimePoint arrival) {
  RequestState& r = requests_[id];
  r.usage.prompt_tokens = static_cast<int32_t>(request.prompt_ids.size());
  r.times.arrival = arrival == RequestTimes::TimePoint{} ? Clock::now() : arrival;
  // Only an unseeded request draws from the engine's stream (value_or would draw for every request,
  // so what an unseeded request got would depend on how many seeded ones came before it).
  const uint64_t seed = request.sampling.seed ? *request.sampling.seed : seed_source_();
  for (std::size_t c = 0; c < seqs.size(); ++c) {
    Choice choice{.seq = seqs[c], .rng = make_rng(seed, static_cast<uint32_t>(c))};
    choice.delta.index = static_cast<int32_t>(c);
    if (tokenizer_) {
      choice.detokenizer.emplace(tokenizer_,
                                 text::DetokenizerOptions{.skip_special_tokens = request.skip_special_tokens,
                                                          .stop_strings = request.stop.stop},
                                 request.prompt_ids);
    }
    owners_[seqs[c]] = {id, static_cast<int32_t>(c)};
    r.choices.push_back(std::move(choice));
  }
  r.num_unfinished = static_cast<int32_t>(seqs.size());
  request.prompt_ids.clear();
  request.prompt_ids.shrink_to_fit();
  r.request = std::move(request);
}

void OutputProcessor::add_embedding(RequestId id, EmbedRequest request, SeqId seq, RequestTimes::TimePoint arrival) {
  RequestState& r = requests_[id];
  r.is_embedding = true;
  r.pooling = request.pooling;
  r.normalize = request.normalize;
  r.usage.prompt_tokens = static_cast<int32_t>(request.prompt_ids.size());
  r.times.arrival = arrival == RequestTimes::TimePoint{} ? Clock::now() : arrival;
  r.choices.push_back(Choice{.seq = seq});
  r.num_unfinished = 1;
  owners_[seq] = {id, 0};
}

OutputProcessor::Choice* OutputProcessor::choice_of(SeqId seq, RequestState** request) {
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
  c.has_news = true;
  c.delta.finish_reason = reason;
  c.delta.finish_detail = std::move(detail);
  if (--r.num_unfinished == 0) {
    r.times.finished = Clock::now();
    ++num_finished_[static_cast<std::size_t>(reason)];
  }
}

void OutputProcessor::on_scheduled(const SchedulerOutput& plan, const BatchScheduler& scheduler) {
  const auto now = Clock::now();
  for (const ScheduledChunk& chunk : plan.chunks) {
    RequestState* r = nullptr;
    if (choice_of(chunk.seq, &r) == nullptr) continue;
    if (r->times.first_scheduled == RequestTimes::TimePoint{}) r->times.first_scheduled = now;
    if (!r->cached_tokens_known) {
      r->cached_tokens_known = true;
      r->usage.cached_tokens = scheduler.sequence(chunk.seq)->num_cached_tokens;
    }
  }
  for (SeqId seq : plan.preempted) {
    RequestState* r = nullptr;
    if (choice_of(seq, &r) != nullptr) ++r->times.num_preemptions;
  }
}

StepResult OutputProcessor::process(const SchedulerOutput& plan, const StepRows& rows,
                                    const BatchScheduler& scheduler) {
  StepResult result;
  for (std::size_t index = 0; index < plan.chunks.size(); ++index) {
    const ScheduledChunk& chunk = plan.chunks[index];
    if (chunk.output_kind == OutputKind::hidden) {
      RequestState* r = nullptr;
      Choice* c = choice_of(chunk.seq, &r);
      if (c != nullptr) result.updates.push_back(pool_hidden(*r, *c, chunk, rows.hidden(index)));
      continue;
    }
    for (SeqId target : chunk.sample_for) {
      RequestState* r = nullptr;
      Choice* c = choice_of(target, &r);
      const Sequence* seq = scheduler.sequence(target);
      if (c == nullptr || seq == nullptr || c->finished) continue;
      result.updates.push_back(sample_one(*r, *c, *seq, rows.logits(index)));
    }
  }
  return result;
}

SeqUpdate OutputProcessor::sample_one(RequestState& r, Choice& c, const Sequence& seq,
                                      std::span<const float> raw_row) {
  const GenerateRequest& request = r.request;
  const StopConditions& stop = request.stop;
  row_.assign(raw_row.begin(), raw_row.end());
  if (c.num_output_tokens < stop.min_tokens) {  // too early to stop: EOS and stop ids are masked
    const float masked = -std::numeric_limits<float>::infinity();
    auto mask = [&](TokenId id) {
      if (id >= 0 && static_cast<std::size_t>(id) < row_.size()) row_[static_cast<std::size_t>(id)] = masked;
    };
    if (!stop.ignore_eos) std::for_each(info_.eos_token_ids.begin(), info_.eos_token_ids.end(), mask);
    std::for_each(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), mask);
  }
  const TokenId token = sampler_.sample(row_, TokenHistory(seq.prompt(), seq.output()), request.sampling, c.rng);
  const auto now = Clock::now();
  if (r.times.first_token == RequestTimes::TimePoint{}) r.times.first_token = now;
  r.times.last_token = now;
  ++c.num_output_tokens;
  ++r.usage.completion_tokens;
  ++num_generated_tokens_;
  c.has_news = true;
  c.delta.token_ids.push_back(token);
  if (request.sampling.num_logprobs >= 0) {
    c.delta.logprobs.push_back(compute_logprobs(raw_row, token, request.sampling.num_logprobs));
  }
  if (request.sampling.num_top_logits > 0) {
    c.delta.top_logits.push_back(top_raw_logits(raw_row, request.sampling.num_top_logits));
  }

  SeqUpdate update{.seq = c.seq, .token = token};
  std::optional<FinishReason> reason;
  std::string detail;
  if (!stop.ignore_eos && contains_token(info_.eos_token_ids, token)) {
    reason = FinishReason::stop;
  } else if (contains_token(stop.stop_token_ids, token)) {
    reason = FinishReason::stop;
    detail = std::to_string(token);
  } else if (c.detokenizer) {
    text::IncrementalDetokenizer::Delta text = c.detokenizer->add(token);
    c.delta.text += text.text;
    if (text.stop_index) {
      reason = FinishReason::stop;
      detail = stop.stop[*text.stop_index];
    }
  }
  if (!reason && stop.max_tokens && c.num_output_tokens >= *stop.max_tokens) reason = FinishReason::length;
  if (!reason && seq.num_tokens() + 1 >= max_sequence_tokens_) {
    reason = FinishReason::length;
    detail = "the context is full";
  }
  if (reason) {
    finish_choice(r, c, *reason, std::move(detail));
    update.finish = *reason == FinishReason::stop ? SeqStatus::finished_stopped : SeqStatus::finished_length_capped;
  }
  return update;
}

SeqUpdate OutputProcessor::pool_hidden(RequestState& r, Choice& c, const ScheduledChunk& chunk,
                                       std::span<const float> rows) {
  const auto width = static_cast<std::size_t>(info_.hidden_size);
  r.pooled.resize(width, 0.0);
  const std::size_t num_rows = width > 0 ? rows.size() / width : 0;
  if (r.pooling == Pooling::mean) {
    // After a preemption the prompt is recomputed from the start: pool each position once.
    const auto first = static_cast<std::size_t>(std::max(0, r.num_pooled - chunk.start_position));
    for (std::size_t t = first; t < num_rows; ++t) {
      for (std::size_t i = 0; i < width; ++i) r.pooled[i] += static_cast<double>(rows[t * width + i]);
    }
    r.num_pooled = std::max(r.num_pooled, chunk.start_position + static_cast<int32_t>(num_rows));
  } else if (num_rows > 0) {
    for (std::size_t i = 0; i < width; ++i) r.pooled[i] = static_cast<double>(rows[(num_rows - 1) * width + i]);
    r.num_pooled = 1;
  }
  SeqUpdate update{.seq = c.seq};
  if (!chunk.completes_sequence) return update;
  double norm = 0.0;
  for (double& v : r.pooled) {
    v /= std::max(r.num_pooled, 1);
    norm += v * v;
  }
  norm = std::sqrt(norm);
  r.embedding.resize(width);
  for (std::size_t i = 0; i < width; ++i) {
    r.embedding[i] = static_cast<float>(r.normalize && norm > 0.0 ? r.pooled[i] / norm : r.pooled[i]);
  }
  r.times.first_token = r.times.last_token = Clock::now();
  finish_choice(r, c, FinishReason::stop, "");
  update.finish = SeqStatus::finished_stopped;
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
    if (out.finished) {
      out.embedding = std::move(r.embedding);
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
