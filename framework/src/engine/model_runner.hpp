#pragma once
// ModelRunner: turns a SchedulerOutput and its SamplingRows into model steps and hands back what the
// model produced. It only packs and runs (nano-vllm's ModelRunner): no decisions, no request state.
//
// Chunks whose rows are sampled go into one step (one output row per sampling row, at the token the
// row reads: choices forking from one prompt repeat its last token, prompt logprobs read every
// prompt position); chunks of embedding requests (hidden states, one row per token) into a second
// one, since a pass has a single output kind. Block copies run first.

#include <functional>
#include <span>
#include <vector>

#include "llaisys/engine/engine_model.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/scheduler/step_plan.hpp"
#include "sampling_rows.hpp"

namespace llaisys::engine_detail {

// What one step produced.
class StepRows {
 public:
  // The token sampled for sampling row `row`.
  TokenId token(std::size_t row) const { return tokens_[row]; }
  // Its raw logprob and the num_top most likely (rows that asked for logprobs).
  TokenLogprob logprobs(std::size_t row, int32_t num_top) const;
  // [vocab_size] raw logits of a row that asked for them (SampleRow::logits_row).
  std::span<const float> logits(int32_t logits_row) const;
  // [num_tokens, hidden_size] hidden states of every token of an embedding chunk.
  std::span<const float> hidden(std::size_t chunk) const;
  const StepTimings& timings() const { return timings_; }

 private:
  friend class ModelRunner;
  std::vector<int32_t> tokens_;         // [rows]
  std::vector<float> logprobs_;         // [rows]
  std::vector<int32_t> top_ids_;        // [rows x top_width]
  std::vector<float> top_logprobs_;     // [rows x top_width]
  std::vector<float> logits_;           // [logits rows, vocab_size]
  std::vector<float> hidden_;           // [hidden rows, hidden_size]
  std::vector<int32_t> hidden_row_;     // [num_chunks] first row, -1 for none
  std::vector<int32_t> hidden_count_;   // [num_chunks]
  int32_t top_width_ = 0;
  int32_t vocab_size_ = 0;
  int32_t hidden_size_ = 0;
  StepTimings timings_;
};

class ModelRunner {
 public:
  explicit ModelRunner(EngineModel model) : model_(std::move(model)) {}
  const ModelInfo& info() const { return model_.info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return model_.init_kv_cache(config); }
  // Runs the step. The returned rows stay valid until the next call.
  // With `wait_for_masks`, the rows' grammar masks are still being made: the model calls it before
  // reading them (StepOutput::wait_for_masks).
  Result<const StepRows*> run(const SchedulerOutput& plan, const SamplingRows& sampling,
                              const std::function<Status()>* wait_for_masks = nullptr);

 private:
  Status run_sampled(const SchedulerOutput& plan, const SamplingRows& sampling,
                     const std::function<Status()>* wait_for_masks);
  Status run_hidden(const SchedulerOutput& plan);
  void clear_batch();
  // Appends the chunk's tokens as the next sequence of the batch; returns the index of its first token.
  int32_t add_chunk(const ScheduledChunk& chunk);
  Status step(OutputKind kind, std::span<const SampleRow> sampling, const StepOutput& out);

  EngineModel model_;
  StepRows rows_;
  // Packing buffers, kept between steps.
  std::vector<TokenId> token_ids_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> seq_indices_;
  std::vector<const BlockId*> block_tables_;
  std::vector<int32_t> block_table_lens_;
  std::vector<int32_t> output_indices_;
  std::vector<int32_t> first_token_;  // [num_chunks] the batch index of each chunk's first token, -1: not in
};

}  // namespace llaisys::engine_detail
