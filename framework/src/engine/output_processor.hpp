#pragma once
// OutputProcessor: the engine's per-request state. It tells the model how each choice samples
// (SamplingRows), then turns the sampled tokens into outputs: stop rules, text deltas (the
// detokenizer), logprobs, usage and timestamps, pooled embeddings. Sampling itself happens in the
// model's step. It never touches the scheduler's or the KV state: everything it needs comes in the
// plan, and its verdicts go back as a StepResult.

#include <array>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/scheduler/step_plan.hpp"
#include "model_runner.hpp"
#include "request_state.hpp"
#include "sampling_rows.hpp"

namespace llaisys::engine_detail {

class OutputProcessor {
 public:
  // num_seq_slots: the model's sequence slots (KvCacheConfig::num_seq_slots).
  OutputProcessor(const ModelInfo& info, std::shared_ptr<const text::Tokenizer> tokenizer,
                  int32_t max_sequence_tokens, uint64_t seed, int32_t num_seq_slots);

  // The seed an unseeded request gets (from the engine's seed, in submission order).
  uint64_t draw_seed() { return seed_source_(); }
  // `arrival` epoch 0: now.
  void add_generate(RequestId id, GenerateRequest request, std::span<const SeqId> seqs, RequestTimes::TimePoint arrival);
  void add_embedding(RequestId id, EmbedRequest request, SeqId seq, RequestTimes::TimePoint arrival);
  bool contains(RequestId id) const { return requests_.contains(id); }
  // Finishes every unfinished choice of the request (used when it never reaches the scheduler).
  void finish_request(RequestId id, FinishReason reason, const std::string& detail);

  // Timestamps, cached tokens, preemptions (a preempted choice gives its sequence slot back).
  void on_scheduled(const SchedulerOutput& plan);
  // How the model samples each output row of the plan, in plan order. A choice that cannot be
  // described (no sequence slot left: a bug) is finished with an error and gets no row.
  // Their grammar masks are made by SamplingRows::fill_masks() (the engine runs it beside the step).
  SamplingRows& sampling_rows(const SchedulerOutput& plan);
  // The step's results (rows built by the last sampling_rows()) -> outputs and the scheduler's verdicts;
  // choices whose grammar could not go on (SamplingRows::mask_failures) finish with an error first.
  StepResult process(const SchedulerOutput& plan, const StepRows& rows);
  void on_finished(std::span<const FinishedSeq> finished);
  // Outputs of every request with news; finished requests are forgotten.
  std::vector<RequestOutput> collect();

  bool empty() const { return requests_.empty(); }
  std::vector<RequestId> unfinished_requests() const;
  int64_t num_generated_tokens() const { return num_generated_tokens_; }
  const std::array<int64_t, 5>& num_finished() const { return num_finished_; }

 private:
  Choice* choice_of(SeqId seq, RequestState** request);
  void finish_choice(RequestState& r, Choice& c, FinishReason reason, std::string detail);
  // Applies the row's token (or `decided`, when speculative sampling decided the token instead).
  SeqUpdate apply_token(RequestState& r, Choice& c, const StepRows& rows, std::size_t row, int32_t position,
                        std::optional<TokenId> decided = std::nullopt);
  // Speculative sampling at row `row` (sampling_rows.hpp keeps its raw logits) for the draft whose
  // distribution is `q`: the draft, or the residual draw that replaces it.
  TokenId verify_draft_row(const Choice& c, const StepRows& rows, std::size_t row, int32_t position, TokenId draft,
                           std::span<const float> q);
  // Rows for the prompt positions of `chunk` whose next token is not scored yet.
  void add_prompt_rows(const RequestState& r, std::size_t index, const ScheduledChunk& chunk);

  ModelInfo info_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  int32_t max_sequence_tokens_;
  Rng seed_source_;  // seeds of unseeded requests
  SeqSlots slots_;
  SamplingRows sampling_;
  LogitsSampler verifier_;             // speculative sampling's target distributions
  std::vector<float> target_logits_;   // scratch for them
  std::vector<float> target_probs_;
  std::map<RequestId, RequestState> requests_;  // ordered: outputs come in request order
  std::unordered_map<SeqId, std::pair<RequestId, int32_t>> owners_;  // seq -> (request, choice)
  int64_t num_generated_tokens_ = 0;
  std::array<int64_t, 5> num_finished_{};
};

FinishReason finish_reason_of(SeqStatus status);

}  // namespace llaisys::engine_detail
