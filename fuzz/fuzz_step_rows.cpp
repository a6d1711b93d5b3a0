// libFuzzer target: a model step's sampling rows as a plugin receives them over the C ABI (ABI 2).
// Arbitrary bytes become llaisys_sample_rows (any float bits, NaN and infinities included, slots,
// histories, bias lists, masks, logprob widths, raw-row indices) and output buffers of arbitrary
// sizes; the adapter's conversion and validate_step must refuse what is wrong with a message, and
// whatever passes must be sampled by StepSampler (two steps, so slots persist) without touching
// memory outside the buffers or tripping UBSan.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_bytes.hpp"
#include "llaisys/model/model.hpp"
#include "llaisys/model/step.hpp"
#include "llaisys/sampling/step_sampler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace llaisys;
  llaisys::fuzz::Bytes in(data, size);
  const int32_t vocab = 1 + static_cast<int32_t>(in.small(80));
  const int32_t num_rows = static_cast<int32_t>(in.small(5));
  const int32_t num_slots = static_cast<int32_t>(in.small(4));
  ModelInfo info;
  info.vocab_size = vocab;
  info.hidden_size = 4;
  info.max_context = 64;
  const KvCacheConfig kv{.num_blocks = 1, .block_size = 64, .num_seq_slots = num_slots};

  std::vector<TokenId> tokens(static_cast<std::size_t>(std::max(num_rows, 1)), 0);
  std::vector<int32_t> positions(tokens.size()), seqs(tokens.size(), 0), outputs;
  for (std::size_t i = 0; i < tokens.size(); ++i) positions[i] = static_cast<int32_t>(i);
  for (int32_t r = 0; r < num_rows; ++r) outputs.push_back(r);
  const BlockId block = 0;
  const BlockId* tables[] = {&block};
  const int32_t lens[] = {1};
  const llaisys_forward_batch c_batch{.num_tokens = static_cast<int32_t>(tokens.size()),
                                      .token_ids = tokens.data(),
                                      .positions = positions.data(),
                                      .seq_indices = seqs.data(),
                                      .num_seqs = 1,
                                      .block_tables = tables,
                                      .block_table_lens = lens,
                                      .num_outputs = num_rows,
                                      .output_token_indices = outputs.data(),
                                      .output_kind = LLAISYS_OUTPUT_LOGITS};

  // Arrays the rows point into (sizes from the input, so counts and arrays may disagree).
  std::vector<std::vector<int32_t>> histories(static_cast<std::size_t>(num_rows));
  std::vector<std::vector<int32_t>> bias_ids(static_cast<std::size_t>(num_rows));
  std::vector<std::vector<float>> bias_values(static_cast<std::size_t>(num_rows));
  std::vector<std::vector<uint32_t>> masks(static_cast<std::size_t>(num_rows));
  std::vector<llaisys_sample_row> c_rows(static_cast<std::size_t>(num_rows));
  for (std::size_t r = 0; r < c_rows.size(); ++r) {
    llaisys_sample_row& c = c_rows[r];
    c.temperature = in.take<float>();
    c.top_k = static_cast<int32_t>(in.small(8)) - 1;
    c.top_p = in.take<float>();
    c.min_p = in.take<float>();
    c.repetition_penalty = in.take<float>();
    c.presence_penalty = in.take<float>();
    c.frequency_penalty = in.take<float>();
    c.seed = in.take<uint64_t>();
    c.counter = in.take<uint64_t>();
    c.seq_slot = static_cast<int32_t>(in.small(6)) - 1;
    c.reset_slot = static_cast<int32_t>(in.small(2));
    for (uint32_t i = 0, n = in.small(12); i < n; ++i) histories[r].push_back(static_cast<int32_t>(in.small(100)) - 2);
    c.history = histories[r].empty() ? nullptr : histories[r].data();
    c.num_history = static_cast<int32_t>(histories[r].size()) + static_cast<int32_t>(in.small(2)) - 1;
    c.num_history_prompt = static_cast<int32_t>(in.small(14)) - 1;
    for (uint32_t i = 0, n = in.small(4); i < n; ++i) {
      bias_ids[r].push_back(static_cast<int32_t>(in.small(100)) - 2);
      bias_values[r].push_back(in.take<float>());
    }
    c.num_logit_bias = static_cast<int32_t>(bias_ids[r].size());
    c.logit_bias_ids = bias_ids[r].empty() ? nullptr : bias_ids[r].data();
    c.logit_bias_values = bias_values[r].empty() ? nullptr : bias_values[r].data();
    if (in.small(2) == 1) {
      // The adapter reads allowed_mask_words(vocab) words from this pointer: give it that many.
      masks[r].resize(allowed_mask_words(vocab));
      for (uint32_t& word : masks[r]) word = in.take<uint32_t>();
      c.allowed = masks[r].data();
    }
    c.num_top_logprobs = static_cast<int32_t>(in.small(6)) - 1;
    c.logits_row = static_cast<int32_t>(in.small(4)) - 1;
  }
  const int32_t top_width = static_cast<int32_t>(in.small(5));
  const auto raw_rows = static_cast<std::size_t>(in.small(3));
  std::vector<int32_t> out_tokens(static_cast<std::size_t>(num_rows) + in.small(2));
  std::vector<float> logprobs(static_cast<std::size_t>(num_rows));
  std::vector<int32_t> top_ids(static_cast<std::size_t>(num_rows * top_width));
  std::vector<float> top_logprobs(top_ids.size());
  std::vector<float> rows(raw_rows * static_cast<std::size_t>(vocab));
  const llaisys_step_output c_out{.tokens = out_tokens.data(),
                                  .logprobs = logprobs.data(),
                                  .top_width = top_width,
                                  .top_ids = top_ids.data(),
                                  .top_logprobs = top_logprobs.data(),
                                  .rows = rows.data(),
                                  .rows_len = rows.size()};

  // The adapter's path (plugin_export.hpp): convert, validate, then sample.
  auto batch = ForwardBatch::from_c(c_batch);
  if (!batch.ok()) return 0;
  auto out = step_output_from_c(c_out, batch->num_outputs(), true);
  if (!out.ok()) return 0;
  std::vector<SampleRow> sample_rows;
  for (const llaisys_sample_row& c : c_rows) {
    auto row = sample_row_from_c(c, vocab);
    if (!row.ok()) return 0;
    sample_rows.push_back(*row);
  }
  if (!validate_step(*batch, sample_rows, *out, info, kv).ok() || sample_rows.empty()) return 0;
  StepSampler sampler(vocab);
  sampler.init_slots(num_slots);
  std::vector<float> logits(static_cast<std::size_t>(num_rows) * static_cast<std::size_t>(vocab));
  for (int step = 0; step < 2; ++step) {
    for (float& l : logits) l = in.take<float>();
    sampler.sample(logits, sample_rows, *out);
    for (std::size_t r = 0; r < sample_rows.size(); ++r) {
      const TokenId token = out->tokens[r];
      if (token < 0 || token >= vocab || !sample_rows[r].is_allowed(token)) __builtin_trap();
      sample_rows[r].reset_slot = false;
    }
  }
  return 0;
}
