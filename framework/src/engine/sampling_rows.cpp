#include "sampling_rows.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <new>
#include <string>

#include "llaisys/sampling/philox.hpp"

namespace llaisys::engine_detail {

SeqSlots::SeqSlots(int32_t num_slots) : num_slots_(std::max(num_slots, 0)) {
  for (int32_t s = num_slots_ - 1; s >= 0; --s) free_.push_back(s);
}

std::optional<int32_t> SeqSlots::acquire() {
  if (free_.empty()) return std::nullopt;
  const int32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void SeqSlots::release(int32_t slot) {
  if (slot >= 0 && slot < num_slots_) free_.push_back(slot);
}

void SamplingRows::clear() {
  rows_.clear();
  extents_.clear();
  chunks_.clear();
  seqs_.clear();
  read_positions_.clear();
  prompt_targets_.clear();
  history_.clear();
  bias_ids_.clear();
  bias_values_.clear();
  top_width_ = 0;
  num_logits_rows_ = 0;
  masks_.clear();
  mask_jobs_.clear();
  mask_failures_.clear();
  mask_ns_ = 0;
}

Status SamplingRows::add(RequestState& r, Choice& c, std::size_t chunk, int32_t position, const ModelInfo& info,
                         SeqSlots& slots, std::span<const TokenId> ahead, bool keep_logits) {
  const SamplingParams& p = r.request.sampling;
  const StopConditions& stop = r.request.stop;
  SampleRow row{.temperature = p.temperature,
                .top_k = p.top_k,
                .top_p = p.top_p,
                .min_p = p.min_p,
                .repetition_penalty = p.repetition_penalty,
                .presence_penalty = p.presence_penalty,
                .frequency_penalty = p.frequency_penalty,
                .seed = c.seed,
                .counter = static_cast<uint64_t>(position),
                .num_top_logprobs = p.num_logprobs};
  Extents extents;
  if (c.matcher) {
    mask_words_ = allowed_mask_words(info.vocab_size);
    vocab_size_ = info.vocab_size;
  }
  if (row.has_penalties()) {
    if (c.slot < 0) {
      const std::optional<int32_t> slot = slots.acquire();
      if (!slot) {
        return make_error(ErrorCode::resource_exhausted, "all {} sequence slots of the model are taken",
                          slots.num_slots());
      }
      c.slot = *slot;
      row.reset_slot = true;
      row.num_history_prompt = static_cast<int32_t>(r.request.prompt_ids.size());
      extents.history_begin = history_.size();
      history_.insert(history_.end(), r.request.prompt_ids.begin(), r.request.prompt_ids.end());
      history_.insert(history_.end(), c.output_ids.begin(), c.output_ids.end());
      extents.history_end = history_.size();
    }
    row.seq_slot = c.slot;
  }
  if (c.num_output_tokens + static_cast<int32_t>(ahead.size()) < stop.min_tokens) {  // too early to stop: EOS and stop ids are forbidden
    extents.bias_begin = bias_ids_.size();
    bias_ids_.insert(bias_ids_.end(), r.bias_ids.begin(), r.bias_ids.end());
    bias_values_.insert(bias_values_.end(), r.bias_values.begin(), r.bias_values.end());
    auto forbid = [&](TokenId id) {
      bias_ids_.push_back(id);
      bias_values_.push_back(-std::numeric_limits<float>::infinity());
    };
    if (!stop.ignore_eos) std::for_each(info.eos_token_ids.begin(), info.eos_token_ids.end(), forbid);
    std::for_each(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), forbid);
    extents.bias_end = bias_ids_.size();
  } else {
    extents.request = &r;
  }
  if (p.num_top_logits > 0 || keep_logits) row.logits_row = num_logits_rows_++;
  top_width_ = std::max(top_width_, p.num_logprobs);
  rows_.push_back(row);
  if (c.matcher) {  // written by fill_masks(), maybe while the model's forward pass runs
    extents.mask_begin = masks_.size();
    masks_.resize(masks_.size() + mask_words_);
    mask_jobs_.push_back(MaskJob{.choice = &c, .row = rows_.size() - 1, .ahead = {ahead.begin(), ahead.end()}});
  }
  extents_.push_back(extents);
  chunks_.push_back(chunk);
  seqs_.push_back(c.seq);
  read_positions_.push_back(position - 1);
  prompt_targets_.push_back(-1);
  return Status();
}

void SamplingRows::add_prompt_row(std::size_t chunk, SeqId seq, int32_t position, TokenId target) {
  rows_.push_back(SampleRow{.counter = static_cast<uint64_t>(position) + 1, .logits_row = num_logits_rows_++});
  extents_.emplace_back();
  chunks_.push_back(chunk);
  seqs_.push_back(seq);
  read_positions_.push_back(position);
  prompt_targets_.push_back(target);
}

void SamplingRows::finish() {
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    SampleRow& row = rows_[i];
    const Extents& e = extents_[i];
    if (row.reset_slot) {
      row.history = std::span<const TokenId>(history_).subspan(e.history_begin, e.history_end - e.history_begin);
    }
    if (e.mask_begin != SIZE_MAX) row.allowed = std::span<const uint32_t>(masks_).subspan(e.mask_begin, mask_words_);
    if (e.request != nullptr) {
      row.logit_bias_ids = e.request->bias_ids;
      row.logit_bias_values = e.request->bias_values;
    } else {
      row.logit_bias_ids = std::span<const TokenId>(bias_ids_).subspan(e.bias_begin, e.bias_end - e.bias_begin);
      row.logit_bias_values = std::span<const float>(bias_values_).subspan(e.bias_begin, e.bias_end - e.bias_begin);
    }
  }
}

