#pragma once
// StepSampler: the CPU half of a model step's sampling (plugin ABI v2). It keeps the sequence slots
// (the token counts penalties read, updated with every token it samples, so the host sends a
// sequence's history once) and samples a step's rows, independently and possibly in parallel, with
// the chain of LogitsSampler (sampler.hpp: the same code) plus the allowed-token mask.
//
//   StepSampler sampler(vocab_size);
//   sampler.init_slots(max_num_seqs);
//   sampler.sample(logits, rows, out, parallel_for);   // rows already checked by validate_step()
//
// Per row r (llaisys_sample_row has the contract): the raw row goes to out.rows when logits_row >= 0;
// logprobs (num_top_logprobs >= 0) come from the raw row; with seq_slot >= 0 the slot is reset from
// the history when reset_slot, the penalties read it, and the sampled token is added to it; then
// logit_bias, the mask, and the draw with u = counter_uniform01(seed, counter) (none when greedy).
// A row's results depend only on the row and its slot, never on the other rows, their order or the
// threads.
//
// Thread safety: one sample() at a time; inside it rows run concurrently (validate_step guarantees
// no slot appears twice). Scratch is per thread and reused, so steady-state steps do not allocate
// (a slot's vectors grow by one entry per new distinct token).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "llaisys/model/step.hpp"
#include "llaisys/sampling/penalties.hpp"  // SlotCounts

namespace llaisys {

// Runs body(i) for every i in [0, count), possibly on several threads, and returns when all ran.
using ParallelFor = std::function<void(int64_t count, const std::function<void(int64_t)>& body)>;

class StepSampler {
 public:
  explicit StepSampler(int32_t vocab_size);

  int32_t vocab_size() const { return vocab_size_; }
  // Drops every slot's state and makes room for num_slots (>= 0).
  void init_slots(int32_t num_slots);
  int32_t num_slots() const { return static_cast<int32_t>(slots_.size()); }
  const SlotCounts& slot(int32_t index) const { return slots_[static_cast<std::size_t>(index)]; }

  // logits: [rows.size() x vocab_size] raw rows, modified in place. Writes out.tokens[r] for every
  // row; for rows with num_top_logprobs = n >= 0, out.logprobs[r] and the out.top_width entries of
  // out.top_ids / out.top_logprobs at r * top_width (the min(n, vocab) most likely first, ties to the
  // lower id, the rest -1 / 0); for rows with logits_row >= 0, the raw row. `rows` must pass
  // validate_step(); an empty `parallel` runs the rows one after another (same results, bit for bit).
  void sample(std::span<float> logits, std::span<const SampleRow> rows, const StepOutput& out,
              const ParallelFor& parallel = {});

 private:
  void sample_row(std::span<float> logits, const SampleRow& row, std::size_t index, const StepOutput& out);

  int32_t vocab_size_;
  std::vector<SlotCounts> slots_;
};

}  // namespace llaisys
