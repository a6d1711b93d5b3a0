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
    return validate_forward_batch(batch(), info, kv, out_len);
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
