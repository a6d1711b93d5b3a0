// Every request field of /v1/chat/completions, /v1/completions and /v1/embeddings behaves as
// openai/field_table.hpp says, and docs/SERVER.md's table says the same: refused fields are a 400
// naming them, ignored ones parse to exactly the request without them, honoured ones change the
// parsed request, and fields without a row are refused by name.

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "openai/errors.hpp"
#include "openai/field_table.hpp"
#include "openai/request_parse.hpp"
#include "openai/responses_request.hpp"
#include "served_model.hpp"
#include "server_test_support.hpp"

using namespace llaisys;
using namespace llaisys::server;
namespace json = boost::json;

namespace {

using llaisys::server::test::fixture;

constexpr std::array kEndpoints = {Endpoint::chat, Endpoint::completions, Endpoint::embeddings};

// Everything a parsed request carries, as text: two requests are the same request when these are
// equal.
std::string describe(const ParsedGenerate& p) {
  const GenerateRequest& r = p.request;
  const SamplingParams& s = r.sampling;
  std::string out = fmt::format(
      "kind={} prompt={} temperature={} top_k={} top_p={} min_p={} repetition={} presence={} frequency={} seed={} "
      "bias={} num_logprobs={} top_logits={} max_tokens={} min_tokens={} stop_ids={} stop={} ignore_eos={} n={} "
      "skip_special={} salt={} grammar={} prompt_logprobs={} best_of={} stream={} usage={} logprobs={} top={} "
      "tools={} echo={} speculative={}",
      static_cast<int>(p.kind), r.prompt_ids, s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty,
      s.presence_penalty, s.frequency_penalty, s.seed ? std::to_string(*s.seed) : "-", s.logit_bias, s.num_logprobs,
      s.num_top_logits, r.stop.max_tokens ? *r.stop.max_tokens : -1, r.stop.min_tokens, r.stop.stop_token_ids,
      r.stop.stop, r.stop.ignore_eos, r.n, r.skip_special_tokens, r.cache_salt, r.grammar != nullptr,
      r.num_prompt_logprobs, p.best_of, p.stream, p.include_usage, p.logprobs, p.top_logprobs, p.parse_tools, p.echo,
      r.speculative);
  for (const CompletionPrompt& prompt : p.prompts) {
    out += fmt::format(" [ids={} text={} max_tokens={}]", prompt.ids, prompt.text, prompt.max_tokens);
  }
  return out;
}

std::string describe(const ParsedEmbed& p) {
  return fmt::format("inputs={} base64={} dimensions={}", p.inputs, p.base64, p.dimensions);
}

// The parsed request as text, or the API error it gets.
struct Outcome {
  ApiError error;  // status 200 when parsed
  std::string request;
};

Outcome parse(Endpoint endpoint, const json::object& body, const ModelTextContext& model = fixture().context) {
  auto done = [](const auto& parsed) {
    if (!parsed.ok()) return Outcome{.error = from_parse_status(parsed.status())};
    return Outcome{.error = {.status = 200}, .request = describe(*parsed)};
  };
  switch (endpoint) {
    case Endpoint::chat: return done(parse_chat_request(body, model));
    case Endpoint::completions: return done(parse_completion_request(body, model));
    case Endpoint::embeddings: return done(parse_embedding_request(body, model));
  }
  return {};
}

json::object base_body(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::chat: return json::parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})").as_object();
    case Endpoint::completions: return json::parse(R"({"model":"m","prompt":"hi"})").as_object();
    case Endpoint::embeddings: return json::parse(R"({"model":"m","input":"hi"})").as_object();
  }
  return {};
}

const std::string kTool = R"({"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"}}}}})";

// A value of `field` (JSON text), with the fields it needs beside it.
struct Sample {
  std::string value;
  std::string context = "{}";  // in the body with and without the field
};

