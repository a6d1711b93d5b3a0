// Sampling inside the qwen2 plugin's step (plugin ABI v2): through the C table, rows of every
// sampler setting, masked and unmasked, in one batch, give exactly what the framework's StepSampler
// gives on the raw logits of the same batch; masked rows only ever pick allowed tokens; a slot's
// penalty counts persist across steps; asked-for raw rows and logprobs come back.

#include <catch2/catch.hpp>
#include <cmath>

#include "llaisys/sampling/step_sampler.hpp"
#include "tiny_model.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

constexpr int32_t kSeqs = 16;
constexpr int32_t kPrompt = 9;

std::vector<TokenId> prompt_of(int32_t seq, int32_t vocab) {
  std::vector<TokenId> tokens;
  for (int32_t i = 0; i < kPrompt; ++i) tokens.push_back((seq * 37 + i * 11 + 5) % vocab);
  return tokens;
}

// Rows cycling through the sampler's settings; odd sequences also get the mask.
SampleRow row_for(int32_t seq, uint64_t counter, std::span<const uint32_t> mask,
                  std::span<const TokenId> bias_ids, std::span<const float> bias_values) {
  SampleRow row{.seed = 1000u + static_cast<uint64_t>(seq), .counter = counter};
  switch ((seq / 2) % 8) {
    case 0: break;  // greedy
    case 1: row.temperature = 1.0f; break;
    case 2: row.temperature = 0.8f, row.top_k = 5; break;
    case 3: row.temperature = 1.2f, row.top_p = 0.7f; break;
    case 4: row.temperature = 1.0f, row.min_p = 0.2f; break;
    case 5:
      row.temperature = 0.7f, row.repetition_penalty = 1.3f, row.presence_penalty = 0.5f, row.frequency_penalty = 0.4f;
      break;
    case 6:
      row.repetition_penalty = 2.0f;  // greedy with penalties
      break;
    case 7:
      row.temperature = 0.9f, row.logit_bias_ids = bias_ids, row.logit_bias_values = bias_values;
      break;
  }
  if (row.has_penalties()) row.seq_slot = seq;
  if (seq % 2 == 1) row.allowed = mask;
  row.num_top_logprobs = seq % 3 == 0 ? 3 : -1;
  return row;
}

struct Batch {
  std::vector<TokenId> tokens;
  std::vector<int32_t> positions, seqs, outputs, lens;
  std::vector<std::vector<BlockId>> tables;
  std::vector<const BlockId*> table_ptrs;
  ForwardBatch view() const {
    return {.token_ids = tokens,
            .positions = positions,
            .seq_indices = seqs,
            .block_tables = table_ptrs,
            .block_table_lens = lens,
            .output_token_indices = outputs,
            .output_kind = OutputKind::logits};
  }
};

// Sequence s at positions [start, start + tokens.size()) in blocks s*4..s*4+3.
Batch make_batch(const std::vector<std::vector<TokenId>>& per_seq, int32_t start) {
  Batch b;
  for (std::size_t s = 0; s < per_seq.size(); ++s) {
    for (std::size_t i = 0; i < per_seq[s].size(); ++i) {
      b.tokens.push_back(per_seq[s][i]);
      b.positions.push_back(start + static_cast<int32_t>(i));
      b.seqs.push_back(static_cast<int32_t>(s));
    }
    b.outputs.push_back(static_cast<int32_t>(b.tokens.size()) - 1);
    b.tables.push_back(block_range(static_cast<BlockId>(s * 4), 4));
  }
  for (const auto& t : b.tables) {
    b.table_ptrs.push_back(t.data());
    b.lens.push_back(static_cast<int32_t>(t.size()));
  }
  return b;
}

struct Outputs {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  std::vector<float> rows;
  StepOutput view(int32_t width) {
    return {.tokens = tokens, .logprobs = logprobs, .top_width = width, .top_ids = top_ids,
            .top_logprobs = top_logprobs, .rows = rows};
  }
  Outputs(std::size_t n, int32_t width, std::size_t raw_rows, int32_t vocab)
      : tokens(n, -1), logprobs(n), top_ids(n * static_cast<std::size_t>(width), -1),
        top_logprobs(n * static_cast<std::size_t>(width)), rows(raw_rows * static_cast<std::size_t>(vocab)) {}
};

bool allowed(std::span<const uint32_t> mask, TokenId t) {
  return (mask[static_cast<std::size_t>(t) / 32] >> (static_cast<uint32_t>(t) % 32) & 1u) != 0;
}

}  // namespace

