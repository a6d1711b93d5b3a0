// The engine's acceptance properties on the tiny Qwen2 (llaisys-mkmodel's "tiny" shape through the
// real qwen2 plugin, with the Qwen2 tokenizer and chat template): batch invariance, cache hit == cache miss over a
// 4-turn chat, preemption, abort. The many-request and sampling tests stay on the mock and the
// sampler (they do not depend on the model).

#include <stdexcept>

#include "engine_test_support.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "model_writer.hpp"
#include "real_models.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

std::shared_ptr<const text::Tokenizer> tokenizer() {
  static auto loaded = text::Tokenizer::from_model_dir(tiny_qwen2().dir());
  REQUIRE(loaded.ok());
  return loaded.value();
}

std::vector<TokenId> encode(const std::string& text) {
  auto ids = tokenizer()->encode(text);
  REQUIRE(ids.ok());
  return ids.value();
}

// The conversation through the model's own chat template (tokenizer_config.json), then encoded.
std::vector<TokenId> render_chat(const std::vector<std::pair<std::string, std::string>>& messages) {
  static auto chat_template = text::ChatTemplate::from_model_dir(tiny_qwen2().dir());
  REQUIRE(chat_template.ok());
  boost::json::array json;
  for (const auto& [role, content] : messages) json.push_back(boost::json::object{{"role", role}, {"content", content}});
  auto rendered = chat_template->render(json, {.add_generation_prompt = true});
  REQUIRE(rendered.ok());
  CHECK(rendered->ends_with("<|im_start|>assistant\n"));
  auto ids = tokenizer()->encode(*rendered);
  REQUIRE(ids.ok());
  return ids.value();
}

}  // namespace

TEST_CASE("tiny Qwen2: 64 prompts together give what each gives alone") {
  const TestModels& models = tiny_qwen2();
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 512, .max_num_batched_tokens = 256}, tokenizer());
  std::vector<std::vector<TokenId>> prompts;
  std::map<RequestId, std::size_t> index_of;
  for (int i = 0; i < 64; ++i) {
    prompts.push_back(encode(fmt::format("Request {}: tell me about the number {} and {}.", i, i * 7, 3 + i % 5)));
    if (i % 8 == 0) {  // a few longer prompts, prefilled in chunks next to the decodes
      for (int k = 0; k < 20; ++k) prompts.back().push_back(static_cast<TokenId>(1000 + 31 * i + k));
    }
    index_of[*engine->submit(greedy_request(prompts.back(), 5))] = prompts.size() - 1;
  }
  const auto together = run_all(*engine);
  REQUIRE(together.size() == 64);
  for (const auto& [id, result] : together) {
    const std::size_t i = index_of.at(id);
    INFO("prompt " << i);
    CHECK(result.choices[0].tokens == reference_greedy(reference_model, prompts[i], 5, 512));
  }
  CHECK(engine->stats().num_steps < 64 * 3);
}