// Honoured: a value that changes the parsed request. Every honoured row needs one, or a place in
// kCheckedElsewhere.
const std::map<std::string, Sample>& honoured_samples() {
  static const std::map<std::string, Sample> samples = {
      {"messages", {R"([{"role":"user","content":"bye"}])"}},
      {"prompt", {R"("bye")"}},
      {"input", {R"("bye")"}},
      {"max_tokens", {"5"}},
      {"max_completion_tokens", {"5"}},
      {"temperature", {"0.5"}},
      {"top_p", {"0.5"}},
      {"n", {"2"}},
      {"seed", {"3"}},
      {"stop", {R"("x")"}},
      {"presence_penalty", {"0.5"}},
      {"frequency_penalty", {"0.5"}},
      {"logit_bias", {R"({"11": 5})"}},
      {"chat:logprobs", {"true"}},
      {"completions:logprobs", {"2"}},
      {"top_logprobs", {"2", R"({"logprobs": true})"}},
      {"stream", {"true"}},
      {"stream_options", {R"({"include_usage": true})"}},
      {"stream_options.include_usage", {"true"}},
      {"response_format", {R"({"type": "json_object"})"}},
      {"tools", {"[" + kTool + "]"}},
      {"tool_choice", {R"("none")", "{\"tools\": [" + kTool + "]}"}},
      {"parallel_tool_calls", {"false", "{\"tools\": [" + kTool + "]}"}},
      {"echo", {"true"}},
      {"best_of", {"2"}},
      {"dimensions", {"16"}},
      {"encoding_format", {R"("base64")"}},
      {"top_k", {"5"}},
      {"min_p", {"0.1"}},
      {"repetition_penalty", {"1.1"}},
      {"min_tokens", {"2"}},
      {"ignore_eos", {"true"}},
      {"stop_token_ids", {"[5]"}},
      {"skip_special_tokens", {"false"}},
      {"cache_salt", {R"("tenant-a")"}},
      {"speculative", {"false"}},
      {"guided_json", {R"({"type": "object"})"}},
      {"guided_regex", {R"("[a-z]+")"}},
      {"guided_choice", {R"(["yes", "no"])"}},
      {"guided_grammar", {R"("root ::= \"a\" | \"b\"")"}},
      {"structured_outputs", {R"({"choice": ["yes", "no"]})"}},
  };
  return samples;
}

// Honoured without a visible difference in the parsed request; checked by the named tests.
const std::map<std::string, std::string> kCheckedElsewhere = {
    // The route resolves the model before parsing (routes.cpp with_model): the hostile suite's
    // "unknown model" and "model missing" cases, every e2e request.
    {"model", "hostile.test.mjs: unknown model (chat / completions / embeddings)"},
    // llaisys's grammar engine is the only backend: "auto" and "llaisys" pick it, others are 400.
    {"guided_decoding_backend", "this file: guided_decoding_backend picks llaisys's grammar engine"},
    // The fixture's Qwen2.5 template reads no extra variable; Qwen3's reads enable_thinking.
    {"chat_template_kwargs", "test_reasoning.cpp: chat_template_kwargs reach the template"},
};

// Refused: a value that asks for what llaisys does not do.
const std::map<std::string, std::string> kRefusedSamples = {
    {"stream_options.include_obfuscation", "true"},
    {"suffix", R"("def f():")"},
    {"modalities", R"(["text", "audio"])"},
    {"audio", R"({"voice": "alloy", "format": "wav"})"},
    {"reasoning_effort", R"("low")"},
    {"verbosity", R"("low")"},
    {"web_search_options", "{}"},
    {"functions", R"([{"name": "get_weather", "parameters": {"type": "object"}}])"},
    {"function_call", R"({"name": "get_weather"})"},
    {"moderation", R"({"model": "omni-moderation-latest"})"},
    {"prompt_cache_options", R"({"ttl": "30m"})"},
    {"guided_whitespace_pattern", R"("[ ]?")"},
    {"structural_tag", R"({"type": "structural_tag", "structures": [], "triggers": []})"},
    {"include_stop_str_in_output", "true"},
};

// Ignored: a realistic value, and one of the wrong type.
const std::map<std::string, std::pair<std::string, std::string>> kIgnoredSamples = {
    {"user", {R"("user-1234")", "5"}},
    {"store", {"true", R"("yes")"}},
    {"metadata", {R"({"team": "search"})", R"({"team": 7})"}},
    {"safety_identifier", {R"("hash-of-user")", "[]"}},
    {"prompt_cache_key", {R"("conversation-7")", "{}"}},
    {"prompt_cache_retention", {R"("24h")", "24"}},
    {"service_tier", {R"("flex")", "true"}},
    {"prediction", {R"({"type": "content", "content": "def f():\n    return 1\n"})", R"("def f():")"}},
};

std::string endpoint_name(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::chat: return "chat";
    case Endpoint::completions: return "completions";
    case Endpoint::embeddings: return "embeddings";
  }
  return "?";
}

