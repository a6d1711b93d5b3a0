#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/model/model.hpp"

using namespace llaisys;

namespace {

struct BatchFixture {
  ModelInfo info;
  KvCacheConfig kv{.num_blocks = 4, .block_size = 4};
  std::vector<TokenId> tokens{1, 2, 3, 7};
  std::vector<int32_t> positions{0, 1, 2, 5};
  std::vector<int32_t> seqs{0, 0, 0, 1};
  std::vector<BlockId> table0{0};
  std::vector<BlockId> table1{1, 2};
  std::vector<const BlockId*> tables{table0.data(), table1.data()};
  std::vector<int32_t> table_lens{1, 2};
  std::vector<int32_t> outputs{2, 3};

  BatchFixture() {
    info.vocab_size = 10;
    info.hidden_size = 3;
    info.max_context = 64;
  }
  ForwardBatch batch() const {
    return {.token_ids = tokens,
            .positions = positions,
            .seq_indices = seqs,
            .block_tables = tables,
            .block_table_lens = table_lens,
            .output_token_indices = outputs,
            .output_kind = OutputKind::logits};
  }
  Status validate(std::size_t out_len = 20) const {
    std::vector<float> rows(out_len);
    return validate_step(batch(), {}, StepOutput{.rows = rows}, info, kv);
  }
};

}  // namespace

TEST_CASE("a well-formed batch validates and round-trips through the C struct") {
  BatchFixture f;
  CHECK(f.validate().ok());
  auto back = ForwardBatch::from_c(f.batch().to_c());
  REQUIRE(back.ok());
  CHECK(back->num_tokens() == 4);
  CHECK(back->block_table(1)[1] == 2);
  CHECK(back->output_kind == OutputKind::logits);
}

TEST_CASE("batch validation names each problem") {
  BatchFixture f;
  SECTION("token outside the vocabulary") {
    f.tokens[1] = 10;
    CHECK(f.validate().message() == "token 1: id 10 outside the vocabulary of 10");
  }
  SECTION("position not covered by the block table") {
    f.positions = {0, 1, 2, 8};
    CHECK(f.validate().message() == "token 3: position 8 needs block 2 but sequence 1 has 2 blocks");
  }
  SECTION("block outside the pool") {
    f.table1[1] = 4;
    CHECK(f.validate().message() == "sequence 1: block 4 outside the KV pool of 4 blocks");
  }
  SECTION("non-consecutive positions") {
    f.positions = {0, 2, 3, 5};
    CHECK(f.validate().message() ==
          "token 1: sequence 0 jumps from position 0 to 2 (positions must be consecutive within a batch)");
  }
  SECTION("output index out of range") {
    f.outputs = {4};
    CHECK(f.validate(10).message() == "output index 4 outside [0, 4)");
  }
  SECTION("output buffer of the wrong size") {
    CHECK(f.validate(19).message() == "output buffer holds 19 floats, the batch needs 20");
  }
  SECTION("position beyond the context") {
    f.info.max_context = 5;
    CHECK(f.validate().message() == "token 3: position 5 outside the context of 5");
  }
  SECTION("sequence index out of range") {
    f.seqs[0] = 2;
    CHECK(f.validate().message() == "token 0: sequence index 2 outside [0, 2)");
  }
}

TEST_CASE("from_c rejects negative counts and NULL arrays") {
  llaisys_forward_batch c{};
  c.num_tokens = -1;
  CHECK_FALSE(ForwardBatch::from_c(c).ok());
  c.num_tokens = 2;
  CHECK(ForwardBatch::from_c(c).status().message() == "batch token arrays are NULL");
  c = {};
  c.output_kind = 7;
  CHECK(ForwardBatch::from_c(c).status().message() == "unknown output kind 7");
}

