// The mock model through the real plugin path (dlopen + C table + AnyModel).

#include <algorithm>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/model/registry.hpp"
#include "temp_dir.hpp"

using namespace llaisys;

namespace {

struct SeqChunk {
  std::vector<TokenId> tokens;
  int32_t start = 0;  // position of tokens[0]
  std::vector<BlockId> table;
};

// Runs one batch over `chunks`; returns one logits row per chunk (its last token).
Result<std::vector<std::vector<float>>> run(AnyModel& model, const std::vector<SeqChunk>& chunks,
                                            OutputKind kind = OutputKind::logits) {
  std::vector<TokenId> tokens;
  std::vector<int32_t> positions, seqs, outputs, lens;
  std::vector<const BlockId*> tables;
  for (std::size_t s = 0; s < chunks.size(); ++s) {
    for (std::size_t i = 0; i < chunks[s].tokens.size(); ++i) {
      tokens.push_back(chunks[s].tokens[i]);
      positions.push_back(chunks[s].start + static_cast<int32_t>(i));
      seqs.push_back(static_cast<int32_t>(s));
    }
    outputs.push_back(static_cast<int32_t>(tokens.size()) - 1);
    tables.push_back(chunks[s].table.data());
    lens.push_back(static_cast<int32_t>(chunks[s].table.size()));
  }
  const auto width = static_cast<std::size_t>(model.info().output_width(kind));
  std::vector<float> out(outputs.size() * width);
  LLAISYS_RETURN_IF_ERROR(model.forward({.token_ids = tokens,
                                         .positions = positions,
                                         .seq_indices = seqs,
                                         .block_tables = tables,
                                         .block_table_lens = lens,
                                         .output_token_indices = outputs,
                                         .output_kind = kind},
                                        out));
  std::vector<std::vector<float>> rows;
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    rows.emplace_back(out.begin() + static_cast<std::ptrdiff_t>(r * width),
                      out.begin() + static_cast<std::ptrdiff_t>((r + 1) * width));
  }
  return rows;
}

struct MockFixture {
  test::TempDir dir;
  PluginRegistry registry;
  MockFixture() { registry.load_directory(LLAISYS_PLUGIN_DIR); }
  AnyModel open(const std::string& config, const std::string& options = "{}") {
    dir.write("config.json", config);
    auto model = registry.open_model({.model_dir = dir.path(), .options_json = options});
    REQUIRE(model.ok());
    REQUIRE(model->init_kv_cache({.num_blocks = 16, .block_size = 4}).ok());
    return std::move(model).value();
  }
};

constexpr const char* kConfig = R"({"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 97,
  "hidden_size": 8, "max_position_embeddings": 64, "eos_token_id": [5, 6]})";

}  // namespace

TEST_CASE("mock model info comes from config.json") {
  MockFixture f;
  AnyModel model = f.open(kConfig);
  CHECK(model.info().architecture == "LlaisysMockForCausalLM");
  CHECK(model.info().vocab_size == 97);
  CHECK(model.info().hidden_size == 8);
  CHECK(model.info().max_context == 64);
  CHECK(model.info().eos_token_ids == std::vector<TokenId>{5, 6});
}

TEST_CASE("mock logits depend on the whole prefix, not on the batch or its chunking") {
  MockFixture f;
  AnyModel model = f.open(kConfig);
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7};

  // Whole prompt in one pass.
  auto whole = run(model, {{prompt, 0, {0, 1}}});
  REQUIRE(whole.ok());
  // Token by token into other blocks, with an unrelated sequence in the same batches.
  std::vector<float> last;
  for (int32_t p = 0; p < 7; ++p) {
    auto rows = run(model, {{{prompt[static_cast<std::size_t>(p)]}, p, {2, 3}}, {{9}, p, {4, 5}}});
    REQUIRE(rows.ok());
    last = rows.value()[0];
  }
  CHECK(last == whole.value()[0]);

  // A different earlier token changes the logits.
  std::vector<TokenId> other = prompt;
  other[0] = 11;
  auto changed = run(model, {{other, 0, {6, 7}}});
  REQUIRE(changed.ok());
  CHECK(changed.value()[0] != whole.value()[0]);
}

