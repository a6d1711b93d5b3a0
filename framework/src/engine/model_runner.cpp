#include "model_runner.hpp"

namespace llaisys::engine_detail {

TokenLogprob StepRows::logprobs(std::size_t row, int32_t num_top) const {
  TokenLogprob result{.token = tokens_[row], .logprob = logprobs_[row]};
  const auto width = static_cast<std::size_t>(top_width_);
  for (std::size_t i = 0; i < static_cast<std::size_t>(std::max(num_top, 0)) && i < width; ++i) {
    const int32_t id = top_ids_[row * width + i];
    if (id < 0) break;
    result.top.emplace_back(id, top_logprobs_[row * width + i]);
  }
  return result;
}

std::span<const float> StepRows::logits(int32_t logits_row) const {
  const auto width = static_cast<std::size_t>(vocab_size_);
  if (logits_row < 0 || (static_cast<std::size_t>(logits_row) + 1) * width > logits_.size()) return {};
  return std::span<const float>(logits_).subspan(static_cast<std::size_t>(logits_row) * width, width);
}

std::span<const float> StepRows::hidden(std::size_t chunk) const {
  if (chunk >= hidden_row_.size() || hidden_row_[chunk] < 0) return {};
  const auto width = static_cast<std::size_t>(hidden_size_);
  return std::span<const float>(hidden_).subspan(static_cast<std::size_t>(hidden_row_[chunk]) * width,
                                                 static_cast<std::size_t>(hidden_count_[chunk]) * width);
}

Result<const StepRows*> ModelRunner::run(const SchedulerOutput& plan, const SamplingRows& sampling,
                                         const std::function<Status()>* wait_for_masks) {
  rows_.vocab_size_ = model_.info().vocab_size;
  rows_.hidden_size_ = model_.info().hidden_size;
  rows_.timings_ = {};
  if (!plan.block_copies.empty()) {
    LLAISYS_RETURN_IF_ERROR(model_.copy_blocks(plan.block_copies).with_context("copying KV blocks"));
  }
  LLAISYS_RETURN_IF_ERROR(run_sampled(plan, sampling, wait_for_masks));
  LLAISYS_RETURN_IF_ERROR(run_hidden(plan));
  return &rows_;
}

void ModelRunner::clear_batch() {
  token_ids_.clear();
  positions_.clear();
  seq_indices_.clear();
  block_tables_.clear();
  block_table_lens_.clear();
  output_indices_.clear();
}

int32_t ModelRunner::add_chunk(const ScheduledChunk& chunk) {
  const auto seq_index = static_cast<int32_t>(block_tables_.size());
  const auto first = static_cast<int32_t>(token_ids_.size());
  for (int32_t i = 0; i < chunk.num_tokens(); ++i) {
    token_ids_.push_back(chunk.token_ids[static_cast<std::size_t>(i)]);
    positions_.push_back(chunk.start_position + i);
    seq_indices_.push_back(seq_index);
  }
  block_tables_.push_back(chunk.block_table.data());
  block_table_lens_.push_back(static_cast<int32_t>(chunk.block_table.size()));
  return first;
}

Status ModelRunner::step(OutputKind kind, std::span<const SampleRow> sampling, const StepOutput& out) {
  const ForwardBatch batch{.token_ids = token_ids_,
                           .positions = positions_,
                           .seq_indices = seq_indices_,
                           .block_tables = block_tables_,
                           .block_table_lens = block_table_lens_,
                           .output_token_indices = output_indices_,
                           .output_kind = kind};
  return model_.step(batch, sampling, out);
}

// Every logits chunk runs (prefill chunks that sample nothing still write their K/V); sampling row r
// reads the token at its read position in its chunk.
Status ModelRunner::run_sampled(const SchedulerOutput& plan, const SamplingRows& sampling,
                                const std::function<Status()>* wait_for_masks) {
  clear_batch();
  first_token_.assign(plan.chunks.size(), -1);
  for (std::size_t c = 0; c < plan.chunks.size(); ++c) {
    const ScheduledChunk& chunk = plan.chunks[c];
    if (chunk.output_kind != OutputKind::logits) continue;
    first_token_[c] = add_chunk(chunk);
  }
  if (token_ids_.empty()) return Status();
  for (std::size_t r = 0; r < sampling.size(); ++r) {
    const std::size_t c = sampling.chunk(r);
    output_indices_.push_back(first_token_[c] + sampling.read_position(r) - plan.chunks[c].start_position);
  }
  const std::size_t n = sampling.size();
  const auto width = static_cast<std::size_t>(sampling.top_width());
  rows_.top_width_ = sampling.top_width();
  rows_.tokens_.assign(n, -1);
  rows_.logprobs_.assign(n, 0.0f);
  rows_.top_ids_.assign(n * width, -1);
  rows_.top_logprobs_.assign(n * width, 0.0f);
  rows_.logits_.resize(static_cast<std::size_t>(sampling.num_logits_rows()) * static_cast<std::size_t>(rows_.vocab_size_));
  const StepOutput out{.tokens = rows_.tokens_,
                       .logprobs = rows_.logprobs_,
                       .top_width = sampling.top_width(),
                       .top_ids = rows_.top_ids_,
                       .top_logprobs = rows_.top_logprobs_,
                       .rows = rows_.logits_,
                       .timings = &rows_.timings_,
                       .wait_for_masks = wait_for_masks};
  if (n == 0) return step(OutputKind::logits, {}, StepOutput{.timings = &rows_.timings_});
  return step(OutputKind::logits, sampling.rows(), out);
}

Status ModelRunner::run_hidden(const SchedulerOutput& plan) {
  rows_.hidden_row_.assign(plan.chunks.size(), -1);
  rows_.hidden_count_.assign(plan.chunks.size(), 0);
  clear_batch();
  int32_t num_rows = 0;
  for (std::size_t c = 0; c < plan.chunks.size(); ++c) {
    const ScheduledChunk& chunk = plan.chunks[c];
    if (chunk.output_kind != OutputKind::hidden) continue;
    const int32_t first = add_chunk(chunk);
    rows_.hidden_row_[c] = num_rows;  // every token: the engine pools
    rows_.hidden_count_[c] = chunk.num_tokens();
    for (int32_t i = 0; i < chunk.num_tokens(); ++i) output_indices_.push_back(first + i);
    num_rows += chunk.num_tokens();
  }
  if (token_ids_.empty()) return Status();
  rows_.hidden_.resize(static_cast<std::size_t>(num_rows) * static_cast<std::size_t>(rows_.hidden_size_));
  StepTimings timings;
  LLAISYS_RETURN_IF_ERROR(step(OutputKind::hidden, {}, StepOutput{.rows = rows_.hidden_, .timings = &timings}));
  rows_.timings_.forward_ns += timings.forward_ns;
  return Status();
}

}  // namespace llaisys::engine_detail