TEST_CASE("tiny Qwen2: a 4-turn chat gives the same answers with the prefix cache on and off") {
  const TestModels& models = tiny_qwen2();
  auto cached = models.engine({.num_kv_blocks = 256}, tokenizer());
  auto uncached = models.engine({.num_kv_blocks = 256, .enable_prefix_cache = false}, tokenizer());
  std::vector<std::pair<std::string, std::string>> messages = {
      {"system", "You are a helpful assistant. Answer briefly and precisely, in plain words."},
      {"user", "What is the capital of France?"}};
  const std::vector<std::string> follow_ups = {"And of Italy?", "Which of the two is larger?", "Thanks! One more: Spain?"};
  std::vector<TokenId> previous_computed;  // tokens of the previous turn whose K/V was computed
  int32_t previous_prompt = 0;
  for (int turn = 0; turn < 4; ++turn) {
    const std::vector<TokenId> prompt = render_chat(messages);
    GenerateRequest request = greedy_request(prompt, 10);
    REQUIRE(cached->submit(request).ok());
    REQUIRE(uncached->submit(request).ok());
    const Collected hit = run_all(*cached).begin()->second;
    const Collected miss = run_all(*uncached).begin()->second;
    INFO("turn " << turn);
    CHECK(hit.choices[0].tokens == miss.choices[0].tokens);
    CHECK(hit.choices[0].text == miss.choices[0].text);
    CHECK(miss.usage.cached_tokens == 0);
    // The cache holds exactly the previous turn's computed tokens; the new prompt re-renders the
    // conversation, so the hit runs to where the two first differ (the template's re-tokenisation
    // boundary), in whole blocks, never the last prompt token.
    std::size_t common = 0;
    while (common < previous_computed.size() && common < prompt.size() && previous_computed[common] == prompt[common]) ++common;
    const auto expected = static_cast<int32_t>(std::min(common, prompt.size() - 1) / 16 * 16);
    CHECK(hit.usage.cached_tokens == expected);
    CHECK(hit.usage.cached_tokens >= previous_prompt / 16 * 16);  // at least every earlier prompt
    if (turn > 0) CHECK(hit.usage.cached_tokens > 0);
    previous_computed = prompt;
    previous_computed.insert(previous_computed.end(), hit.choices[0].tokens.begin(), hit.choices[0].tokens.end() - 1);
    previous_prompt = static_cast<int32_t>(prompt.size());
    messages.emplace_back("assistant", hit.choices[0].text);
    if (turn < 3) messages.emplace_back("user", follow_ups[static_cast<std::size_t>(turn)]);
  }
  CHECK(cached->check_kv_invariants().ok());
}

TEST_CASE("tiny Qwen2: preemption under a tight KV budget keeps the outputs") {
  const TestModels& models = tiny_qwen2();
  auto ample = models.engine({.num_kv_blocks = 256}, tokenizer());
  auto tight = models.engine({.block_size = 8, .num_kv_blocks = 24, .max_num_batched_tokens = 64}, tokenizer());
  for (int i = 0; i < 6; ++i) {
    GenerateRequest request = greedy_request(encode(fmt::format("Story number {} begins like this:", i)), 24);
    if (i == 2) request.sampling = {.temperature = 0.8f, .seed = 11};
    if (i == 4) request.n = 2;
    REQUIRE(ample->submit(request).ok());
    REQUIRE(tight->submit(request).ok());
  }
  const auto expected = run_all(*ample);
  const auto got = run_all(*tight);
  CHECK(tight->stats().num_preemptions > 0);
  for (const auto& [id, result] : expected) {
    INFO("request " << id);
    REQUIRE(got.at(id).choices.size() == result.choices.size());
    for (std::size_t c = 0; c < result.choices.size(); ++c) CHECK(got.at(id).choices[c].tokens == result.choices[c].tokens);
  }
  CHECK(tight->check_kv_invariants().ok());
}

TEST_CASE("tiny Qwen2: abort frees the request's blocks at once, the others go on") {
  const TestModels& models = tiny_qwen2();
  AnyModel reference_model = models.open();
  auto engine = models.engine({.num_kv_blocks = 128}, tokenizer());
  const std::vector<TokenId> keep_prompt = encode("Keep going with this one.");
  const RequestId keep = *engine->submit(greedy_request(keep_prompt, 8));
  GenerateRequest endless = greedy_request(encode("And stop this one soon."), 1000);
  endless.stop.ignore_eos = true;
  const RequestId drop = *engine->submit(endless);
  std::map<RequestId, Collected> results;
  for (int i = 0; i < 3; ++i) collect(engine->step(), results);
  const int32_t used = engine->stats().kv.num_used_blocks();
  REQUIRE(engine->abort(drop));
  CHECK(engine->stats().kv.num_used_blocks() < used);
  CHECK(engine->stats().kv.num_sequences == 1);
  while (engine->has_unfinished()) collect(engine->step(), results);
  CHECK(results.at(drop).choices[0].finish_reason == FinishReason::abort);
  CHECK(results.at(keep).choices[0].tokens == reference_greedy(reference_model, keep_prompt, 8, 512));
  CHECK(engine->check_kv_invariants().ok());
}