// `body` with `field` = value: a member "parent.member" goes into the object `parent`.
void set_field(json::object& body, std::string_view field, json::value value) {
  const auto dot = field.find('.');
  if (dot == std::string_view::npos) {
    body[field] = std::move(value);
    return;
  }
  json::value& parent = body[field.substr(0, dot)];
  if (!parent.is_object()) parent = json::object();
  parent.as_object()[field.substr(dot + 1)] = std::move(value);
}

// The body without the field: a member's parent stays, empty.
json::object body_without(Endpoint endpoint, std::string_view field, const std::string& context) {
  json::object body = base_body(endpoint);
  const json::value extra = json::parse(context);
  for (const auto& [key, value] : extra.as_object()) body[key] = value;
  if (const auto dot = field.find('.'); dot != std::string_view::npos) body[field.substr(0, dot)] = json::object();
  return body;
}

json::object body_with(Endpoint endpoint, std::string_view field, const std::string& value,
                       const std::string& context = "{}") {
  json::object body = body_without(endpoint, field, context);
  set_field(body, field, json::parse(value));
  return body;
}

// Cells of the docs/SERVER.md table under "### Request fields": field -> its chat, completions and
// embeddings cells, in order.
std::vector<std::pair<std::string, std::array<std::string, 3>>> docs_table() {
  std::ifstream file(std::filesystem::path(LLAISYS_SOURCE_DIR) / "docs" / "SERVER.md");
  REQUIRE(file);
  std::vector<std::pair<std::string, std::array<std::string, 3>>> rows;
  std::string line;
  bool in_section = false;
  bool in_table = false;
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  };
  while (std::getline(file, line)) {
    if (line.starts_with("### ")) in_section = line == "### Request fields";
    if (!in_section) continue;
    if (line.starts_with("| field | chat | completions | embeddings |")) in_table = true;
    if (!in_table || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::stringstream stream(line.substr(1));
    for (std::string cell; std::getline(stream, cell, '|');) cells.push_back(trim(cell));
    REQUIRE(cells.size() >= 4);
    REQUIRE(cells[0].size() > 2);
    rows.push_back({cells[0].substr(1, cells[0].size() - 2), {cells[1], cells[2], cells[3]}});
  }
  return rows;
}

}  // namespace

TEST_CASE("docs/SERVER.md's request-field table is the code's table, row by row") {
  const auto docs = docs_table();
  const auto code = request_fields();
  REQUIRE(docs.size() == code.size());
  for (std::size_t i = 0; i < code.size(); ++i) {
    INFO("row " << i << ": code '" << code[i].name << "', docs '" << docs[i].first << "'");
    CHECK(docs[i].first == code[i].name);
    for (std::size_t e = 0; e < kEndpoints.size(); ++e) {
      const std::string expected = code[i].applies_to(kEndpoints[e]) ? std::string(to_string(code[i].use)) : "—";
      CHECK(docs[i].second[e] == expected);
    }
  }
  // One row per name: the docs column says an endpoint's use, so one row has to carry them all.
  for (std::size_t i = 0; i < code.size(); ++i) {
    for (std::size_t j = i + 1; j < code.size(); ++j) CHECK(code[i].name != code[j].name);
  }
}

