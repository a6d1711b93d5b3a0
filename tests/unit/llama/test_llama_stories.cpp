// The llama plugin on real trained weights: models/stories260K (F32) against
// tests/data/stories260K/reference.json (an independent float64 forward pass whose first case is
// llama2.c's own output). Greedy decoding from the KV cache, stopping on BOS as llama2.c does, must
// reproduce every reference token; so must every ISA path and a batch holding both stories at once.

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "cpu/cpu_isa.hpp"
#include "plugin_model.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

const std::filesystem::path kStories = std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K";
constexpr int32_t kSteps = 256;  // llama2.c's forward passes: positions 0..255 feed, 1..256 come out
constexpr TokenId kBos = 1;

struct StoryCase {
  std::string prompt;
  std::vector<TokenId> prompt_ids;
  std::vector<TokenId> greedy_ids;  // ends in BOS when the story stopped early
};

std::vector<StoryCase> story_cases() {
  std::ifstream in(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "stories260K" / "reference.json");
  REQUIRE(in.good());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const boost::json::value json = boost::json::parse(text);
  auto ids = [](const boost::json::value& a) {
    std::vector<TokenId> out;
    for (const auto& v : a.as_array()) out.push_back(static_cast<TokenId>(v.as_int64()));
    return out;
  };
  std::vector<StoryCase> cases;
  for (const auto& c : json.at("cases").as_array()) {
    cases.push_back({.prompt = std::string(c.at("prompt").as_string()),
                     .prompt_ids = ids(c.at("prompt_ids")),
                     .greedy_ids = ids(c.at("greedy_ids"))});
  }
  REQUIRE(cases.size() == 2);
  return cases;
}

TokenId argmax(const std::vector<float>& row) {
  return static_cast<TokenId>(std::max_element(row.begin(), row.end()) - row.begin());
}

AnyModel open_stories(const std::filesystem::path& dir = kStories, const std::string& options = "{}") {
  return open_plugin_model("libllaisys-llama.so", dir, /*num_threads=*/1, options, 64);
}

// Greedy generation of several sequences decoded together, one token each per pass (prefill of all
// prompts in the first pass), until BOS or llama2.c's step limit. Sequence i uses blocks
// [17 i, 17 i + 17).
std::vector<std::vector<TokenId>> generate(AnyModel& model, const std::vector<StoryCase>& cases) {
  std::vector<SeqChunk> chunks;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    chunks.push_back({.tokens = cases[i].prompt_ids, .start = 0, .table = block_range(static_cast<BlockId>(17 * i), 17)});
  }
  std::vector<std::vector<TokenId>> out(cases.size());
  std::vector<bool> done(cases.size(), false);
  std::vector<std::size_t> live(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) live[i] = i;
  while (!live.empty()) {
    std::vector<SeqChunk> batch;
    for (std::size_t i : live) batch.push_back(chunks[i]);
    const auto rows = run_batch(model, batch);
    std::vector<std::size_t> next_live;
    for (std::size_t r = 0; r < live.size(); ++r) {
      const std::size_t i = live[r];
      const TokenId token = argmax(rows[r]);
      out[i].push_back(token);
      const int32_t position = static_cast<int32_t>(cases[i].prompt_ids.size() + out[i].size()) - 1;
      if (token == kBos || position >= kSteps) continue;
      chunks[i].tokens = {token};
      chunks[i].start = position;
      next_live.push_back(i);
    }
    live = std::move(next_live);
  }
  return out;
}

}  // namespace

TEST_CASE("llama: stories260K greedy generation reproduces every reference token", "[llama][reference]") {
  const auto cases = story_cases();
  AnyModel model = open_stories();
  CHECK(model.info().architecture == "LlamaForCausalLM");
  CHECK(model.info().vocab_size == 512);
  CHECK(model.info().num_kv_heads == 4);
  CHECK(model.info().head_dim == 8);
  for (const StoryCase& c : cases) {
    INFO(c.prompt);
    const auto generated = generate(model, {c});
    CHECK(generated[0] == c.greedy_ids);
  }
  // The second story is the one that ends on BOS: the stop rule was exercised.
  CHECK(cases[1].greedy_ids.back() == kBos);
  CHECK(cases[0].prompt_ids.size() + cases[0].greedy_ids.size() == kSteps + 1);
}

