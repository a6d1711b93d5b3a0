#include "llaisys/model/step.hpp"

#include <cmath>
#include <vector>

#include "llaisys/model/model.hpp"

namespace llaisys {

llaisys_sample_row to_c(const SampleRow& row) {
  llaisys_sample_row c{};
  c.temperature = row.temperature;
  c.top_k = row.top_k;
  c.top_p = row.top_p;
  c.min_p = row.min_p;
  c.repetition_penalty = row.repetition_penalty;
  c.presence_penalty = row.presence_penalty;
  c.frequency_penalty = row.frequency_penalty;
  c.seed = row.seed;
  c.counter = row.counter;
  c.seq_slot = row.seq_slot;
  c.reset_slot = row.reset_slot ? 1 : 0;
  c.history = row.history.data();
  c.num_history = static_cast<int32_t>(row.history.size());
  c.num_history_prompt = row.num_history_prompt;
  c.num_logit_bias = static_cast<int32_t>(row.logit_bias_ids.size());
  c.logit_bias_ids = row.logit_bias_ids.data();
  c.logit_bias_values = row.logit_bias_values.data();
  c.allowed = row.allowed.empty() ? nullptr : row.allowed.data();
  c.num_top_logprobs = row.num_top_logprobs;
  c.logits_row = row.logits_row;
  return c;
}

Result<SampleRow> sample_row_from_c(const llaisys_sample_row& c, int32_t vocab_size) {
  if (c.num_history < 0 || c.num_logit_bias < 0) {
    return make_error(ErrorCode::invalid_argument, "sample row: negative counts ({} history, {} logit_bias)",
                      c.num_history, c.num_logit_bias);
  }
  if ((c.num_history > 0 && c.history == nullptr) ||
      (c.num_logit_bias > 0 && (c.logit_bias_ids == nullptr || c.logit_bias_values == nullptr))) {
    return Status(ErrorCode::invalid_argument, "sample row: an array with a positive count is NULL");
  }
  SampleRow row{.temperature = c.temperature,
                .top_k = c.top_k,
                .top_p = c.top_p,
                .min_p = c.min_p,
                .repetition_penalty = c.repetition_penalty,
                .presence_penalty = c.presence_penalty,
                .frequency_penalty = c.frequency_penalty,
                .seed = c.seed,
                .counter = c.counter,
                .seq_slot = c.seq_slot,
                .reset_slot = c.reset_slot != 0,
                .history = {c.history, static_cast<std::size_t>(c.num_history)},
                .num_history_prompt = c.num_history_prompt,
                .logit_bias_ids = {c.logit_bias_ids, static_cast<std::size_t>(c.num_logit_bias)},
                .logit_bias_values = {c.logit_bias_values, static_cast<std::size_t>(c.num_logit_bias)},
                .num_top_logprobs = c.num_top_logprobs,
                .logits_row = c.logits_row};
  if (c.allowed != nullptr) row.allowed = {c.allowed, allowed_mask_words(vocab_size)};
  return row;
}

llaisys_step_output to_c(const StepOutput& out) {
  llaisys_step_output c{};
  c.tokens = out.tokens.data();
  c.logprobs = out.logprobs.data();
  c.top_width = out.top_width;
  c.top_ids = out.top_ids.data();
  c.top_logprobs = out.top_logprobs.data();
  c.rows = out.rows.data();
  c.rows_len = out.rows.size();
  c.timings = reinterpret_cast<llaisys_step_timings*>(out.timings);
  return c;
}

Result<StepOutput> step_output_from_c(const llaisys_step_output& c, int32_t num_outputs, bool sampling) {
  if (num_outputs < 0 || c.top_width < 0) {
    return make_error(ErrorCode::invalid_argument, "step output: negative sizes ({} rows, top width {})",
                      num_outputs, c.top_width);
  }
  if (c.rows == nullptr && c.rows_len != 0) return Status(ErrorCode::invalid_argument, "step output: rows is NULL");
  const auto n = static_cast<std::size_t>(num_outputs);
  StepOutput out;
  out.top_width = c.top_width;
  out.rows = {c.rows, static_cast<std::size_t>(c.rows_len)};
  out.timings = reinterpret_cast<StepTimings*>(c.timings);
  if (!sampling) return out;
  if (n > 0 && c.tokens == nullptr) return Status(ErrorCode::invalid_argument, "step output: tokens is NULL");
  out.tokens = {c.tokens, n};
  if (c.logprobs != nullptr) out.logprobs = {c.logprobs, n};
  const std::size_t top = n * static_cast<std::size_t>(c.top_width);
  if (top > 0 && (c.top_ids == nullptr || c.top_logprobs == nullptr)) {
    return Status(ErrorCode::invalid_argument, "step output: top_width > 0 but top arrays are NULL");
  }
  if (top > 0) {
    out.top_ids = {c.top_ids, top};
    out.top_logprobs = {c.top_logprobs, top};
  }
  return out;
}

namespace {

bool allows_some_token(const SampleRow& row, const ModelInfo& info) {
  for (std::size_t w = 0; w < row.allowed.size(); ++w) {
    const uint32_t bits = row.allowed[w];
    const std::size_t first = w * 32;
    const std::size_t valid = std::min<std::size_t>(32, static_cast<std::size_t>(info.vocab_size) - first);
    if ((valid == 32 ? bits : bits & ((1u << valid) - 1u)) != 0) return true;
  }
  return false;
}

Status check_row(const SampleRow& row, std::size_t r, const ModelInfo& info, const KvCacheConfig& kv_config,
                 const StepOutput& out, std::vector<uint8_t>& slot_used, std::vector<uint8_t>& logits_row_used) {
  auto bad = [r](std::string_view what, auto value) {
    return make_error(ErrorCode::invalid_argument, "sample row {}: {} (got {})", r, what, value);
  };
  if (!std::isfinite(row.temperature) || row.temperature < 0.0f) return bad("temperature must be finite and >= 0", row.temperature);
  if (row.top_k < 0) return bad("top_k must be >= 0", row.top_k);
  if (!(row.top_p > 0.0f && row.top_p <= 1.0f)) return bad("top_p must be in (0, 1]", row.top_p);
  if (!(row.min_p >= 0.0f && row.min_p <= 1.0f)) return bad("min_p must be in [0, 1]", row.min_p);
  if (!std::isfinite(row.repetition_penalty) || row.repetition_penalty <= 0.0f) {
    return bad("repetition_penalty must be finite and > 0", row.repetition_penalty);
  }
  if (!std::isfinite(row.presence_penalty) || !std::isfinite(row.frequency_penalty)) {
    return bad("presence and frequency penalties must be finite", row.presence_penalty + row.frequency_penalty);
  }
  if (row.seq_slot < -1 || row.seq_slot >= kv_config.num_seq_slots) {
    return bad(fmt::format("seq_slot must be -1 or in [0, {})", kv_config.num_seq_slots), row.seq_slot);
  }
  if (row.seq_slot >= 0) {
    uint8_t& used = slot_used[static_cast<std::size_t>(row.seq_slot)];
    if (used != 0) return bad("two rows of one step name the same seq_slot", row.seq_slot);
    used = 1;
  } else if (row.has_penalties() || row.reset_slot) {
    return bad("penalties (and reset_slot) need a seq_slot", row.seq_slot);
  }
  if (row.reset_slot) {
    if (row.num_history_prompt < 0 || static_cast<std::size_t>(row.num_history_prompt) > row.history.size()) {
      return bad(fmt::format("num_history_prompt must be in [0, {}] with a non-NULL history", row.history.size()),
                 row.num_history_prompt);
    }
    for (TokenId token : row.history) {
      if (token < 0 || token >= info.vocab_size) return bad("a history token is outside the vocabulary", token);
    }
  }
  if (row.logit_bias_ids.size() != row.logit_bias_values.size()) {
    return bad("logit_bias ids and values must both be given", row.logit_bias_ids.size());
  }
  for (std::size_t i = 0; i < row.logit_bias_ids.size(); ++i) {
    const TokenId token = row.logit_bias_ids[i];
    const float value = row.logit_bias_values[i];
    if (token < 0 || token >= info.vocab_size) return bad("a logit_bias token is outside the vocabulary", token);
    if (!(std::isfinite(value) || value == -std::numeric_limits<float>::infinity())) {
      return bad("logit_bias values must be finite or -inf", value);
    }
  }
  if (!row.allowed.empty()) {
    if (row.allowed.size() != allowed_mask_words(info.vocab_size)) {
      return bad(fmt::format("the allowed mask must have {} words", allowed_mask_words(info.vocab_size)),
                 row.allowed.size());
    }
    if (out.wait_for_masks == nullptr && !allows_some_token(row, info)) {
      return bad("the allowed mask allows no token of the vocabulary", 0);
    }
  }
  if (row.num_top_logprobs < -1 || row.num_top_logprobs > out.top_width || row.num_top_logprobs > info.vocab_size) {
    return bad(fmt::format("num_top_logprobs must be in [-1, {}]", std::min(out.top_width, info.vocab_size)),
               row.num_top_logprobs);
  }
  if (row.num_top_logprobs >= 0 && out.logprobs.empty()) return bad("logprobs asked but the output has none", 0);
  if (row.logits_row < -1 || row.logits_row >= static_cast<int64_t>(logits_row_used.size())) {
    return bad(fmt::format("logits_row must be -1 or in [0, {})", logits_row_used.size()), row.logits_row);
  }
  if (row.logits_row >= 0) {
    uint8_t& used = logits_row_used[static_cast<std::size_t>(row.logits_row)];
    if (used != 0) return bad("two rows write the same logits_row", row.logits_row);
    used = 1;
  }
  return Status();
}

}  // namespace

Status validate_step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out,
                     const ModelInfo& info, const KvCacheConfig& kv_config) {
  LLAISYS_RETURN_IF_ERROR(validate_forward_batch(batch, info, kv_config));
  const auto num_outputs = static_cast<std::size_t>(batch.num_outputs());
  if (sampling.empty()) {
    const std::size_t expected = num_outputs * static_cast<std::size_t>(info.output_width(batch.output_kind));
    if (out.rows.size() != expected) {
      return make_error(ErrorCode::invalid_argument, "output buffer holds {} floats, the batch needs {}",
                        out.rows.size(), expected);
    }
    return Status();
  }
  if (batch.output_kind != OutputKind::logits) {
    return Status(ErrorCode::invalid_argument, "sampling rows need a batch whose outputs are logits");
  }
  if (sampling.size() != num_outputs) {
    return make_error(ErrorCode::invalid_argument, "{} sampling rows for {} output rows", sampling.size(),
                      num_outputs);
  }
  if (out.tokens.size() != num_outputs) {
    return make_error(ErrorCode::invalid_argument, "token output holds {} ids for {} rows", out.tokens.size(),
                      num_outputs);
  }
  if (!out.logprobs.empty() && out.logprobs.size() != num_outputs) {
    return make_error(ErrorCode::invalid_argument, "logprob output holds {} values for {} rows", out.logprobs.size(),
                      num_outputs);
  }
  const std::size_t top = num_outputs * static_cast<std::size_t>(std::max(out.top_width, 0));
  if (out.top_width < 0 || out.top_ids.size() != top || out.top_logprobs.size() != top) {
    return make_error(ErrorCode::invalid_argument, "top logprob outputs must hold {} x {} entries", num_outputs,
                      out.top_width);
  }
  const auto vocab = static_cast<std::size_t>(info.vocab_size);
  if (out.rows.size() % vocab != 0) {
    return make_error(ErrorCode::invalid_argument, "logits output of {} floats is not whole rows of {}",
                      out.rows.size(), vocab);
  }
  std::vector<uint8_t> slot_used(static_cast<std::size_t>(std::max(kv_config.num_seq_slots, 0)), 0);
  std::vector<uint8_t> logits_row_used(out.rows.size() / vocab, 0);
  for (std::size_t r = 0; r < sampling.size(); ++r) {
    LLAISYS_RETURN_IF_ERROR(check_row(sampling[r], r, info, kv_config, out, slot_used, logits_row_used));
  }
  return Status();
}

Status validate_masks(std::span<const SampleRow> sampling, const ModelInfo& info) {
  for (std::size_t r = 0; r < sampling.size(); ++r) {
    if (!sampling[r].allowed.empty() && !allows_some_token(sampling[r], info)) {
      return make_error(ErrorCode::invalid_argument, "sample row {}: the allowed mask allows no token of the vocabulary", r);
    }
  }
  return Status();
}

}  // namespace llaisys
