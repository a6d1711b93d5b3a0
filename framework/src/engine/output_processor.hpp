#pragma once
// OutputProcessor: the engine's per-request state. It samples each sequence's next token from its
// logits row, applies the stop rules, turns tokens into text deltas, pools embeddings, keeps usage
// and timestamps, and assembles RequestOutputs. It never touches the scheduler's or the KV state:
// its verdicts go back as a StepResult.

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/scheduler/batch_scheduler.hpp"
#include "llaisys/text/incremental_detokenizer.hpp"
#include "model_runner.hpp"

namespace llaisys::engine_detail {

class OutputProcessor {
 public:
  OutputProcessor(const ModelInfo& info, std::shared_ptr<const text::Tokenizer> tokenizer,
                  int32_t max_sequence_tokens, uint64_t seed);

  // `arrival` epoch 0: now.
  void add_generate(RequestId id, GenerateRequest request, std::span<const SeqId> seqs, RequestTimes::TimePoint arrival);
  void add_embedding(RequestId id, EmbedRequest request, SeqId seq, RequestTimes::TimePoint arrival);
  bool contains(RequestId id) const { return requests_.contains(id); }
  // Finishes every unfinished choice of the request (used when it never reaches the scheduler).
  void finish_request(RequestId id, FinishReason reason, const std::string& detail);

  void on_scheduled(const SchedulerOutput& plan, const BatchScheduler& scheduler);
  StepResult process(const SchedulerOutput& plan, const StepRows& rows, const BatchScheduler& scheduler);
  void on_finished(std::span<const FinishedSeq> finished);
  // Outputs of every request with news; finished requests are forgotten.
  std::vector<RequestOutput> collect();

  bool empty() const { return requests_.empty(); }
  std::vector<RequestId> unfinished_requests() const;
  int64_t num_generated_tokens() const { return num_generated_tokens_; }
  const std::array<int64_t, 5>& num_finished() const { return num_finished_; }

 private:
  struct Choice {
    SeqId seq = -1;
    Rng rng;
    std::optional<text::IncrementalDetokenizer> detokenizer;
    ChoiceDelta delta;        // news since the last output
    bool has_news = false;
    bool finished = false;
    int32_t num_output_tokens = 0;
  };
  struct RequestState {
    GenerateRequest request;  // prompt_ids cleared after admission (the scheduler holds them)
    bool is_embedding = false;
    Pooling pooling = Pooling::last;
    bool normalize = true;
    std::vector<Choice> choices;
    Usage usage;
    RequestTimes times;
    bool cached_tokens_known = false;
    std::vector<double> pooled;  // embedding: running sum (mean) or last row
    int32_t num_pooled = 0;
    std::vector<float> embedding;
    int32_t num_unfinished = 0;
  };
  Choice* choice_of(SeqId seq, RequestState** request);
  void finish_choice(RequestState& r, Choice& c, FinishReason reason, std::string detail);
  SeqUpdate sample_one(RequestState& r, Choice& c, const Sequence& seq, std::span<const float> row);
  SeqUpdate pool_hidden(RequestState& r, Choice& c, const ScheduledChunk& chunk, std::span<const float> rows);

  ModelInfo info_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  int32_t max_sequence_tokens_;
  Rng seed_source_;
  LogitsSampler sampler_;
  std::vector<float> row_;  // [vocab_size] the row being sampled (the sampler edits it)
  std::map<RequestId, RequestState> requests_;  // ordered: outputs come in request order
  std::unordered_map<SeqId, std::pair<RequestId, int32_t>> owners_;  // seq -> (request, choice)
  int64_t num_generated_tokens_ = 0;
  std::array<int64_t, 5> num_finished_{};
};

FinishReason finish_reason_of(SeqStatus status);

}  // namespace llaisys::engine_detail
