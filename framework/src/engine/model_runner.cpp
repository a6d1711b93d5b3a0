#include "model_runner.hpp"

namespace llaisys::engine_detail {

std::span<const float> StepRows::logits(std::size_t chunk) const {
  if (chunk >= logit_row_.size() || logit_row_[chunk] < 0) return {};
  const auto width = static_cast<std::size_t>(vocab_size_);
  return std::span<const float>(logits_).subspan(static_cast<std::size_t>(logit_row_[chunk]) * width, width);
}

std::span<const float> StepRows::hidden(std::size_t chunk) const {
  if (chunk >= hidden_row_.size() || hidden_row_[chunk] < 0) return {};
  const auto width = static_cast<std::size_t>(hidden_size_);
  return std::span<const float>(hidden_).subspan(static_cast<std::size_t>(hidden_row_[chunk]) * width,
                                                 static_cast<std::size_t>(hidden_count_[chunk]) * width);
}

Result<const StepRows*> ModelRunner::run(const SchedulerOutput& plan) {
  rows_.vocab_size_ = model_.info().vocab_size;
  rows_.hidden_size_ = model_.info().hidden_size;
  rows_.logit_row_.assign(plan.chunks.size(), -1);
  rows_.hidden_row_.assign(plan.chunks.size(), -1);
  rows_.hidden_count_.assign(plan.chunks.size(), 0);
  if (!plan.block_copies.empty()) {
    LLAISYS_RETURN_IF_ERROR(model_.copy_blocks(plan.block_copies).with_context("copying KV blocks"));
  }
  bool any_hidden = false;
  for (const ScheduledChunk& chunk : plan.chunks) any_hidden |= chunk.output_kind == OutputKind::hidden;
  LLAISYS_RETURN_IF_ERROR(run_pass(plan, OutputKind::logits));
  if (any_hidden) LLAISYS_RETURN_IF_ERROR(run_pass(plan, OutputKind::hidden));
  return &rows_;
}

Status ModelRunner::run_pass(const SchedulerOutput& plan, OutputKind kind) {
  token_ids_.clear();
  positions_.clear();
  seq_indices_.clear();
  block_tables_.clear();
  block_table_lens_.clear();
  output_indices_.clear();
  int32_t num_rows = 0;
  for (std::size_t c = 0; c < plan.chunks.size(); ++c) {
    const ScheduledChunk& chunk = plan.chunks[c];
    if (chunk.output_kind != kind) continue;
    const auto seq_index = static_cast<int32_t>(block_tables_.size());
    const auto first_token = static_cast<int32_t>(token_ids_.size());
    for (int32_t i = 0; i < chunk.num_tokens(); ++i) {
      token_ids_.push_back(chunk.token_ids[static_cast<std::size_t>(i)]);
      positions_.push_back(chunk.start_position + i);
      seq_indices_.push_back(seq_index);
    }
    block_tables_.push_back(chunk.block_table.data());
    block_table_lens_.push_back(static_cast<int32_t>(chunk.block_table.size()));
    if (kind == OutputKind::logits && !chunk.sample_for.empty()) {
      rows_.logit_row_[c] = num_rows++;
      output_indices_.push_back(first_token + chunk.num_tokens() - 1);
    } else if (kind == OutputKind::hidden) {  // every token: the engine pools
      rows_.hidden_row_[c] = num_rows;
      rows_.hidden_count_[c] = chunk.num_tokens();
      for (int32_t i = 0; i < chunk.num_tokens(); ++i) output_indices_.push_back(first_token + i);
      num_rows += chunk.num_tokens();
    }
  }
  if (token_ids_.empty()) return Status();
  std::vector<float>& out = kind == OutputKind::logits ? rows_.logits_ : rows_.hidden_;
  out.resize(static_cast<std::size_t>(num_rows) * static_cast<std::size_t>(model_.info().output_width(kind)));
  const ForwardBatch batch{.token_ids = token_ids_,
                           .positions = positions_,
                           .seq_indices = seq_indices_,
                           .block_tables = block_tables_,
                           .block_table_lens = block_table_lens_,
                           .output_token_indices = output_indices_,
                           .output_kind = kind};
  return model_.forward(batch, out);
}

}  // namespace llaisys::engine_detail
