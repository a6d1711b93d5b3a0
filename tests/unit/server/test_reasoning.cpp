// Reasoning models: the think-block parser (app::ReasoningParser) under every way of cutting its
// input, chat_template_kwargs and where the output starts, and reasoning_content / reasoning items /
// reasoning_tokens in the chat and Responses outputs built from engine outputs.

#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "openai/request_parse.hpp"
#include "openai/response.hpp"
#include "openai/responses_output.hpp"
#include "openai/responses_request.hpp"
#include "reasoning.hpp"
#include "server_test_support.hpp"

using namespace llaisys;
using namespace llaisys::server;
namespace json = boost::json;
using app::ReasoningParser;
using app::ReasoningSplit;
using app::ReasoningStart;

namespace {

using llaisys::server::test::fixture;
using llaisys::server::test::output;

constexpr std::string_view kText = "<think>\nThe user asks 2+2.\n\nThat is 4.\n</think>\n\nThe answer is 4.";
constexpr std::string_view kReasoning = "The user asks 2+2.\n\nThat is 4.";
constexpr std::string_view kContent = "The answer is 4.";

ReasoningSplit split_pieces(const std::vector<std::string_view>& pieces, ReasoningStart start) {
  ReasoningParser parser({.start = start});
  ReasoningSplit out;
  for (std::string_view piece : pieces) out.append(parser.feed(piece));
  out.append(parser.finish());
  return out;
}

// Every cut of `text` into three pieces (two cut points, equal ones included) gives the split of the
// whole text, which must be {reasoning, content}.
void check_every_cut(std::string_view text, ReasoningStart start, std::string_view reasoning, std::string_view content) {
  const ReasoningSplit whole = split_pieces({text}, start);
  CHECK(whole.reasoning == reasoning);
  CHECK(whole.content == content);
  for (std::size_t i = 0; i <= text.size(); ++i) {
    for (std::size_t j = i; j <= text.size(); ++j) {
      const ReasoningSplit got = split_pieces({text.substr(0, i), text.substr(i, j - i), text.substr(j)}, start);
      if (got.reasoning != reasoning || got.content != content) {
        FAIL_CHECK(fmt::format("cut at {} and {} of {:?}: reasoning {:?}, content {:?}", i, j, text, got.reasoning,
                               got.content));
        return;
      }
    }
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  const ReasoningSplit by_byte = split_pieces(bytes, start);
  CHECK(by_byte.reasoning == reasoning);
  CHECK(by_byte.content == content);
}

ChoiceDelta delta(std::string text, std::vector<TokenId> ids, std::optional<FinishReason> finish = std::nullopt) {
  ChoiceDelta d;
  d.text = std::move(text);
  d.token_ids = std::move(ids);
  d.finish_reason = finish;
  return d;
}

// "data: JSON\n\n"... -> the JSON objects, [DONE] left out.
std::vector<json::object> chunks_of(const std::string& sse) {
  std::vector<json::object> out;
  std::size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const std::size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    if (data != "[DONE]") out.push_back(json::parse(data).as_object());
    pos = end;
  }
  return out;
}

// A context whose chat template is Qwen3's (chat-templates/qwen3) and whose outputs are split.
struct Qwen3Context {
  std::optional<text::ChatTemplate> chat_template;
  ModelTextContext context = fixture().context;
  Qwen3Context() {
    const auto dir = std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "chat-templates" / "qwen3";
    auto t = text::ChatTemplate::from_file(dir / "Qwen-Qwen3-8B.jinja");
    REQUIRE(t.ok());
    chat_template = std::move(t).value();
    context.chat_template = &*chat_template;
    context.chat_template_renders_tools = renders_tools(*chat_template);
    context.reasoning_format = app::detect_reasoning_format(context.chat_template, nullptr);
  }
};

Qwen3Context& qwen3() {
  static Qwen3Context c;
  return c;
}

Result<ParsedGenerate> parse_chat(std::string_view body, const ModelTextContext& context) {
  auto object = parse_json_body(body);
  REQUIRE(object.ok());
  return parse_chat_request(*object, context);
}

}  // namespace