void SamplingRows::fill_draft_mask(const MaskJob& job, std::span<uint32_t> mask) {
  if (draft_choice_ != job.choice || !draft_matcher_ || draft_applied_ > job.ahead.size()) {
    draft_matcher_.emplace(job.choice->matcher->clone());
    draft_choice_ = job.choice;
    draft_applied_ = 0;
    draft_ok_ = true;
  }
  for (; draft_applied_ < job.ahead.size(); ++draft_applied_) {
    draft_ok_ = draft_ok_ && draft_matcher_->accept(job.ahead[draft_applied_]) && !draft_matcher_->limit_reached();
  }
  if (draft_ok_) {
    draft_matcher_->fill_mask(mask);
    if (std::any_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0u; })) return;
  }
  copy_previous_mask(job, mask);
}

void SamplingRows::copy_previous_mask(const MaskJob& job, std::span<uint32_t> mask) {
  // The rows of one choice's chunk are consecutive jobs, so the previous job is the row before.
  const std::size_t before = extents_[job.row - 1].mask_begin;
  std::copy_n(masks_.begin() + static_cast<std::ptrdiff_t>(before), mask_words_, mask.begin());
}

void SamplingRows::fill_masks() {
  const auto start = std::chrono::steady_clock::now();
  draft_choice_ = nullptr;
  for (const MaskJob& job : mask_jobs_) {
    const std::span<uint32_t> mask(masks_.data() + extents_[job.row].mask_begin, mask_words_);
    if (!job.ahead.empty()) {
      try {
        fill_draft_mask(job, mask);
      } catch (const std::bad_alloc&) {  // the draft's row is never used if the row before fails
        copy_previous_mask(job, mask);
      }
      continue;
    }
    std::string failure;
    try {
      grammar::GrammarMatcher& matcher = *job.choice->matcher;
      matcher.fill_mask(mask);
      if (matcher.limit_reached()) {
        failure = "structured output: the grammar's parse passed its limits (too ambiguous or too deeply nested)";
      } else if (std::none_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0u; })) {
        failure = "structured output: no token of the vocabulary can continue the grammar";
      }
    } catch (const std::bad_alloc&) {
      failure = "structured output: out of memory computing the token mask";
    }
    if (!failure.empty()) {
      // The row must still be a valid one (the model samples it); its token is never used.
      std::fill(mask.begin(), mask.end(), ~0u);
      if (const std::size_t tail = static_cast<std::size_t>(vocab_size_) % 32; tail != 0) mask.back() = (1u << tail) - 1u;
      mask_failures_.push_back(MaskFailure{.seq = seqs_[job.row], .message = std::move(failure)});
    }
  }
  mask_ns_ += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace llaisys::engine_detail