TEST_CASE("every field in the table behaves as documented on every endpoint") {
  for (const RequestField& field : request_fields()) {
    for (const Endpoint endpoint : kEndpoints) {
      const std::string name(field.name);
      INFO(endpoint_name(endpoint) << ": " << name << " (" << to_string(field.use) << ")");
      if (!field.applies_to(endpoint)) {
        // Not a field of this endpoint: refused by name, like any unknown field (a member's
        // parent, when that is unknown too).
        const std::string parent = name.substr(0, name.find('.'));
        const std::string unknown = find_request_field(endpoint, parent) != nullptr ? name : parent;
        const Outcome o = parse(endpoint, body_with(endpoint, name, "1"));
        CHECK(o.error.status == 400);
        CHECK(o.error.param == unknown);
        CHECK(o.error.message.find("field llaisys knows") != std::string::npos);
        continue;
      }
      const Outcome without = parse(endpoint, body_without(endpoint, name, "{}"));
      REQUIRE(without.error.status == 200);
      switch (field.use) {
        case FieldUse::honoured: {
          if (kCheckedElsewhere.contains(name)) break;
          auto sample = honoured_samples().find(endpoint_name(endpoint) + ":" + name);
          if (sample == honoured_samples().end()) sample = honoured_samples().find(name);
          REQUIRE(sample != honoured_samples().end());
          const Outcome plain = parse(endpoint, body_without(endpoint, name, sample->second.context));
          const Outcome with = parse(endpoint, body_with(endpoint, name, sample->second.value, sample->second.context));
          INFO(with.error.message);
          REQUIRE(plain.error.status == 200);
          REQUIRE(with.error.status == 200);
          CHECK(with.request != plain.request);
          break;
        }
        case FieldUse::ignored: {
          REQUIRE(kIgnoredSamples.contains(name));
          const auto& [good, bad] = kIgnoredSamples.at(name);
          const Outcome with = parse(endpoint, body_with(endpoint, name, good));
          INFO(with.error.message);
          CHECK(with.error.status == 200);
          CHECK(with.request == without.request);
          const Outcome malformed = parse(endpoint, body_with(endpoint, name, bad));
          CHECK(malformed.error.status == 400);
          CHECK(malformed.error.param == name);
          break;
        }
        case FieldUse::refused: {
          REQUIRE(kRefusedSamples.contains(name));
          const Outcome with = parse(endpoint, body_with(endpoint, name, kRefusedSamples.at(name)));
          CHECK(with.error.status == 400);
          CHECK(with.error.type == "invalid_request_error");
          CHECK(with.error.param == name);
          CHECK(with.error.message.find("is not supported") != std::string::npos);
          if (!field.accepted.empty()) {
            // The value that asks for nothing is the request without the field.
            const Outcome accepted = parse(endpoint, body_with(endpoint, name, std::string(field.accepted)));
            INFO(accepted.error.message);
            CHECK(accepted.error.status == 200);
            CHECK(accepted.request == without.request);
          }
          break;
        }
      }
      if (field.use != FieldUse::honoured || !kCheckedElsewhere.contains(name)) {
        // null is the field left out.
        const Outcome null = parse(endpoint, body_with(endpoint, name, "null"));
        INFO(null.error.message);
        if (name == "messages" || name == "prompt" || name == "input") {
          CHECK(null.error.status == 400);  // required
        } else {
          CHECK(null.error.status == 200);
          CHECK(null.request == without.request);
        }
      }
    }
  }
}

TEST_CASE("fields without a row are refused by name: typos, vLLM extensions llaisys lacks, members") {
  for (const Endpoint endpoint : kEndpoints) {
    for (const char* unknown : {"bogus_field", "temprature", "use_beam_search", "continue_final_message", "priority",
                                "truncate_prompt_tokens"}) {
      INFO(endpoint_name(endpoint) << ": " << unknown);
      const Outcome o = parse(endpoint, body_with(endpoint, unknown, "1"));
      CHECK(o.error.status == 400);
      CHECK(o.error.param == unknown);
      CHECK(o.error.message == fmt::format("'{}' is not a {} field llaisys knows", unknown, endpoint_path(endpoint)));
    }
  }
  // Members of stream_options are checked too; null is no exception for an unknown field.
  const Outcome member =
      parse(Endpoint::chat, body_with(Endpoint::chat, "stream_options.continuous_usage_stats", "true"));
  CHECK(member.error.param == "stream_options.continuous_usage_stats");
  CHECK(parse(Endpoint::completions, body_with(Endpoint::completions, "bogus", "null")).error.param == "bogus");
  // A long unknown name is cut in the message.
  const std::string long_name(1000, 'k');
  const Outcome long_field = parse(Endpoint::chat, body_with(Endpoint::chat, long_name, "1"));
  CHECK(long_field.error.status == 400);
  CHECK(long_field.error.message.size() < 200);
}