TEST_CASE("the think block splits the same however the text is cut") {
  check_every_cut(kText, ReasoningStart::detect, kReasoning, kContent);
  // Leading whitespace before the block; an empty block (Qwen3 without thinking writes one).
  check_every_cut("\n <think>abc</think>def", ReasoningStart::detect, "abc", "def");
  check_every_cut("<think>\n\n</think>\n\nHi", ReasoningStart::detect, "", "Hi");
  // No block, or one that is not at the start, or a marker that only looks alike: all content.
  check_every_cut("Hello <think>x</think>", ReasoningStart::detect, "", "Hello <think>x</think>");
  check_every_cut("<thinking>x</thinking>", ReasoningStart::detect, "", "<thinking>x</thinking>");
  check_every_cut("  <thi", ReasoningStart::detect, "", "  <thi");
  // The prompt opened the block (the R1 distills): everything up to "</think>" is reasoning.
  check_every_cut("\nFirst, 2+2 = 4.\n</think>\n\n4", ReasoningStart::inside, "First, 2+2 = 4.", "4");
  // The prompt closed an empty block (enable_thinking false): a "<think>" is the model's text.
  check_every_cut("<think>x</think>y", ReasoningStart::content, "", "<think>x</think>y");
  // Cut off inside the block: all reasoning; a partial closing marker is reasoning text.
  check_every_cut("<think>\nstill thinking \n", ReasoningStart::detect, "still thinking", "");
  check_every_cut("<think>a </th", ReasoningStart::detect, "a </th", "");
  // A second block after the first is content.
  check_every_cut("<think>a</think>b<think>c</think>", ReasoningStart::detect, "a", "b<think>c</think>");
}

TEST_CASE("reasoning_tokens counts the tokens from the block's start to its closing marker") {
  const std::vector<TokenId> one = {7}, two = {7, 7}, three = {7, 7, 7};
  ReasoningParser parser;
  (void)parser.feed("<th", one);  // undecided until "ink>"
  CHECK(parser.state() == ReasoningParser::State::undecided);
  (void)parser.feed("ink>", one);
  (void)parser.feed("\nhmm", two);
  (void)parser.feed("</think>\n\nA", three);  // closes the block: counted whole (no close token)
  (void)parser.feed("nswer", one);
  (void)parser.finish();
  CHECK(parser.reasoning_tokens() == 7);
  CHECK(parser.saw_reasoning());

  // With "</think>" as one token (id 9), a feed that closes the block counts up to it.
  ReasoningParser exact({.start = ReasoningStart::detect, .close_token = 9});
  const std::vector<TokenId> open = {8}, close_and_answer = {5, 9, 4, 4};
  (void)exact.feed("<think>", open);
  (void)exact.feed("x</think>\n\nAn", close_and_answer);
  CHECK(exact.reasoning_tokens() == 3);

  ReasoningParser plain;
  (void)plain.feed("  ", one);
  (void)plain.feed("<b>", one);  // not a think block: nothing counted
  (void)plain.feed("bold", one);
  CHECK(plain.reasoning_tokens() == 0);
  CHECK_FALSE(plain.saw_reasoning());

  ReasoningParser inside({.start = ReasoningStart::inside});
  (void)inside.feed("a", one);
  (void)inside.feed("</think>", one);
  (void)inside.feed("b", one);
  CHECK(inside.reasoning_tokens() == 2);
}

