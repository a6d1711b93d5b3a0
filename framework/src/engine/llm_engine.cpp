#include "llaisys/engine/llm_engine.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "llaisys/core/log.hpp"
#include "llaisys/sampling/philox.hpp"
#include "mask_worker.hpp"
#include "model_runner.hpp"
#include "llaisys/scheduler/batch_scheduler.hpp"
#include "output_processor.hpp"

namespace llaisys {

std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::error: return "error";
    case FinishReason::ignored: return "ignored";
  }
  return "error";
}

struct LLMEngine::State {
  engine_detail::ModelRunner runner;
  BatchScheduler scheduler;
  engine_detail::OutputProcessor outputs;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  EngineConfig config;
  RequestId next_request_id = 1;
  int64_t num_steps = 0;
  int64_t num_failed_steps = 0;
  int64_t num_computed_tokens = 0;
  StepTimes times;
  // Last: stopped before the rows its job writes go away. A pointer: State is moved into place.
  std::unique_ptr<engine_detail::MaskWorker> mask_worker = std::make_unique<engine_detail::MaskWorker>();
};

namespace {

Status check_prompt(std::span<const TokenId> prompt, int32_t vocab_size) {
  if (prompt.empty()) return Status(ErrorCode::invalid_argument, "the prompt is empty");
  for (TokenId id : prompt) {
    if (id < 0 || id >= vocab_size) {
      return make_error(ErrorCode::invalid_argument, "prompt token {} is outside the vocabulary of {}", id,
                        vocab_size);
    }
  }
  return Status();
}

// Which requests speculate. Verification is exact when each row samples as it would at its
// position without speculation, given the drafts before it: min_tokens counts them, a grammar's
// mask is made after them (sampling_rows.hpp). Penalties cannot: their counts live in the model's
// sequence slot, which one step may name once, so later rows would not see the drafts. Sampled
// requests speculate too: guessed drafts are checked against the row's own draw (the same draw as
// without speculation), sampled drafts by speculative sampling. Every other request decodes as
// without speculation.
bool speculates(const GenerateRequest& request) {
  const SamplingParams& p = request.sampling;
  return request.speculative && p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f &&
         p.frequency_penalty == 0.0f;
}

}  // namespace