TEST_CASE("guided_decoding_backend picks llaisys's grammar engine") {
  for (const char* backend : {R"("auto")", R"("llaisys")"}) {
    const Outcome o = parse(Endpoint::chat, body_with(Endpoint::chat, "guided_decoding_backend", backend));
    CHECK(o.error.status == 200);
    CHECK(o.request == parse(Endpoint::chat, base_body(Endpoint::chat)).request);
  }
  const Outcome other = parse(Endpoint::completions, body_with(Endpoint::completions, "guided_decoding_backend", R"("xgrammar")"));
  CHECK(other.error.param == "guided_decoding_backend");
}

TEST_CASE("cache_salt reaches the engine request, an empty or huge salt is refused") {
  auto parsed = parse_chat_request(body_with(Endpoint::chat, "cache_salt", R"("tenant-a")"), fixture().context);
  REQUIRE(parsed.ok());
  CHECK(parsed->request.cache_salt == "tenant-a");
  auto batch = parse_completion_request(
      json::parse(R"({"prompt":["a","b"],"cache_salt":"tenant-b"})").as_object(), fixture().context);
  REQUIRE(batch.ok());
  CHECK(batch->prompt_request(1).cache_salt == "tenant-b");
  CHECK(parse(Endpoint::chat, body_with(Endpoint::chat, "cache_salt", R"("")")).error.param == "cache_salt");
  CHECK(parse(Endpoint::chat, body_with(Endpoint::chat, "cache_salt", "5")).error.param == "cache_salt");
  CHECK(parse(Endpoint::chat, body_with(Endpoint::chat, "cache_salt", "\"" + std::string(257, 's') + "\""))
            .error.param == "cache_salt");
}

TEST_CASE("tools are refused for a model whose chat template does not render them") {
  CHECK(renders_tools(*fixture().chat_template));
  CHECK_FALSE(renders_tools(*fixture().chatml_fallback));
  ModelTextContext chatml = fixture().context;
  chatml.chat_template = &*fixture().chatml_fallback;
  chatml.chat_template_renders_tools = renders_tools(*fixture().chatml_fallback);
  const json::object with_tools = body_with(Endpoint::chat, "tools", "[" + kTool + "]");
  const Outcome refused = parse(Endpoint::chat, with_tools, chatml);
  CHECK(refused.error.status == 400);
  CHECK(refused.error.param == "tools");
  CHECK(refused.error.message.find("chat template") != std::string::npos);
  // tool_choice "none" still puts the tools into the prompt, which this template cannot.
  json::object none = with_tools;
  none["tool_choice"] = "none";
  CHECK(parse(Endpoint::chat, none, chatml).error.param == "tools");
  // Without tools (or with an empty list) the model chats as before.
  CHECK(parse(Endpoint::chat, base_body(Endpoint::chat), chatml).error.status == 200);
  CHECK(parse(Endpoint::chat, body_with(Endpoint::chat, "tools", "[]"), chatml).error.status == 200);
  CHECK(parse(Endpoint::chat, with_tools).error.status == 200);
  // The Responses API goes through the chat parser: the same refusal.
  auto responses = parse_responses_request(
      json::parse(R"({"model":"m","input":"hi","tools":[{"type":"function","name":"f"}]})").as_object(), chatml);
  REQUIRE_FALSE(responses.ok());
  CHECK(responses_parse_error(responses.status()).param == "tools");
}