TEST_CASE("with a sliding window, entries wholly before every token's window may be kNoBlock") {
  BatchFixture f;
  auto set_table1 = [&f](std::vector<BlockId> table) {
    f.table1 = std::move(table);
    f.tables = {f.table0.data(), f.table1.data()};
    f.table_lens = {1, static_cast<int32_t>(f.table1.size())};
  };
  // Sequence 1's token sits at position 9 (block 2) and reads positions 4..9 (blocks 1 and 2).
  f.positions = {0, 1, 2, 9};
  set_table1({kNoBlock, 2, 3});
  SECTION("without a window kNoBlock is an id outside the pool") {
    CHECK(f.validate().message() == "sequence 1: block -1 outside the KV pool of 4 blocks");
  }
  f.info.sliding_window = 6;
  SECTION("block 0 ends before position 4: it may be given back") {
    CHECK(f.validate().ok());
  }
  SECTION("a block the window reads must be valid") {
    set_table1({kNoBlock, kNoBlock, 3});
    CHECK(f.validate().message() ==
          "sequence 1: block table entry 1 is -1 (no block) but is not wholly before the window of position "
          "9 (sliding window 6)");
  }
  SECTION("the block a token writes must be valid") {
    set_table1({kNoBlock, 2, kNoBlock});
    CHECK_FALSE(f.validate().ok());
  }
  SECTION("the earliest token of the sequence in the batch decides") {
    // Tokens at 3..9 (a chunk): token 3 reads 0..3, so block 0 is needed again.
    f.tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1};
    f.positions = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    f.seqs = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    f.outputs = {2, 9};
    CHECK_THAT(f.validate().message(), Catch::Contains("block table entry 0 is -1"));
    set_table1({1, 2, 3});
    CHECK(f.validate().ok());
  }
  SECTION("entries past the last token's block are checked too") {
    set_table1({kNoBlock, 2, 3, kNoBlock});
    CHECK_THAT(f.validate().message(), Catch::Contains("block table entry 3 is -1"));
  }
  SECTION("ids outside the pool stay errors") {
    set_table1({4, 2, 3});
    CHECK(f.validate().message() == "sequence 1: block 4 outside the KV pool of 4 blocks");
    set_table1({-2, 2, 3});
    CHECK(f.validate().message() == "sequence 1: block -2 outside the KV pool of 4 blocks");
  }
}