TEST_CASE("mock model reuses cached blocks and detects missing positions") {
  MockFixture f;
  AnyModel model = f.open(kConfig);
  const std::vector<TokenId> prompt{8, 7, 6, 5, 4, 3};
  auto full = run(model, {{prompt, 0, {0, 1}}});
  REQUIRE(full.ok());

  // A second sequence shares block 0 (positions 0..3) and computes only positions 4..5.
  auto shared = run(model, {{{4, 3}, 4, {0, 9}}});
  REQUIRE(shared.ok());
  CHECK(shared.value()[0] == full.value()[0]);

  // Starting at position 4 on a fresh block table: position 3 was never written there.
  auto missing = run(model, {{{4, 3}, 4, {10, 11}}});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("position 3 is not in the KV cache"));

  // copy_blocks makes block 12 a copy of block 0.
  const BlockCopy copy{.src = 0, .dst = 12};
  REQUIRE(model.copy_blocks(std::span(&copy, 1)).ok());
  auto copied = run(model, {{{4, 3}, 4, {12, 13}}});
  REQUIRE(copied.ok());
  CHECK(copied.value()[0] == full.value()[0]);
  const BlockCopy bad{.src = 0, .dst = 16};
  CHECK_THAT(model.copy_blocks(std::span(&bad, 1)).message(), Catch::Contains("outside the pool"));
}

TEST_CASE("mock model rejects invalid batches without crashing") {
  MockFixture f;
  AnyModel model = f.open(kConfig);
  auto oov = run(model, {{{97}, 0, {0}}});
  REQUIRE_FALSE(oov.ok());
  CHECK(oov.status().code() == ErrorCode::invalid_argument);
  CHECK_THAT(oov.status().message(), Catch::Contains("outside the vocabulary of 97"));
  auto beyond = run(model, {{{1}, 64, {0}}});
  CHECK_THAT(beyond.status().message(), Catch::Contains("outside the context of 64"));
}

TEST_CASE("mock hidden states, eos period and text vocabulary") {
  MockFixture f;
  AnyModel model = f.open(kConfig, R"({"eos_period": 3, "text_vocab_size": 50})");
  auto hidden = run(model, {{{1, 2}, 0, {0}}}, OutputKind::hidden);
  REQUIRE(hidden.ok());
  REQUIRE(hidden.value()[0].size() == 8);
  for (float v : hidden.value()[0]) CHECK((v >= -1.0f && v <= 1.0f));

  // Generate greedily; EOS (5) must win sometimes, ids >= 50 never.
  int eos_count = 0;
  for (TokenId start = 0; start < 30; ++start) {
    auto rows = run(model, {{{start}, 0, {static_cast<BlockId>(1 + start % 15)}}});
    REQUIRE(rows.ok());
    const auto& row = rows.value()[0];
    const auto best = std::max_element(row.begin(), row.end()) - row.begin();
    CHECK(best < 50);
    if (best == 5) ++eos_count;
    CHECK(*std::max_element(row.begin() + 50, row.end()) == -30.0f);
  }
  CHECK(eos_count > 0);
  CHECK(eos_count < 30);
}

TEST_CASE("mock config errors are reported, not crashes") {
  MockFixture f;
  f.dir.write("config.json", R"({"architectures": ["LlaisysMockForCausalLM"], "vocab_size": "big"})");
  auto model = f.registry.open_model({.model_dir = f.dir.path()});
  REQUIRE_FALSE(model.ok());
  CHECK_THAT(model.status().message(), Catch::Contains("'vocab_size' must be an integer"));
  CHECK_THAT(model.status().message(), Catch::Contains("plugin 'mock' loading"));
  f.dir.write("config.json", kConfig);
  auto cuda = f.registry.open_model({.model_dir = f.dir.path(), .device = Device::cuda(0)});
  CHECK(cuda.status().code() == ErrorCode::unsupported);
  auto bad_options = f.registry.open_model({.model_dir = f.dir.path(), .options_json = "[1]"});
  CHECK_THAT(bad_options.status().message(), Catch::Contains("options must be a JSON object"));
}