TEST_CASE("qwen2 samples inside its step exactly as StepSampler on the raw logits, masks honoured") {
  AnyModel model = open_model(tiny_model_dir());
  const int32_t vocab = model.info().vocab_size;
  REQUIRE(model.init_kv_cache({.num_blocks = 4 * kSeqs, .block_size = 16, .num_seq_slots = kSeqs}).ok());
  StepSampler reference(vocab);
  reference.init_slots(kSeqs);

  // The mask allows 24 scattered ids; the bias pushes a disallowed id (1) to the top.
  std::vector<uint32_t> mask(allowed_mask_words(vocab), 0u);
  for (int32_t i = 0; i < 24; ++i) {
    const auto t = static_cast<uint32_t>((i * 131 + 7) % vocab);
    mask[t / 32] |= 1u << (t % 32);
  }
  const std::vector<TokenId> bias_ids{1, 2};
  const std::vector<float> bias_values{50.0f, -std::numeric_limits<float>::infinity()};

  std::vector<std::vector<TokenId>> history(kSeqs);
  std::vector<std::vector<TokenId>> next(kSeqs);
  for (int32_t s = 0; s < kSeqs; ++s) next[static_cast<std::size_t>(s)] = prompt_of(s, vocab);
  int32_t start = 0;
  for (int step = 0; step < 6; ++step) {
    const Batch batch = make_batch(next, start);
    const uint64_t counter = static_cast<uint64_t>(start) + next[0].size();
    std::vector<SampleRow> rows;
    for (int32_t s = 0; s < kSeqs; ++s) {
      SampleRow row = row_for(s, counter, mask, bias_ids, bias_values);
      if (row.seq_slot >= 0 && step == 0) {  // the slot learns the prompt once
        row.reset_slot = true;
        row.history = next[static_cast<std::size_t>(s)];
        row.num_history_prompt = kPrompt;
      }
      row.logits_row = s < 2 ? s : -1;
      rows.push_back(row);
    }
    // The raw logits of the same batch (recomputing the same positions writes the same K/V).
    std::vector<float> raw(static_cast<std::size_t>(kSeqs) * static_cast<std::size_t>(vocab));
    REQUIRE(model.forward(batch.view(), raw).ok());

    Outputs got(kSeqs, 3, 2, vocab);
    REQUIRE(model.step(batch.view(), rows, got.view(3)).ok());
    Outputs want(kSeqs, 3, 2, vocab);
    std::vector<float> scratch = raw;
    reference.sample(scratch, rows, want.view(3));

    CHECK(got.tokens == want.tokens);
    CHECK(got.top_ids == want.top_ids);
    for (int32_t s = 0; s < kSeqs; ++s) {
      const auto i = static_cast<std::size_t>(s);
      INFO("step " << step << " sequence " << s);
      if (s % 2 == 1) CHECK(allowed(mask, got.tokens[i]));
      if (rows[i].num_top_logprobs >= 0) CHECK(got.logprobs[i] == want.logprobs[i]);
      if ((s / 2) % 8 == 7) CHECK(got.tokens[i] != 2);  // biased to -inf
    }
    // Raw rows asked for come back untouched by penalties or masks.
    CHECK(std::equal(got.rows.begin(), got.rows.end(), raw.begin()));
    for (int32_t s = 0; s < kSeqs; ++s) {
      const auto i = static_cast<std::size_t>(s);
      history[i].push_back(got.tokens[i]);
      next[i] = {got.tokens[i]};
    }
    start = static_cast<int32_t>(counter);
  }
  // Penalised slots hold what they were told plus every token sampled since.
  for (int32_t s = 0; s < kSeqs; ++s) {
    if (!row_for(s, 0, mask, bias_ids, bias_values).has_penalties()) continue;
    int64_t counted = 0;
    for (const auto& [token, count] : reference.slot(s).output) counted += count;
    CHECK(counted == 6);
  }
}

TEST_CASE("qwen2: the same seeded row gives the same token alone and among 31 others") {
  AnyModel model = open_model(tiny_model_dir());
  const int32_t vocab = model.info().vocab_size;
  REQUIRE(model.init_kv_cache({.num_blocks = 4 * 32, .block_size = 16, .num_seq_slots = 32}).ok());
  std::vector<std::vector<TokenId>> prompts;
  for (int32_t s = 0; s < 32; ++s) prompts.push_back(prompt_of(s, vocab));
  const SampleRow row{.temperature = 1.0f, .top_p = 0.9f, .seed = 77, .counter = kPrompt};
  auto sample = [&](const std::vector<std::vector<TokenId>>& seqs, std::size_t target) {
    const Batch batch = make_batch(seqs, 0);
    std::vector<SampleRow> rows(seqs.size());
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      rows[s] = SampleRow{.temperature = 0.5f + 0.05f * static_cast<float>(s), .seed = s, .counter = kPrompt};
    }
    rows[target] = row;
    Outputs out(seqs.size(), 0, 0, vocab);
    REQUIRE(model.step(batch.view(), rows, out.view(0)).ok());
    return out.tokens[target];
  };
  const TokenId alone = sample({prompts[5]}, 0);
  CHECK(sample(prompts, 5) == alone);
  std::vector<std::vector<TokenId>> reversed(prompts.rbegin(), prompts.rend());
  CHECK(sample(reversed, 26) == alone);
}
