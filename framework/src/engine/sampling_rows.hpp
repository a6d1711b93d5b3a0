#pragma once
// SamplingRows: one step's sampling instructions for the model (SampleRow per output row), built
// from each choice's request (internal to the engine). The host side of sampling is only this:
// parameters, the choice's counter-based seed, min_tokens as -inf biases on EOS and stop ids, and
// the model's sequence slots (SeqSlots) holding the token counts penalties read — a slot is taken the
// first time a choice with penalties samples (and after a preemption), with its history sent once.
// Prompt logprobs add rows of their own: one per prompt position, reading that position's logits
// row (greedy, its raw row kept), whose sampled token is ignored.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llaisys/model/model.hpp"
#include "request_state.hpp"

namespace llaisys::engine_detail {

// Which of the model's num_seq_slots slots are free.
class SeqSlots {
 public:
  explicit SeqSlots(int32_t num_slots);
  std::optional<int32_t> acquire();
  void release(int32_t slot);
  int32_t num_slots() const { return num_slots_; }

 private:
  int32_t num_slots_;
  std::vector<int32_t> free_;  // a stack: the most recently freed slot is reused first
};

class SamplingRows {
 public:
  void clear();
  // Adds the row of choice `c` (of `r`) sampling the token at `position` from chunk `chunk`.
  // `ahead`: the tokens the choice gains in this step before this row's, if the row's token is to
  // count (a speculative chunk's earlier drafts): they count towards min_tokens, and a grammar's
  // mask is made after them. `keep_logits`: the row's raw logits are kept (speculative sampling
  // reads them). Fails (resource_exhausted) only when penalties need a slot and none is free.
  Status add(RequestState& r, Choice& c, std::size_t chunk, int32_t position, const ModelInfo& info,
             SeqSlots& slots, std::span<const TokenId> ahead = {}, bool keep_logits = false);
  // Adds a row of sequence `seq` keeping the raw logits after the token at `position` of chunk
  // `chunk`, for the logprob of the prompt's next token `target`.
  void add_prompt_row(std::size_t chunk, SeqId seq, int32_t position, TokenId target);
  // Points the rows at the step's arrays; call once after the last add().
  void finish();

  std::size_t size() const { return rows_.size(); }
  std::span<const SampleRow> rows() const { return rows_; }
  std::size_t chunk(std::size_t row) const { return chunks_[row]; }
  SeqId seq(std::size_t row) const { return seqs_[row]; }
  // The position of the token whose logits the row reads.
  int32_t read_position(std::size_t row) const { return read_positions_[row]; }
  // The prompt token a prompt row scores; -1 for a row that samples.
  TokenId prompt_target(std::size_t row) const { return prompt_targets_[row]; }
  int32_t top_width() const { return top_width_; }
  // Grammar rows: their allowed masks are made by fill_masks(), which may run on another thread
  // while the model's forward pass runs (nothing else may touch these rows' choices meanwhile). A
  // choice whose grammar cannot go on gets a mask allowing every token and is listed in
  // mask_failures(): the caller finishes it with the message and ignores its token.
  bool has_masks() const { return !mask_jobs_.empty(); }
  void fill_masks();
  struct MaskFailure {
    SeqId seq;
    std::string message;
  };
  const std::vector<MaskFailure>& mask_failures() const { return mask_failures_; }
  uint64_t mask_ns() const { return mask_ns_; }  // spent on grammar masks since clear()
  int32_t num_logits_rows() const { return num_logits_rows_; }

 private:
  struct Extents {  // where a row's arrays live in the step's storage
    std::size_t history_begin = 0, history_end = 0;
    std::size_t bias_begin = 0, bias_end = 0;
    const RequestState* request = nullptr;  // bias straight from the request when no extra entries
    std::size_t mask_begin = SIZE_MAX;       // the row's allowed-token mask in masks_, if any
  };
  std::vector<SampleRow> rows_;
  std::vector<Extents> extents_;
  std::vector<std::size_t> chunks_;
  std::vector<SeqId> seqs_;
  std::vector<int32_t> read_positions_;
  std::vector<TokenId> prompt_targets_;
  std::vector<TokenId> history_;   // every reset row's history, back to back
  std::vector<TokenId> bias_ids_;  // rows whose bias has min_tokens entries added
  std::vector<float> bias_values_;
  std::vector<uint32_t> masks_;    // grammar rows' allowed-token masks, back to back
  std::size_t mask_words_ = 0;
  int32_t vocab_size_ = 0;
  struct MaskJob {
    Choice* choice;
    std::size_t row;
    std::vector<TokenId> ahead;  // drafts to advance a copy of the matcher over first
  };
  // A speculative row's mask: the choice's matcher copied and advanced over the drafts before the
  // row (kept across that choice's rows); when a draft does not continue the grammar, the previous
  // row's mask (the row before rejects that draft, so this row's token is never used).
  void fill_draft_mask(const MaskJob& job, std::span<uint32_t> mask);
  void copy_previous_mask(const MaskJob& job, std::span<uint32_t> mask);
  std::optional<grammar::GrammarMatcher> draft_matcher_;
  const Choice* draft_choice_ = nullptr;
  std::size_t draft_applied_ = 0;
  bool draft_ok_ = true;
  std::vector<MaskJob> mask_jobs_;
  std::vector<MaskFailure> mask_failures_;
  uint64_t mask_ns_ = 0;
  int32_t top_width_ = 0;
  int32_t num_logits_rows_ = 0;
};


}  // namespace llaisys::engine_detail