Result<std::unique_ptr<LLMEngine>> LLMEngine::create(EngineModel model, const EngineConfig& config,
                                                     std::shared_ptr<const text::Tokenizer> tokenizer) {
  const ModelInfo info = model.info();
  if (config.block_size <= 0 || config.max_num_seqs <= 0 || config.max_num_batched_tokens <= 0) {
    return Status(ErrorCode::invalid_argument,
                  "block_size, max_num_seqs and max_num_batched_tokens must be positive");
  }
  if (info.sliding_window < 0) {
    return make_error(ErrorCode::invalid_argument, "the model reports a negative sliding window {}",
                      info.sliding_window);
  }
  const int32_t max_context = config.max_context > 0 ? std::min(config.max_context, info.max_context)
                                                     : info.max_context;
  int32_t num_blocks = config.num_kv_blocks;
  if (num_blocks <= 0) {
    num_blocks = kv_blocks_for_budget(config.kv_cache_bytes, info.kv_bytes_per_token, config.block_size);
    const int64_t blocks_per_context = (int64_t{max_context} + config.block_size - 1) / config.block_size;
    num_blocks = static_cast<int32_t>(std::min<int64_t>(num_blocks, blocks_per_context * config.max_num_seqs));
  }
  if (num_blocks <= 0) {
    return make_error(ErrorCode::resource_exhausted,
                      "a KV budget of {} bytes holds no block of {} tokens at {} bytes per token",
                      config.kv_cache_bytes, config.block_size, info.kv_bytes_per_token);
  }
  // One sequence slot per running sequence: a choice holds one while it runs with penalties.
  const KvCacheConfig kv{.num_blocks = num_blocks, .block_size = config.block_size, .num_seq_slots = config.max_num_seqs};
  LLAISYS_RETURN_IF_ERROR(model.init_kv_cache(kv).with_context("allocating the KV cache"));
  log::debug("engine: {} KV blocks of {} tokens ({} MiB), context {}, prefix cache {}, sliding window {}",
             num_blocks, config.block_size,
             static_cast<uint64_t>(num_blocks) * config.block_size * info.kv_bytes_per_token >> 20, max_context,
             config.enable_prefix_cache ? "on" : "off", info.sliding_window);
  const uint64_t seed = config.seed.value_or((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
  // Prompt logprobs keep a raw logits row per prompt position (here and inside the model): a step
  // holds at most kPromptLogitsBytes of them.
  constexpr int64_t kPromptLogitsBytes = int64_t{64} << 20;
  const auto prompt_logprob_tokens = static_cast<int32_t>(std::clamp<int64_t>(
      kPromptLogitsBytes / (int64_t{std::max(info.vocab_size, 1)} * 4), 1, config.max_num_batched_tokens));
  if (config.num_speculative_tokens < 0 || config.num_speculative_tokens > kMaxSpeculativeTokens) {
    return make_error(ErrorCode::invalid_argument, "num_speculative_tokens must be in [0, {}], got {}",
                      kMaxSpeculativeTokens, config.num_speculative_tokens);
  }
  std::shared_ptr<DraftProposer> proposer = config.proposer;
  if (!proposer && config.speculative == SpeculativeMethod::ngram) proposer = std::make_shared<NgramProposer>();
  BatchScheduler scheduler({.max_num_seqs = config.max_num_seqs,
                            .max_num_batched_tokens = config.max_num_batched_tokens,
                            .max_context = max_context,
                            .max_prompt_logprob_tokens = prompt_logprob_tokens,
                            .proposer = proposer},
                           {.num_blocks = num_blocks,
                            .block_size = config.block_size,
                            .enable_prefix_cache = config.enable_prefix_cache,
                            .sliding_window = info.sliding_window});
  const int32_t max_sequence_tokens = scheduler.max_sequence_tokens();
  auto state = std::make_unique<State>(State{
      .runner = engine_detail::ModelRunner(std::move(model)),
      .scheduler = std::move(scheduler),
      .outputs = engine_detail::OutputProcessor(info, tokenizer, max_sequence_tokens, seed, kv.num_seq_slots),
      .tokenizer = tokenizer,
      .config = config});
  return std::unique_ptr<LLMEngine>(new LLMEngine(std::move(state)));
}

LLMEngine::LLMEngine(std::unique_ptr<State> state) : state_(std::move(state)) {}
LLMEngine::~LLMEngine() = default;

const ModelInfo& LLMEngine::model_info() const { return state_->runner.info(); }
int32_t LLMEngine::max_sequence_tokens() const { return state_->scheduler.max_sequence_tokens(); }
const std::shared_ptr<const text::Tokenizer>& LLMEngine::tokenizer() const { return state_->tokenizer; }
bool LLMEngine::has_unfinished() const { return !state_->outputs.empty(); }

Status LLMEngine::validate(const GenerateRequest& request) const {
  const int32_t vocab = model_info().vocab_size;
  LLAISYS_RETURN_IF_ERROR(check_prompt(request.prompt_ids, vocab));
  LLAISYS_RETURN_IF_ERROR(request.sampling.validate(vocab));
  const int32_t max_n = std::min(kMaxChoices, state_->config.max_num_seqs);
  if (request.n < 1 || request.n > max_n) {
    return make_error(ErrorCode::invalid_argument, "n must be in [1, {}], got {}", max_n, request.n);
  }
  const StopConditions& stop = request.stop;
  if (stop.max_tokens && *stop.max_tokens < 0) {
    return make_error(ErrorCode::invalid_argument, "max_tokens must be >= 0, got {}", *stop.max_tokens);
  }
  if (stop.min_tokens < 0 || (stop.max_tokens && stop.min_tokens > *stop.max_tokens)) {
    return make_error(ErrorCode::invalid_argument, "min_tokens must be in [0, max_tokens], got {}", stop.min_tokens);
  }
  for (TokenId id : stop.stop_token_ids) {
    if (id < 0 || id >= vocab) {
      return make_error(ErrorCode::invalid_argument, "stop token {} is outside the vocabulary of {}", id, vocab);
    }
  }
  if (!stop.stop.empty() && !state_->tokenizer) {
    return Status(ErrorCode::invalid_argument, "stop strings need a model with a tokenizer");
  }
  if (request.num_prompt_logprobs < -1 || request.num_prompt_logprobs > 20) {
    return make_error(ErrorCode::invalid_argument, "prompt_logprobs must be in [0, 20] (or -1: none), got {}",
                      request.num_prompt_logprobs);
  }
  if (request.grammar && request.grammar->vocab().vocab_size() != vocab) {
    return make_error(ErrorCode::invalid_argument,
                      "the request's grammar was compiled for a vocabulary of {} tokens, not this model's {}",
                      request.grammar->vocab().vocab_size(), vocab);
  }
  return Status();
}

Status LLMEngine::validate(const EmbedRequest& request) const {
  return check_prompt(request.prompt_ids, model_info().vocab_size);
}

Result<RequestId> LLMEngine::submit(GenerateRequest request) {
  while (state_->outputs.contains(state_->next_request_id)) ++state_->next_request_id;
  const RequestId id = state_->next_request_id++;
  LLAISYS_RETURN_IF_ERROR(add_request(id, std::move(request)));
  return id;
}

Status LLMEngine::add_request(RequestId id, GenerateRequest request, TimePoint arrival) {
  LLAISYS_RETURN_IF_ERROR(validate(request));
  if (state_->outputs.contains(id)) {
    return make_error(ErrorCode::invalid_argument, "request id {} is already in use", id);
  }
  // Resolved here: a sampling proposer draws each choice's drafts from the choice's seed.
  if (!request.sampling.seed) request.sampling.seed = state_->outputs.draw_seed();
  const bool speculative = speculates(request) && state_->config.num_speculative_tokens > 0;
  std::vector<DraftSampling> draft_sampling;
  for (int32_t c = 0; speculative && c < request.n; ++c) {
    const SamplingParams& p = request.sampling;
    draft_sampling.push_back({.temperature = p.temperature,
                              .top_k = p.top_k,
                              .top_p = p.top_p,
                              .min_p = p.min_p,
                              .seed = choice_seed(*p.seed, static_cast<uint32_t>(c))});
  }
  LLAISYS_ASSIGN_OR_RETURN(std::vector<SeqId> seqs,
                           state_->scheduler.add({.id = id,
                                                  .prompt = request.prompt_ids,
                                                  .n = request.n,
                                                  .cache_namespace = state_->config.cache_namespace + '\x1f' + request.cache_salt,
                                                  .use_prefix_cache = request.num_prompt_logprobs < 0,
                                                  .prompt_logprobs = request.num_prompt_logprobs >= 0,
                                                  .num_speculative_tokens = speculative ? state_->config.num_speculative_tokens : 0,
                                                  .draft_sampling = std::move(draft_sampling)}));
  const bool nothing_to_generate = request.stop.max_tokens == 0;
  state_->outputs.add_generate(id, std::move(request), seqs, arrival);
  if (nothing_to_generate) {
    std::vector<FinishedSeq> done = state_->scheduler.finish_request(id, SeqStatus::finished_length_capped, "");
    state_->outputs.on_finished(done);
  }
  return Status();
}

Status LLMEngine::add_embedding(RequestId id, EmbedRequest request, TimePoint arrival) {
  LLAISYS_RETURN_IF_ERROR(validate(request));
  if (state_->outputs.contains(id)) {
    return make_error(ErrorCode::invalid_argument, "request id {} is already in use", id);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::vector<SeqId> seqs,
                           state_->scheduler.add({.id = id,
                                                  .prompt = request.prompt_ids,
                                                  .cache_namespace = state_->config.cache_namespace + '\x1f' + request.cache_salt,
                                                  .output_kind = OutputKind::hidden,
                                                  .use_prefix_cache = request.pooling == Pooling::last}));
  state_->outputs.add_embedding(id, std::move(request), seqs.front(), arrival);
  return Status();
}

bool LLMEngine::abort(RequestId id) {
  std::vector<FinishedSeq> done = state_->scheduler.finish_request(id, SeqStatus::finished_aborted, "aborted");
  state_->outputs.on_finished(done);
  return !done.empty();
}

void LLMEngine::fail_all(std::string_view reason) {
  for (RequestId id : state_->outputs.unfinished_requests()) {
    state_->outputs.on_finished(state_->scheduler.finish_request(id, SeqStatus::finished_error, std::string(reason)));
    state_->outputs.finish_request(id, FinishReason::error, std::string(reason));
  }
}

namespace {

using Clock = std::chrono::steady_clock;
uint64_t nanoseconds_since(Clock::time_point& mark) {
  const Clock::time_point now = Clock::now();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - mark).count();
  mark = now;
  return static_cast<uint64_t>(ns);
}

}  // namespace

// One step: schedule -> the model's step (forward + sampling) -> stop rules and outputs.
std::vector<RequestOutput> LLMEngine::step() {
  State& s = *state_;
  Clock::time_point mark = Clock::now();
  SchedulerOutput plan = s.scheduler.schedule();
  s.outputs.on_finished(plan.finished);
  s.outputs.on_scheduled(plan);
  s.times.schedule_ns += nanoseconds_since(mark);
  if (!plan.empty()) {
    ++s.num_steps;
    engine_detail::SamplingRows& sampling = s.outputs.sampling_rows(plan);
    s.times.prepare_ns += nanoseconds_since(mark);
    // Grammar masks are made on the worker while the forward pass runs; the model waits for them
    // before sampling (a model that cannot, before its step).
    auto run_model = [&]() -> Result<const engine_detail::StepRows*> {
      if (!sampling.has_masks()) return s.runner.run(plan, sampling);
      s.mask_worker->start([&sampling] { sampling.fill_masks(); });
      uint64_t waited_ns = 0;
      const std::function<Status()> wait = [&] {
        Clock::time_point since = Clock::now();
        s.mask_worker->wait();
        waited_ns += nanoseconds_since(since);
        return Status();
      };
      Result<const engine_detail::StepRows*> result = s.runner.run(plan, sampling, &wait);
      s.mask_worker->wait();  // also when the step failed before waiting
      s.times.mask_ns += sampling.mask_ns();
      s.times.mask_wait_ns += waited_ns;
      return result;
    };
    Result<const engine_detail::StepRows*> rows = run_model();
    const uint64_t model_ns = nanoseconds_since(mark);
    if (rows.ok()) {
      const StepTimings& t = rows.value()->timings();
      s.times.forward_ns += t.forward_ns;
      s.times.sample_ns += t.sample_ns;
      s.times.model_other_ns += model_ns - std::min(model_ns, t.forward_ns + t.sample_ns);
      s.num_computed_tokens += plan.num_batched_tokens;
      s.scheduler.update(s.outputs.process(plan, *rows.value()));
    } else {
      s.times.model_other_ns += model_ns;
      ++s.num_failed_steps;
      log::error("engine: model pass failed, failing its {} sequences: {}", plan.chunks.size(),
                 rows.status().message());
      s.scheduler.fail_step();
      for (const ScheduledChunk& chunk : plan.chunks) {
        s.outputs.on_finished(
            s.scheduler.finish_request(chunk.request_id, SeqStatus::finished_error, rows.status().message()));
      }
    }
  }
  std::vector<RequestOutput> outputs = s.outputs.collect();
  s.times.output_ns += nanoseconds_since(mark);
  return outputs;
}

Status LLMEngine::check_kv_invariants() const { return state_->scheduler.kv().validate(); }

EngineStats LLMEngine::stats() const {
  const SchedulerStats scheduler = state_->scheduler.stats();
  return {.num_unfinished_requests = static_cast<int32_t>(state_->outputs.unfinished_requests().size()),
          .num_running_seqs = scheduler.num_running,
          .num_waiting_seqs = scheduler.num_waiting,
          .kv = scheduler.kv,
          .prefix_query_tokens = scheduler.prefix_query_tokens,
          .prefix_hit_tokens = scheduler.prefix_hit_tokens,
          .num_preemptions = scheduler.num_preemptions,
          .num_computed_tokens = state_->num_computed_tokens,
          .num_generated_tokens = state_->outputs.num_generated_tokens(),
          .num_draft_tokens = scheduler.num_draft_tokens,
          .num_accepted_draft_tokens = scheduler.num_accepted_draft_tokens,
          .speculative_method = state_->scheduler.proposer() ? state_->scheduler.proposer()->method() : std::string_view(),
          .num_draft_kv_blocks_used = state_->scheduler.proposer() ? state_->scheduler.proposer()->num_blocks_held() : 0,
          .num_steps = state_->num_steps,
          .num_failed_steps = state_->num_failed_steps,
          .num_finished = state_->outputs.num_finished(),
          .times = state_->times};
}

}  // namespace llaisys