TEST_CASE("where the output starts is read from the rendered prompt") {
  CHECK(app::reasoning_start("<|im_start|>assistant\n") == ReasoningStart::detect);
  CHECK(app::reasoning_start("<|Assistant|><think>\n") == ReasoningStart::inside);
  CHECK(app::reasoning_start("<|im_start|>assistant\n<think>\n\n</think>\n\n") == ReasoningStart::content);
  CHECK(app::detect_reasoning_format(qwen3().context.chat_template, nullptr) == app::ReasoningFormat::deepseek);
  CHECK(app::detect_reasoning_format(fixture().context.chat_template, fixture().tokenizer.get()) ==
        app::ReasoningFormat::none);  // Qwen2.5's template and vocabulary know no think block
  CHECK(app::parse_reasoning_format("auto", "x").value() == std::nullopt);
  CHECK(app::parse_reasoning_format("none", "x").value() == app::ReasoningFormat::none);
  auto bad = app::parse_reasoning_format("deepseek-legacy", "--reasoning-format");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("--reasoning-format") != std::string::npos);
}

TEST_CASE("chat_template_kwargs reach the template, reasoning_effort none turns thinking off") {
  const ModelTextContext& context = qwen3().context;
  const std::string messages = R"("messages": [{"role": "user", "content": "Hi"}])";
  auto on = parse_chat(fmt::format(R"({{"model": "m", {}}})", messages), context);
  auto off = parse_chat(fmt::format(R"({{"model": "m", {}, "chat_template_kwargs": {{"enable_thinking": false}}}})",
                                    messages), context);
  auto effort = parse_chat(fmt::format(R"({{"model": "m", {}, "reasoning_effort": "none"}})", messages), context);
  REQUIRE(on.ok());
  REQUIRE(off.ok());
  REQUIRE(effort.ok());
  REQUIRE(on->reasoning);
  REQUIRE(off->reasoning);
  CHECK(on->reasoning->start == ReasoningStart::detect);
  CHECK(off->reasoning->start == ReasoningStart::content);
  CHECK(effort->request.prompt_ids == off->request.prompt_ids);
  const std::string off_text = fixture().tokenizer->decode(off->request.prompt_ids, false).value();
  CHECK(off_text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK(on->request.prompt_ids.size() + 6 <= off->request.prompt_ids.size());

  // A model without a think block parses nothing and ignores nothing it is asked.
  auto plain = parse_chat(fmt::format(R"({{"model": "m", {}}})", messages), fixture().context);
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->reasoning.has_value());

  for (const char* bad : {R"("chat_template_kwargs": [1])", R"("chat_template_kwargs": {"messages": []})",
                          R"("chat_template_kwargs": {"add_generation_prompt": false})"}) {
    INFO(bad);
    auto parsed = parse_chat(fmt::format(R"({{"model": "m", {}, {}}})", messages, bad), context);
    REQUIRE_FALSE(parsed.ok());
    CHECK(from_parse_status(parsed.status()).param.starts_with("chat_template_kwargs"));
  }
}