TEST_CASE("sampling rows are checked before a model sees them, each problem named") {
  BatchFixture f;
  f.kv.num_seq_slots = 2;
  std::vector<SampleRow> rows(2);
  std::vector<int32_t> tokens(2);
  std::vector<float> logprobs(2);
  std::vector<int32_t> top_ids(4);
  std::vector<float> top_logprobs(4);
  std::vector<float> logits(10);
  StepOutput out{.tokens = tokens, .logprobs = logprobs, .top_width = 2, .top_ids = top_ids,
                 .top_logprobs = top_logprobs, .rows = logits};
  auto check = [&] { return validate_step(f.batch(), rows, out, f.info, f.kv); };
  REQUIRE(check().ok());

  SECTION("one row per output row") {
    rows.pop_back();
    CHECK(check().message() == "1 sampling rows for 2 output rows");
  }
  SECTION("hidden-state batches are not sampled") {
    f.outputs = {3};
    rows.pop_back();
    tokens.pop_back();
    out.tokens = tokens;
    out.logprobs = {};
    out.top_width = 0;
    out.top_ids = {};
    out.top_logprobs = {};
    REQUIRE(validate_step(f.batch(), rows, out, f.info, f.kv).ok());
    ForwardBatch hidden = f.batch();
    hidden.output_kind = OutputKind::hidden;
    CHECK(validate_step(hidden, rows, out, f.info, f.kv).message() ==
          "sampling rows need a batch whose outputs are logits");
  }
  SECTION("parameters in range") {
    rows[1].top_p = 0.0f;
    CHECK(check().message() == "sample row 1: top_p must be in (0, 1] (got 0)");
    rows[1].top_p = 1.0f;
    rows[0].temperature = std::numeric_limits<float>::quiet_NaN();
    CHECK_THAT(check().message(), Catch::StartsWith("sample row 0: temperature must be finite"));
  }
  SECTION("penalties need a slot; a slot is named once and exists") {
    rows[0].presence_penalty = 0.5f;
    CHECK(check().message() == "sample row 0: penalties (and reset_slot) need a seq_slot (got -1)");
    rows[0].seq_slot = 1;
    CHECK(check().ok());
    rows[1].seq_slot = 1;
    CHECK(check().message() == "sample row 1: two rows of one step name the same seq_slot (got 1)");
    rows[1].seq_slot = 2;
    CHECK(check().message() == "sample row 1: seq_slot must be -1 or in [0, 2) (got 2)");
  }
  SECTION("a slot reset's history is inside the vocabulary and split sensibly") {
    const std::vector<TokenId> history{1, 2, 10};
    rows[0].seq_slot = 0;
    rows[0].reset_slot = true;
    rows[0].history = history;
    rows[0].num_history_prompt = 4;
    CHECK(check().message() == "sample row 0: num_history_prompt must be in [0, 3] with a non-NULL history (got 4)");
    rows[0].num_history_prompt = 1;
    CHECK(check().message() == "sample row 0: a history token is outside the vocabulary (got 10)");
  }
  SECTION("logit_bias: ids in the vocabulary, values finite or -inf") {
    const std::vector<TokenId> ids{3, 4};
    const std::vector<float> values{1.0f, -std::numeric_limits<float>::infinity()};
    rows[0].logit_bias_ids = ids;
    rows[0].logit_bias_values = values;
    CHECK(check().ok());
    const std::vector<float> bad{1.0f, std::numeric_limits<float>::infinity()};
    rows[0].logit_bias_values = bad;
    CHECK(check().message() == "sample row 0: logit_bias values must be finite or -inf (got inf)");
    const std::vector<TokenId> outside{3, 12};
    rows[0].logit_bias_values = values;
    rows[0].logit_bias_ids = outside;
    CHECK(check().message() == "sample row 0: a logit_bias token is outside the vocabulary (got 12)");
  }
  SECTION("the allowed mask covers the vocabulary and allows something in it") {
    std::vector<uint32_t> mask{0u};
    rows[1].allowed = mask;
    CHECK(check().message() == "sample row 1: the allowed mask allows no token of the vocabulary (got 0)");
    mask[0] = 1u << 12;  // beyond the vocabulary of 10
    CHECK(check().message() == "sample row 1: the allowed mask allows no token of the vocabulary (got 0)");
    mask[0] = 1u << 9;
    CHECK(check().ok());
    std::vector<uint32_t> two{1u, 1u};
    rows[1].allowed = two;
    CHECK(check().message() == "sample row 1: the allowed mask must have 1 words (got 2)");
  }
  SECTION("logprobs fit the output; raw rows go to distinct rows") {
    rows[0].num_top_logprobs = 3;
    CHECK(check().message() == "sample row 0: num_top_logprobs must be in [-1, 2] (got 3)");
    rows[0].num_top_logprobs = 2;
    rows[0].logits_row = 0;
    rows[1].logits_row = 0;
    CHECK(check().message() == "sample row 1: two rows write the same logits_row (got 0)");
    rows[1].logits_row = 1;
    CHECK(check().message() == "sample row 1: logits_row must be -1 or in [0, 1) (got 1)");
  }
  SECTION("C round trip keeps every field; NULL arrays with counts are refused") {
    const std::vector<TokenId> ids{3};
    const std::vector<float> values{2.0f};
    rows[0] = SampleRow{.temperature = 0.7f, .top_k = 5, .top_p = 0.9f, .min_p = 0.1f, .repetition_penalty = 1.1f,
                        .seed = 42, .counter = 7, .seq_slot = 1, .logit_bias_ids = ids, .logit_bias_values = values,
                        .num_top_logprobs = 2};
    llaisys_sample_row c = to_c(rows[0]);
    auto back = sample_row_from_c(c, f.info.vocab_size);
    REQUIRE(back.ok());
    CHECK(back->temperature == 0.7f);
    CHECK(back->seed == 42);
    CHECK(back->counter == 7);
    CHECK(back->seq_slot == 1);
    CHECK(back->logit_bias_ids.size() == 1);
    CHECK(back->num_top_logprobs == 2);
    c.logit_bias_values = nullptr;
    CHECK_FALSE(sample_row_from_c(c, f.info.vocab_size).ok());
  }
}