TEST_CASE("mock sliding window: the logits depend on exactly the tokens inside the window") {
  MockFixture f;
  AnyModel windowed = f.open(kConfig, R"({"sliding_window": 3})");
  CHECK(windowed.info().sliding_window == 3);
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7};
  auto whole = run(windowed, {{prompt, 0, {0, 1}}});
  REQUIRE(whole.ok());

  // A window-less mock fed only the last 3 tokens (positions 4..6) gives the same row ...
  MockFixture g;
  AnyModel full = g.open(kConfig);
  CHECK(full.info().sliding_window == 0);
  auto last3 = run(full, {{{5, 6, 7}, 0, {0}}});
  REQUIRE(last3.ok());
  CHECK(last3.value()[0] == whole.value()[0]);
  // ... unlike full attention over all 7.
  auto all7 = run(full, {{prompt, 0, {1, 2}}});
  REQUIRE(all7.ok());
  CHECK(all7.value()[0] != whole.value()[0]);

  // Tokens before the window change nothing; a token inside it does.
  std::vector<TokenId> early = prompt;
  early[0] = 11;
  early[3] = 12;
  auto same = run(windowed, {{early, 0, {2, 3}}});
  REQUIRE(same.ok());
  CHECK(same.value()[0] == whole.value()[0]);
  std::vector<TokenId> late = prompt;
  late[4] = 12;
  auto changed = run(windowed, {{late, 0, {4, 5}}});
  REQUIRE(changed.ok());
  CHECK(changed.value()[0] != whole.value()[0]);

  // Token by token, in another batch mix, the same.
  std::vector<float> last;
  for (int32_t p = 0; p < 7; ++p) {
    auto rows = run(windowed, {{{9}, p, {10, 11}}, {{prompt[static_cast<std::size_t>(p)]}, p, {6, 7}}});
    REQUIRE(rows.ok());
    last = rows.value()[1];
  }
  CHECK(last == whole.value()[0]);
}

TEST_CASE("mock sliding window: blocks before the window may be given back, the window's may not") {
  MockFixture f;
  AnyModel model = f.open(kConfig, R"({"sliding_window": 3})");
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9};
  REQUIRE(run(model, {{prompt, 0, {0, 1, 2}}}).ok());
  // Position 9 reads 7..9: blocks 1 and 2; block 0 is no longer needed.
  auto decode = run(model, {{{10}, 9, {kNoBlock, 1, 2}}});
  REQUIRE(decode.ok());
  std::vector<TokenId> all = prompt;
  all.push_back(10);
  auto fresh = run(model, {{all, 0, {4, 5, 6}}});
  REQUIRE(fresh.ok());
  CHECK(decode.value()[0] == fresh.value()[0]);

  auto hole = run(model, {{{10}, 9, {kNoBlock, kNoBlock, 2}}});
  REQUIRE_FALSE(hole.ok());
  CHECK(hole.status().code() == ErrorCode::invalid_argument);
  CHECK_THAT(hole.status().message(), Catch::Contains("block table entry 1 is -1"));
  // A window position never written is caught as before.
  auto missing = run(model, {{{10}, 9, {kNoBlock, 8, 2}}});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("position 7 is not in the KV cache"));
  // Without a window -1 stays an error.
  MockFixture g;
  AnyModel full = g.open(kConfig);
  REQUIRE(run(full, {{prompt, 0, {0, 1, 2}}}).ok());
  CHECK_THAT(run(full, {{{10}, 9, {kNoBlock, 1, 2}}}).status().message(), Catch::Contains("block -1 outside"));
}

TEST_CASE("mock sliding window option errors") {
  MockFixture f;
  f.dir.write("config.json", kConfig);
  auto negative = f.registry.open_model({.model_dir = f.dir.path(), .options_json = R"({"sliding_window": -2})"});
  CHECK_THAT(negative.status().message(), Catch::Contains("'sliding_window' must be in [0, 2^31)"));
  auto text = f.registry.open_model({.model_dir = f.dir.path(), .options_json = R"({"sliding_window": "4"})"});
  CHECK_THAT(text.status().message(), Catch::Contains("'sliding_window' must be an integer"));
  auto scripted = f.registry.open_model(
      {.model_dir = f.dir.path(), .options_json = R"({"sliding_window": 1, "replies": [{"ids": [3]}]})"});
  CHECK_THAT(scripted.status().message(), Catch::Contains("sliding_window of 0 or >= 2"));
  // From config.json's "mock" object too.
  f.dir.write("config.json", R"({"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 97,
    "hidden_size": 8, "max_position_embeddings": 64, "mock": {"sliding_window": 5}})");
  auto from_config = f.registry.open_model({.model_dir = f.dir.path()});
  REQUIRE(from_config.ok());
  CHECK(from_config->info().sliding_window == 5);
}
