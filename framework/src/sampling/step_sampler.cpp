#include <algorithm>
#include <cassert>

#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/sampler.hpp"
#include "llaisys/sampling/step_sampler.hpp"

namespace llaisys {
namespace {

// What one thread reuses from row to row (and step to step).
struct RowScratch {
  LogitsSampler chain;
  std::vector<float> raw;      // [vocab] the raw row, when logprobs are asked and no logits row holds it
  std::vector<TokenId> top;    // the most likely raw tokens
};

RowScratch& row_scratch() {
  thread_local RowScratch scratch;
  return scratch;
}

}  // namespace

StepSampler::StepSampler(int32_t vocab_size) : vocab_size_(vocab_size) { assert(vocab_size > 0); }

void StepSampler::init_slots(int32_t num_slots) {
  slots_.clear();
  slots_.resize(static_cast<std::size_t>(std::max(num_slots, 0)));
}

void StepSampler::sample(std::span<float> logits, std::span<const SampleRow> rows, const StepOutput& out,
                         const ParallelFor& parallel) {
  assert(logits.size() == rows.size() * static_cast<std::size_t>(vocab_size_));
  struct Step {
    std::span<float> logits;
    std::span<const SampleRow> rows;
    const StepOutput* out;
  };
  const Step step{.logits = logits, .rows = rows, .out = &out};
  // Two pointers: small enough for std::function to hold without allocating.
  auto body = [this, &step](int64_t r) {
    const auto i = static_cast<std::size_t>(r);
    const auto width = static_cast<std::size_t>(vocab_size_);
    sample_row(step.logits.subspan(i * width, width), step.rows[i], i, *step.out);
  };
  if (parallel && rows.size() > 1) {
    parallel(static_cast<int64_t>(rows.size()), body);
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) body(static_cast<int64_t>(i));
  }
}

void StepSampler::sample_row(std::span<float> logits, const SampleRow& row, std::size_t index,
                             const StepOutput& out) {
  RowScratch& scratch = row_scratch();
  const auto vocab = static_cast<std::size_t>(vocab_size_);

  // The raw row, before anything below edits `logits` in place.
  std::span<const float> raw;
  if (row.logits_row >= 0) {
    const std::span<float> dst = out.rows.subspan(static_cast<std::size_t>(row.logits_row) * vocab, vocab);
    std::copy(logits.begin(), logits.end(), dst.begin());
    raw = dst;
  }
  if (row.num_top_logprobs >= 0 && raw.empty()) {
    scratch.raw.assign(logits.begin(), logits.end());
    raw = scratch.raw;
  }

  SlotCounts* slot = nullptr;
  if (row.seq_slot >= 0) {
    assert(static_cast<std::size_t>(row.seq_slot) < slots_.size());
    slot = &slots_[static_cast<std::size_t>(row.seq_slot)];
    if (row.reset_slot) {
      const auto num_prompt =
          std::min(static_cast<std::size_t>(std::max(row.num_history_prompt, 0)), row.history.size());
      slot->reset(row.history.first(num_prompt), row.history.subspan(num_prompt));
    }
    if (row.has_penalties()) {
      apply_penalties(logits, *slot,
                      {.repetition = row.repetition_penalty,
                       .presence = row.presence_penalty,
                       .frequency = row.frequency_penalty});
    }
  }
  apply_logit_bias(logits, row.logit_bias_ids, row.logit_bias_values);
  const DrawParams draw{.temperature = row.temperature, .top_k = row.top_k, .top_p = row.top_p, .min_p = row.min_p};
  const double uniform = row.greedy() ? 0.0 : counter_uniform01(row.seed, row.counter);
  const TokenId token = scratch.chain.pick(logits, draw, uniform, row.allowed);
  out.tokens[index] = token;
  if (slot != nullptr) slot->add_output(token);

  if (row.num_top_logprobs >= 0) {
    const double normalizer = log_normalizer(raw);
    out.logprobs[index] = token >= 0 ? logprob_of(raw[static_cast<std::size_t>(token)], normalizer) : 0.0f;
    select_top_tokens(raw, static_cast<std::size_t>(row.num_top_logprobs), scratch.top);
    const auto width = static_cast<std::size_t>(out.top_width);
    const std::span<int32_t> ids = out.top_ids.subspan(index * width, width);
    const std::span<float> logprobs = out.top_logprobs.subspan(index * width, width);
    for (std::size_t i = 0; i < width; ++i) {
      const bool used = i < scratch.top.size();
      ids[i] = used ? scratch.top[i] : -1;
      logprobs[i] = used ? logprob_of(raw[static_cast<std::size_t>(scratch.top[i])], normalizer) : 0.0f;
    }
  }
}

}  // namespace llaisys