TEST_CASE("reasoning_content and content are exact at every token boundary, streamed or not") {
  const auto& tokenizer = *fixture().tokenizer;
  const std::vector<TokenId> ids = tokenizer.encode(std::string(kText), false).value();
  REQUIRE(ids.size() > 10);
  // The tokens up to the one that completes "</think>" are the reasoning tokens (Qwen2's vocabulary
  // has no "</think>" token: a delta that closes the block counts whole).
  const std::size_t close_end = kText.find("</think>") + 8;
  int64_t want_reasoning_tokens = 0;
  while (tokenizer.decode({ids.begin(), ids.begin() + want_reasoning_tokens}, false).value().size() < close_end) {
    ++want_reasoning_tokens;
  }
  for (std::size_t cut = 0; cut <= ids.size(); ++cut) {
    INFO("deltas cut after token " << cut << " then one per token");
    // Deltas: tokens [0, cut) at once, then one per token (the last carries the finish reason).
    std::vector<std::vector<TokenId>> pieces;
    if (cut > 0) pieces.emplace_back(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut));
    for (std::size_t i = cut; i < ids.size(); ++i) pieces.push_back({ids[i]});
    ParsedGenerate parsed;
    parsed.kind = ApiKind::chat;
    parsed.stream = true;
    parsed.include_usage = true;
    parsed.reasoning = app::ReasoningOptions{};
    const int64_t want_tokens = std::max(want_reasoning_tokens, static_cast<int64_t>(cut));
    GenerationResponse streamed(parsed, {"chatcmpl-r", 1, "m"}, fixture().tokenizer);
    GenerationResponse whole(parsed, {"chatcmpl-r", 1, "m"}, fixture().tokenizer);
    std::string sse;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      const bool last = p + 1 == pieces.size();
      const RequestOutput o =
          output({delta(tokenizer.decode(pieces[p], false).value(), pieces[p],
                        last ? std::optional(FinishReason::stop) : std::nullopt)},
                 last, {.prompt_tokens = 3, .completion_tokens = static_cast<int32_t>(ids.size())});
      sse += streamed.stream_events(o);
      whole.accumulate(o);
    }
    std::string reasoning, content;
    const std::vector<json::object> chunks = chunks_of(sse);
    for (const json::object& chunk : chunks) {
      for (const json::value& c : chunk.at("choices").as_array()) {
        const json::object& d = c.at("delta").as_object();
        if (const json::value* r = d.if_contains("reasoning_content")) reasoning += std::string(r->as_string());
        if (const json::value* t = d.if_contains("content")) content += std::string(t->as_string());
      }
    }
    CHECK(reasoning == kReasoning);
    CHECK(content == kContent);
    CHECK(chunks.back().at("usage").at("completion_tokens_details").at("reasoning_tokens").as_int64() == want_tokens);
    const json::value body = json::parse(whole.body());
    const json::value& message = body.at("choices").at(0).at("message");
    CHECK(message.at("reasoning_content").as_string() == kReasoning);
    CHECK(message.at("content").as_string() == kContent);
    CHECK(body.at("usage").at("completion_tokens_details").at("reasoning_tokens").as_int64() == want_tokens);
  }
}