TEST_CASE("llama: both stories decoded in one batch give the same tokens", "[llama][batch]") {
  const auto cases = story_cases();
  AnyModel model = open_stories();
  const auto generated = generate(model, cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].prompt);
    CHECK(generated[i] == cases[i].greedy_ids);
  }
}

TEST_CASE("llama: every ISA path reproduces the reference on the F32 weights", "[llama][isa]") {
  const auto cases = story_cases();
  for (const char* isa : {"avx512", "avx2", "scalar"}) {
    if (!cpu::isa_supported(*cpu::parse_isa(isa))) continue;
    INFO(isa);
    AnyModel model = open_stories(kStories, std::string(R"({"isa": ")") + isa + "\"}");
    CHECK(generate(model, {cases[0]})[0] == cases[0].greedy_ids);
  }
}

TEST_CASE("llama: an untied head (lm_head.weight) and a tied one give the same logits", "[llama][weights]") {
  // stories260K ties its head to the embedding. The same model with the embedding copied into
  // lm_head.weight and tie_word_embeddings false must compute the same function, bit for bit.
  TempDir dir;
  std::filesystem::copy(kStories, dir.path(), std::filesystem::copy_options::recursive);
  std::filesystem::permissions(dir.path() / "config.json", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  std::filesystem::permissions(dir.path() / "model.safetensors", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  // Append lm_head.weight to the safetensors file: a new header, the old data, the copied rows.
  std::ifstream in(kStories / "model.safetensors", std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  std::memcpy(&header_size, file.data(), 8);
  boost::json::object header = boost::json::parse(file.substr(8, header_size)).as_object();
  const std::string data = file.substr(8 + header_size);
  const boost::json::array offsets = header.at("model.embed_tokens.weight").at("data_offsets").as_array();
  const auto begin = static_cast<std::size_t>(offsets[0].as_int64());
  const auto end = static_cast<std::size_t>(offsets[1].as_int64());
  header["lm_head.weight"] = {{"dtype", "F32"},
                              {"shape", {512, 64}},
                              {"data_offsets", {data.size(), data.size() + (end - begin)}}};
  std::string new_header = boost::json::serialize(header);
  new_header.append((8 - new_header.size() % 8) % 8, ' ');
  const uint64_t new_size = new_header.size();
  std::ofstream out(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&new_size), 8);
  out << new_header << data << data.substr(begin, end - begin);
  out.close();
  std::string config;
  {
    std::ifstream c(kStories / "config.json");
    config.assign(std::istreambuf_iterator<char>(c), std::istreambuf_iterator<char>());
  }
  const std::string tied = R"("tie_word_embeddings": true)";
  REQUIRE(config.find(tied) != std::string::npos);
  config.replace(config.find(tied), tied.size(), R"("tie_word_embeddings": false)");
  dir.write("config.json", config);

  const std::vector<TokenId> prompt = story_cases()[0].prompt_ids;
  AnyModel tied_model = open_stories();
  AnyModel untied_model = open_stories(dir.path());
  const auto a = run_batch(tied_model, {{.tokens = prompt, .start = 0, .table = block_range(0, 1), .all_outputs = true}});
  const auto b = run_batch(untied_model, {{.tokens = prompt, .start = 0, .table = block_range(0, 1), .all_outputs = true}});
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) == 0);

  // Without the tensor, an untied config is refused by name rather than silently tied.
  TempDir missing;
  std::filesystem::copy(kStories, missing.path(), std::filesystem::copy_options::recursive);
  std::filesystem::permissions(missing.path() / "config.json", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  missing.write("config.json", config);
  CHECK_THROWS_WITH(open_stories(missing.path()), Catch::Contains("lm_head.weight"));
}
