#pragma once
// ModelRunner: turns a SchedulerOutput into forward passes and hands back the output rows. It only
// packs and runs (nano-vllm's ModelRunner): no decisions, no request state.
//
// Chunks that want logits go into one pass; chunks of embedding requests (hidden states, one row
// per token) into a second one, since a pass has a single output kind. Block copies run first.

#include <span>
#include <vector>

#include "llaisys/engine/engine_model.hpp"
#include "llaisys/scheduler/batch_scheduler.hpp"

namespace llaisys::engine_detail {

// Rows produced by one step, indexed by the chunk's position in SchedulerOutput::chunks.
class StepRows {
 public:
  // [vocab_size] logits of the chunk's last token; empty when the chunk has no sampling row.
  std::span<const float> logits(std::size_t chunk) const;
  // [num_tokens, hidden_size] hidden states of every token of an embedding chunk.
  std::span<const float> hidden(std::size_t chunk) const;

 private:
  friend class ModelRunner;
  std::vector<float> logits_;           // [num_logit_rows, vocab_size]
  std::vector<float> hidden_;           // [num_hidden_rows, hidden_size]
  std::vector<int32_t> logit_row_;      // [num_chunks] first row, -1 for none
  std::vector<int32_t> hidden_row_;     // [num_chunks] first row, -1 for none
  std::vector<int32_t> hidden_count_;   // [num_chunks]
  int32_t vocab_size_ = 0;
  int32_t hidden_size_ = 0;
};

class ModelRunner {
 public:
  explicit ModelRunner(EngineModel model) : model_(std::move(model)) {}
  const ModelInfo& info() const { return model_.info(); }
  Status init_kv_cache(const KvCacheConfig& config) { return model_.init_kv_cache(config); }
  // Runs the step. The returned rows stay valid until the next call.
  Result<const StepRows*> run(const SchedulerOutput& plan);

 private:
  Status run_pass(const SchedulerOutput& plan, OutputKind kind);

  EngineModel model_;
  StepRows rows_;
  // Packing buffers, kept between steps.
  std::vector<TokenId> token_ids_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> seq_indices_;
  std::vector<const BlockId*> block_tables_;
  std::vector<int32_t> block_table_lens_;
  std::vector<int32_t> output_indices_;
};

}  // namespace llaisys::engine_detail