TEST_CASE("tool calls after the reasoning are parsed, the reasoning is not searched for calls") {
  ParsedGenerate parsed;
  parsed.kind = ApiKind::chat;
  parsed.parse_tools = true;
  parsed.reasoning = app::ReasoningOptions{};
  GenerationResponse response(parsed, {"chatcmpl-t", 1, "m"}, nullptr);
  response.accumulate(output({delta("<think>I could write <tool_call> here but I plan", {1, 2})}, false));
  response.accumulate(output({delta(".</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                    "{\"city\": \"Paris\"}}\n</tool_call>",
                                    {3, 4}, FinishReason::stop)},
                             true));
  const json::value body = json::parse(response.body());
  const json::value& message = body.at("choices").at(0).at("message");
  CHECK(message.at("reasoning_content").as_string() == "I could write <tool_call> here but I plan.");
  CHECK(message.at("content").is_null());
  REQUIRE(message.at("tool_calls").as_array().size() == 1);
  CHECK(message.at("tool_calls").at(0).at("function").at("name").as_string() == "get_weather");
  CHECK(body.at("choices").at(0).at("finish_reason").as_string() == "tool_calls");
}

TEST_CASE("without a think block reasoning_content is null, models that do not reason have none") {
  ParsedGenerate parsed;
  parsed.kind = ApiKind::chat;
  parsed.reasoning = app::ReasoningOptions{};
  GenerationResponse reasoning_model(parsed, {"chatcmpl-n", 1, "m"}, nullptr);
  reasoning_model.accumulate(output({delta("Just an answer.", {1}, FinishReason::stop)}, true));
  const json::value body = json::parse(reasoning_model.body());
  CHECK(body.at("choices").at(0).at("message").at("reasoning_content").is_null());
  CHECK(body.at("choices").at(0).at("message").at("content").as_string() == "Just an answer.");
  CHECK(body.at("usage").at("completion_tokens_details").at("reasoning_tokens").as_int64() == 0);

  parsed.reasoning.reset();
  GenerationResponse plain(parsed, {"chatcmpl-p", 1, "m"}, nullptr);
  plain.accumulate(output({delta("<think>x</think>y", {1}, FinishReason::stop)}, true));
  const json::value raw = json::parse(plain.body());
  CHECK(raw.at("choices").at(0).at("message").at("content").as_string() == "<think>x</think>y");
  CHECK_FALSE(raw.at("choices").at(0).at("message").as_object().contains("reasoning_content"));
  CHECK_FALSE(raw.at("usage").as_object().contains("completion_tokens_details"));
}

TEST_CASE("Responses API: a reasoning item precedes the message, reasoning items sent back are read") {
  ResponsesWriter writer(json::object{}, false, app::ReasoningOptions{}, {"resp_1", 1, "m"});
  std::string sse = writer.stream_start();
  sse += writer.stream_events(output({delta("<think>\nPlan", {1, 2})}, false));
  sse += writer.stream_events(output({delta(" it.\n</th", {3, 4})}, false));
  sse += writer.stream_events(output({delta("ink>\n\nDone.", {5, 6}, FinishReason::stop)}, true,
                                     {.prompt_tokens = 2, .completion_tokens = 6}));
  std::vector<std::string> types;
  std::string reasoning_deltas;
  for (std::size_t pos = 0; (pos = sse.find("data: ", pos)) != std::string::npos;) {
    const std::size_t end = sse.find("\n\n", pos);
    const json::object event = json::parse(sse.substr(pos + 6, end - pos - 6)).as_object();
    types.emplace_back(event.at("type").as_string());
    if (types.back() == "response.reasoning_text.delta") reasoning_deltas += std::string(event.at("delta").as_string());
    pos = end;
  }
  CHECK(reasoning_deltas == "Plan it.");
  const std::vector<std::string> want = {
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.reasoning_text.delta", "response.reasoning_text.delta", "response.reasoning_text.done",
      "response.content_part.done", "response.output_item.done", "response.output_item.added",
      "response.content_part.added", "response.output_text.delta", "response.output_text.done",
      "response.content_part.done", "response.output_item.done", "response.completed"};
  CHECK(types == want);
  const json::value body = json::parse(writer.body());
  const json::array& items = body.at("output").as_array();
  REQUIRE(items.size() == 2);
  CHECK(items[0].at("type").as_string() == "reasoning");
  CHECK(items[0].at("content").at(0).at("text").as_string() == "Plan it.");
  CHECK(items[0].at("status").as_string() == "completed");
  CHECK(items[1].at("content").at(0).at("text").as_string() == "Done.");
  CHECK(body.at("usage").at("output_tokens_details").at("reasoning_tokens").as_int64() == 6);  // the closing delta whole

  // Sent back as input: the reasoning becomes the assistant turn's reasoning_content, which Qwen3's
  // template renders in a tool loop (the same prompt as the chat request with reasoning_content).
  const std::string input = R"({"model": "m", "tools": [{"type": "function", "name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
      "input": [{"role": "user", "content": "Weather in Paris?"},
                {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Call it."}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]})";
  auto object = parse_json_body(input);
  REQUIRE(object.ok());
  auto responses = parse_responses_request(*object, qwen3().context);
  REQUIRE(responses.ok());
  const std::string prompt = fixture().tokenizer->decode(responses->generate.request.prompt_ids, false).value();
  CHECK(prompt.find("<think>\nCall it.\n</think>\n\n<tool_call>") != std::string::npos);
  REQUIRE(responses->generate.reasoning);
  CHECK(responses->generate.reasoning->start == ReasoningStart::detect);

  auto encrypted = parse_json_body(R"({"model": "m", "input": [{"type": "reasoning", "encrypted_content": "x"},
                                       {"role": "user", "content": "Hi"}]})");
  REQUIRE(encrypted.ok());
  auto refused = parse_responses_request(*encrypted, qwen3().context);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("encrypted_content") != std::string::npos);
}
