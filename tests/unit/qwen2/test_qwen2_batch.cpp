// The invariants the engine relies on, on the tiny model: a sequence's logits do not depend on the
// rest of the batch, on how its prompt is chunked, on the thread count, on the ISA path or on how the
// weights are sharded — bit for bit.

#include <cstring>
#include <fstream>

#include <catch2/catch.hpp>

#include "cpu/cpu_isa.hpp"
#include "reference_cases.hpp"
#include "temp_dir.hpp"
#include "tiny_model.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

std::vector<TokenId> prompt_of(const std::string& name) {
  for (const ReferenceCase& c : reference_cases()) {
    if (c.name == name) return c.prompt_ids;
  }
  throw std::runtime_error("no reference case " + name);
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<TokenId> slice(const std::vector<TokenId>& v, std::size_t begin, std::size_t end) {
  return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace

TEST_CASE("qwen2 logits are bit-identical alone and inside mixed prefill/decode batches", "[qwen2][batch]") {
  const std::vector<TokenId> a = prompt_of("hello");         // 30 tokens
  const std::vector<TokenId> b = prompt_of("multiturn_zh");  // 49 tokens
  const std::vector<TokenId> c = prompt_of("code_emoji");    // 57 tokens
  const TokenId a_next = 1000;

  // A alone: its whole prompt in one pass (a row per position), then one decode step.
  AnyModel alone = open_model(tiny_model_dir());
  const auto a_table = block_range(0, 4);
  const auto a_prefill = run_batch(alone, {{.tokens = a, .start = 0, .table = a_table, .all_outputs = true}});
  const auto a_decode = run_batch(alone, {{.tokens = {a_next}, .start = 30, .table = a_table}});

  // The same sequence among others, in other blocks.
  AnyModel mixed = open_model(tiny_model_dir());
  const auto a_blocks = block_range(20, 4), b_blocks = block_range(4, 5), c_blocks = block_range(10, 5);
  run_batch(mixed, {{.tokens = slice(b, 0, 40), .start = 0, .table = b_blocks}});
  const auto step1 = run_batch(mixed, {{.tokens = slice(b, 40, 41), .start = 40, .table = b_blocks},
                                       {.tokens = a, .start = 0, .table = a_blocks, .all_outputs = true},
                                       {.tokens = slice(c, 0, 20), .start = 0, .table = c_blocks}});
  REQUIRE(step1.size() == 1 + a.size() + 1);
  for (std::size_t p = 0; p < a.size(); ++p) {
    INFO("position " << p);
    CHECK(bit_identical(step1[1 + p], a_prefill[p]));
  }
  const auto step2 = run_batch(mixed, {{.tokens = slice(c, 20, 57), .start = 20, .table = c_blocks},
                                       {.tokens = {a_next}, .start = 30, .table = a_blocks},
                                       {.tokens = slice(b, 41, 42), .start = 41, .table = b_blocks}});
  CHECK(bit_identical(step2[1], a_decode[0]));
  // Sanity: the batch-mates really did compute something else.
  CHECK_FALSE(bit_identical(step2[0], step2[1]));
}

TEST_CASE("qwen2 chunked prefill, thread count and copied blocks give the same bits", "[qwen2][batch]") {
  const std::vector<TokenId> prompt = prompt_of("code_emoji");  // 57 tokens
  const auto table = block_range(0, 4);
  AnyModel two_threads = open_model(tiny_model_dir(), 2);
  const auto whole = run_batch(two_threads, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});

  SECTION("prefill in chunks of 13, 1, 43 tokens") {
    AnyModel model = open_model(tiny_model_dir(), 2);
    const auto r1 = run_batch(model, {{.tokens = slice(prompt, 0, 13), .start = 0, .table = table, .all_outputs = true}});
    const auto r2 = run_batch(model, {{.tokens = slice(prompt, 13, 14), .start = 13, .table = table}});
    const auto r3 = run_batch(model, {{.tokens = slice(prompt, 14, 57), .start = 14, .table = table, .all_outputs = true}});
    CHECK(bit_identical(r1[12], whole[12]));
    CHECK(bit_identical(r2[0], whole[13]));
    CHECK(bit_identical(r3[42], whole[56]));
  }
  SECTION("one thread") {
    AnyModel model = open_model(tiny_model_dir(), 1);
    const auto rows = run_batch(model, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
    for (std::size_t p = 0; p < prompt.size(); ++p) CHECK(bit_identical(rows[p], whole[p]));
  }
  SECTION("decoding from copied blocks") {
    AnyModel model = open_model(tiny_model_dir(), 2);
    run_batch(model, {{.tokens = prompt, .start = 0, .table = table}});
    const auto original = run_batch(model, {{.tokens = {42}, .start = 57, .table = table}});
    const std::vector<BlockCopy> copies = {{0, 10}, {1, 11}, {2, 12}, {3, 13}};
    REQUIRE(model.copy_blocks(copies).ok());
    const auto copied = run_batch(model, {{.tokens = {42}, .start = 57, .table = block_range(10, 4)}});
    CHECK(bit_identical(copied[0], original[0]));
  }
}

TEST_CASE("qwen2 sharded and single-file layouts give bit-identical logits", "[qwen2][weights]") {
  const std::vector<TokenId> prompt = prompt_of("haiku");
  const auto table = block_range(0, 3);
  AnyModel single = open_model(tiny_model_dir(1));
  AnyModel sharded = open_model(tiny_model_dir(3));
  const auto a = run_batch(single, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
  const auto b = run_batch(sharded, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
  REQUIRE(a.size() == prompt.size());
  for (std::size_t p = 0; p < a.size(); ++p) CHECK(bit_identical(a[p], b[p]));
}

TEST_CASE("qwen2 weights mapped, read into memory, single or sharded give bit-identical logits", "[qwen2][weights]") {
  const std::vector<TokenId> prompt = prompt_of("haiku");
  const auto table = block_range(0, 3);
  AnyModel mapped = open_model(tiny_model_dir(1), 2, R"({"weights": "mmap"})");
  const auto a = run_batch(mapped, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
  for (const char* options : {R"({"weights": "memory"})", R"({"weights": "auto"})"}) {
    for (int shards : {1, 3}) {
      INFO(options << ", " << shards << " shard(s)");
      AnyModel model = open_model(tiny_model_dir(shards), 2, options);
      const auto b = run_batch(model, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
      REQUIRE(b.size() == a.size());
      for (std::size_t p = 0; p < a.size(); ++p) CHECK(bit_identical(a[p], b[p]));
    }
  }
  CHECK_THROWS_WITH(open_model(tiny_model_dir(), 1, R"({"weights": "ram"})"),
                    Catch::Contains("option weights: expected auto, mmap or memory"));
  CHECK_THROWS_WITH(open_model(tiny_model_dir(), 1, R"({"weights": true})"), Catch::Contains("option weights"));
}

TEST_CASE("qwen2 ISA paths (avx512, avx2, scalar) give bit-identical logits", "[qwen2][isa]") {
  const std::vector<TokenId> prompt = prompt_of("raw_completion");  // 5 tokens
  const auto table = block_range(0, 1);
  std::vector<std::vector<std::vector<float>>> results;
  std::vector<std::string> isas;
  for (const char* isa : {"avx512", "avx2", "scalar"}) {
    if (!cpu::isa_supported(*cpu::parse_isa(isa))) continue;
    AnyModel model = open_model(tiny_model_dir(), 2, std::string(R"({"isa": ")") + isa + "\"}");
    auto rows = run_batch(model, {{.tokens = prompt, .start = 0, .table = table, .all_outputs = true}});
    const auto decode = run_batch(model, {{.tokens = {7}, .start = 5, .table = table}});
    rows.push_back(decode[0]);
    results.push_back(std::move(rows));
    isas.emplace_back(isa);
  }
  REQUIRE(results.size() >= 2);  // scalar and at least one vector path on any x86-64 we test on
  for (std::size_t i = 1; i < results.size(); ++i) {
    INFO(isas[0] << " vs " << isas[i]);
    for (std::size_t r = 0; r < results[0].size(); ++r) CHECK(bit_identical(results[0][r], results[i][r]));
  }
}

TEST_CASE("qwen2 refuses models whose tensors disagree with config.json", "[qwen2][weights]") {
  TempDir dir;
  auto with_config = [&](const std::string& from, const std::string& to) {
    std::ifstream in(tiny_model_dir() / "config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = config.find(from);
    REQUIRE(at != std::string::npos);
    config.replace(at, from.size(), to);
    std::filesystem::remove_all(dir.path());
    std::filesystem::create_directories(dir.path());
    dir.write("config.json", config);
    std::filesystem::create_symlink(tiny_model_dir() / "model.safetensors", dir / "model.safetensors");
  };
  SECTION("a layer the file lacks") {
    with_config("\"num_hidden_layers\": 3", "\"num_hidden_layers\": 4");
    CHECK_THROWS_WITH(open_model(dir.path()), Catch::Contains("missing tensor 'model.layers.3.input_layernorm.weight'"));
  }
  SECTION("a hidden size the tensors do not have") {
    with_config("\"intermediate_size\": 512", "\"intermediate_size\": 640");
    CHECK_THROWS_WITH(open_model(dir.path()),
                      Catch::Contains("'model.layers.0.mlp.gate_proj.weight' has the wrong shape [512, 256]") &&
                          Catch::Contains("needs [640, 256]"));
  }
  SECTION("an unsupported rope scaling") {
    with_config("\"use_cache\": true", "\"use_cache\": true, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}");
    CHECK_THROWS_WITH(open_model(dir.path()), Catch::Contains("rope_scaling type 'yarn' is not supported"));
  }
}
