// The Responses API (POST /v1/responses): requests translated into the chat request they mean (the
// chat parser's own rendering is the reference), refusals that name the field, and the output items
// and stream events built from engine outputs.

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "llaisys/grammar/token_vocabulary.hpp"
#include "openai/request_parse.hpp"
#include "server_test_support.hpp"
#include "openai/responses_output.hpp"
#include "openai/responses_request.hpp"

using namespace llaisys;
using namespace llaisys::server;
namespace json = boost::json;

namespace {

using llaisys::server::test::fixture;
using llaisys::server::test::output;

Result<ParsedResponses> parse_responses(std::string_view body) {
  auto object = parse_json_body(body);
  REQUIRE(object.ok());
  return parse_responses_request(*object, fixture().context);
}

ParsedGenerate parse_chat(std::string_view body) {
  auto object = parse_json_body(body);
  REQUIRE(object.ok());
  auto parsed = parse_chat_request(*object, fixture().context);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

// The API error a Responses body gets (status 200 when it parses).
ApiError outcome(std::string_view body) {
  auto parsed = parse_responses(body);
  return parsed.ok() ? ApiError{.status = 200} : responses_parse_error(parsed.status());
}


ChoiceDelta delta(std::string text, std::optional<FinishReason> finish = std::nullopt) {
  ChoiceDelta d;
  d.text = std::move(text);
  d.finish_reason = finish;
  return d;
}

struct Event {
  std::string name;  // the SSE "event:" line
  json::object data;
};

// "event: TYPE\ndata: JSON\n\n"...
std::vector<Event> events_of(const std::string& sse) {
  std::vector<Event> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const std::size_t end = sse.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string event = sse.substr(pos, end - pos);
    const std::size_t newline = event.find('\n');
    REQUIRE(event.starts_with("event: "));
    REQUIRE(newline != std::string::npos);
    REQUIRE(event.substr(newline + 1).starts_with("data: "));
    out.push_back({event.substr(7, newline - 7), json::parse(event.substr(newline + 7)).as_object()});
    pos = end + 2;
  }
  return out;
}

// One writer fed `outputs` streamed, another not: the events and the non-streamed body.
struct Run {
  std::vector<Event> events;
  json::object body;
};

Run run(const std::vector<RequestOutput>& outputs, bool tools) {
  const json::object settings{{"tools", json::array()}, {"tool_choice", "auto"}};
  ResponsesWriter streamed(settings, tools, std::nullopt, {"resp_1", 100, "m"});
  ResponsesWriter whole(settings, tools, std::nullopt, {"resp_1", 100, "m"});
  std::string sse = streamed.stream_start();
  for (const RequestOutput& o : outputs) {
    sse += streamed.stream_events(o);
    whole.accumulate(o);
  }
  return {events_of(sse), json::parse(whole.body()).as_object()};
}

std::vector<std::string> types_of(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.name);
  return out;
}

// The output items without their random ids (item and call), to compare two runs.
json::array items_without_ids(const json::value& output) {
  json::array items = output.as_array();
  for (json::value& item : items) {
    item.as_object().erase("id");
    item.as_object().erase("call_id");
  }
  return items;
}

}  // namespace

TEST_CASE("responses: instructions and input render as the chat messages they mean") {
  auto parsed = parse_responses(R"({"model":"m","instructions":"Be brief.","input":"hi","temperature":0.5,
    "top_p":0.9,"max_output_tokens":9,"stream":true,"metadata":{"k":"v"},"store":true,"user":"u"})");
  REQUIRE(parsed.ok());
  const ParsedGenerate chat = parse_chat(R"({"messages":[{"role":"system","content":"Be brief."},
    {"role":"user","content":"hi"}]})");
  const GenerateRequest& r = parsed->generate.request;
  CHECK(r.prompt_ids == chat.request.prompt_ids);
  CHECK(r.sampling.temperature == 0.5f);
  CHECK(r.sampling.top_p == 0.9f);
  CHECK(*r.stop.max_tokens == 9);
  CHECK(parsed->generate.stream);
  const json::object& s = parsed->settings;
  CHECK(s.at("instructions") == "Be brief.");
  CHECK(s.at("temperature").as_double() == 0.5);
  CHECK(s.at("max_output_tokens").as_int64() == 9);
  CHECK(s.at("metadata") == json::object{{"k", "v"}});
  CHECK(s.at("tool_choice") == "auto");
  CHECK(s.at("parallel_tool_calls") == true);
  CHECK(s.at("text") == json::parse(R"({"format":{"type":"text"}})"));

  auto defaults = parse_responses(R"({"model":"m","input":"hi"})");
  REQUIRE(defaults.ok());
  CHECK(defaults->settings.at("temperature").as_double() == 1.0);
  CHECK(defaults->settings.at("max_output_tokens").is_null());
  CHECK(defaults->settings.at("instructions").is_null());
  // Without max_output_tokens the request may use the rest of the context, as chat.
  CHECK(*defaults->generate.request.stop.max_tokens + static_cast<int32_t>(defaults->generate.request.prompt_ids.size()) ==
        256);
}

TEST_CASE("responses: message, function_call and function_call_output items render as the chat turn") {
  const std::string tool = R"({"type":"function","name":"get_weather","parameters":{"type":"object"}})";
  auto parsed = parse_responses(R"({"model":"m","tools":[)" + tool + R"(],"input":[
    {"role":"user","content":[{"type":"input_text","text":"Weather "},{"type":"input_text","text":"in Paris?"}]},
    {"type":"message","role":"assistant","id":"msg_1","status":"completed",
     "content":[{"type":"output_text","text":"Let me look.","annotations":[],"logprobs":[]}]},
    {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}",
     "status":"completed"},
    {"type":"function_call_output","call_id":"call_1","output":"Sunny."}]})");
  REQUIRE(parsed.ok());
  const ParsedGenerate chat = parse_chat(R"({"tools":[{"type":"function","function":{"name":"get_weather",
    "parameters":{"type":"object"},"strict":true}}],"messages":[
    {"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function",
      "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"Sunny."}]})");
  CHECK(parsed->generate.request.prompt_ids == chat.request.prompt_ids);
  CHECK(parsed->generate.parse_tools);
  // The Response repeats the tools in the Responses form, strict defaulting to true.
  CHECK(parsed->settings.at("tools") ==
        json::parse(R"([{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}])"));
}

TEST_CASE("responses: tool_choice, parallel_tool_calls and text.format reach the chat machinery") {
  const std::string tools = R"("tools":[{"type":"function","name":"f","parameters":{"type":"object"}}])";
  auto forced = parse_responses(R"({"model":"m","input":"x",)" + tools + R"(,"tool_choice":{"type":"function","name":"f"}})");
  REQUIRE(forced.ok());
  CHECK(forced->generate.request.grammar != nullptr);
  CHECK(forced->settings.at("tool_choice") == json::parse(R"({"type":"function","name":"f"})"));
  auto none = parse_responses(R"({"model":"m","input":"x",)" + tools + R"(,"tool_choice":"none"})");
  REQUIRE(none.ok());
  CHECK_FALSE(none->generate.parse_tools);
  // parallel_tool_calls false: the model's choice stops where its first call closes.
  auto single = parse_responses(R"({"model":"m","input":"x",)" + tools + R"(,"parallel_tool_calls":false})");
  REQUIRE(single.ok());
  const auto& stops = single->generate.request.stop.stop;
  CHECK(std::ranges::find(stops, "</tool_call>") != stops.end());
  CHECK(single->settings.at("parallel_tool_calls") == false);
  auto schema = parse_responses(R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"p",
    "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},"strict":true}}})");
  REQUIRE(schema.ok());
  CHECK(schema->generate.request.grammar != nullptr);
  CHECK(schema->settings.at("text").at("format").at("name") == "p");
  auto object = parse_responses(R"({"model":"m","input":"x","text":{"format":{"type":"json_object"}}})");
  REQUIRE(object.ok());
  CHECK(object->generate.request.grammar != nullptr);
}

TEST_CASE("responses: what llaisys does not do is refused with a 400 naming the field") {
  struct Case {
    std::string fields;
    std::string param;
  };
  const std::vector<Case> cases = {
      {R"("previous_response_id":"resp_1")", "previous_response_id"},
      {R"("conversation":"conv_1")", "conversation"},
      {R"("background":true)", "background"},
      {R"("prompt":{"id":"pmpt_1"})", "prompt"},
      {R"("include":["message.output_text.logprobs"])", "include"},
      {R"("include":"x")", "include"},
      {R"("include":["reasoning.encrypted_content","file_search_call.results"])", "include"},
      {R"("include":["reasoning.encrypted_content",7])", "include"},
      {R"("reasoning":{"effort":"high"})", "reasoning.effort"},
      {R"("reasoning":{"summary":"auto"})", "reasoning.summary"},
      {R"("truncation":"auto")", "truncation"},
      {R"("stream_options":{"include_obfuscation":true})", "stream_options.include_obfuscation"},
      {R"("text":{"verbosity":"low"})", "text.verbosity"},
      {R"("text":{"format":{"type":"grammar"}})", "text.format"},
      {R"("text":{"format":{"type":"json_schema","schema":{}}})", "text.format.name"},
      {R"("text":{"format":{"type":"json_schema","name":"x"}})", "text.format.schema"},
      {R"("tools":[{"type":"web_search"}])", "tools"},
      {R"("tools":[{"type":"function","name":"f","defer_loading":true}])", "tools"},
      {R"("tool_choice":{"type":"file_search"})", "tool_choice"},
      {R"("tool_choice":"sometimes")", "tool_choice"},
      {R"("seed":3)", "seed"},
      {R"("messages":[])", "messages"},
      {R"("temperature":3)", "temperature"},
      {R"("top_p":0)", "top_p"},
      {R"("max_output_tokens":0)", "max_output_tokens"},
      {R"("metadata":{"k":1})", "metadata"},
      {R"("store":"yes")", "store"},
  };
  for (const Case& c : cases) {
    const std::string body = R"({"model":"m","input":"hi",)" + c.fields + "}";
    INFO(body);
    const ApiError e = outcome(body);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK(e.message.find(c.param) != std::string::npos);
  }
  // Input items and content parts of other kinds.
  for (const std::string input : {R"([{"type":"reasoning","content":"x"}])", R"([{"type":"item_reference","id":"x"}])",
                                  R"([{"role":"user","content":[{"type":"input_image","image_url":"x"}]}])",
                                  R"([{"role":"user","content":[{"type":"input_file","file_id":"x"}]}])",
                                  R"([{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}])",
                                  R"([{"role":"wizard","content":"x"}])", R"([])", R"(7)"}) {
    INFO(input);
    const ApiError e = outcome(R"({"model":"m","input":)" + input + "}");
    CHECK(e.status == 400);
    CHECK(e.param == "input");
  }
  // openai-node's ResponsesToolRunner asks for encrypted reasoning on every request: there is none.
  CHECK(outcome(R"({"model":"m","input":"hi","include":["reasoning.encrypted_content"]})").status == 200);
  // A reasoning item without text (another server's, summary off) carries nothing to the prompt.
  auto empty_reasoning = parse_responses(R"({"model":"m","input":[{"type":"reasoning","summary":[]},{"role":"user","content":"hi"}]})");
  auto plain = parse_responses(R"({"model":"m","input":"hi"})");
  REQUIRE(empty_reasoning.ok());
  REQUIRE(plain.ok());
  CHECK(empty_reasoning->generate.request.prompt_ids == plain->generate.request.prompt_ids);
  CHECK(outcome(R"({"model":"m","input":"hi","include":[],"reasoning":{"effort":"none"},"truncation":"disabled",
    "store":false,"service_tier":"auto","safety_identifier":"s","prompt_cache_key":"k","background":false,
    "previous_response_id":null,"text":{"verbosity":"medium"}})").status == 200);
  const ApiError context = outcome(R"({"model":"m","input":"hi","max_output_tokens":250})");
  CHECK(context.code == "context_length_exceeded");
  CHECK(context.param == "input");
  CHECK(context.message.find("max_output_tokens") != std::string::npos);
}

TEST_CASE("responses stream: the event sequence, sequence numbers, deltas that make the final text") {
  const Run r = run({output({delta("Hel")}, false), output({delta("lo!", FinishReason::stop)}, true, {5, 2, 1})},
                    false);
  const std::vector<std::string> expected = {
      "response.created",           "response.in_progress",      "response.output_item.added",
      "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done",  "response.content_part.done", "response.output_item.done",
      "response.completed"};
  CHECK(types_of(r.events) == expected);
  std::string text;
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    CHECK(e.data.at("type").as_string() == e.name);
    CHECK(e.data.at("sequence_number").as_int64() == static_cast<int64_t>(i));
    if (e.name == "response.output_text.delta") text += std::string(e.data.at("delta").as_string());
  }
  CHECK(text == "Hello!");
  CHECK(r.events[0].data.at("response").at("status") == "in_progress");
  CHECK(r.events[0].data.at("response").at("output").as_array().empty());
  const json::object& final_response = r.events.back().data.at("response").as_object();
  CHECK(final_response.at("status") == "completed");
  CHECK(final_response.at("output").at(0).at("content").at(0).at("text") == "Hello!");
  CHECK(final_response.at("usage") ==
        json::parse(R"({"input_tokens":5,"input_tokens_details":{"cached_tokens":1,"cache_write_tokens":0},
          "output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7})"));
  // The non-streamed body is the same response.
  CHECK(r.body.at("id") == "resp_1");
  CHECK(r.body.at("status") == "completed");
  CHECK(items_without_ids(r.body.at("output")) == items_without_ids(final_response.at("output")));
  CHECK(r.body.at("usage") == final_response.at("usage"));
}

TEST_CASE("responses: text and tool calls, split anywhere, become items in the order written") {
  const std::string text = "Checking.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
                           "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
  for (std::size_t cut = 1; cut < text.size(); cut += 2) {
    INFO("cut " << cut);
    const Run r = run({output({delta(text.substr(0, cut))}, false),
                       output({delta(text.substr(cut), FinishReason::stop)}, true)},
                      true);
    const json::array& items = r.body.at("output").as_array();
    REQUIRE(items.size() == 3);
    CHECK(items[0].at("type") == "message");
    CHECK(items[0].at("content").at(0).at("text") == "Checking.\n");
    CHECK(items[1].at("type") == "function_call");
    CHECK(items[1].at("name") == "f");
    CHECK(items[1].at("arguments") == R"({"a":1})");
    CHECK(items[1].at("status") == "completed");
    CHECK(items[1].at("call_id").as_string().starts_with("call_"));
    CHECK(items[1].at("id").as_string().starts_with("fc_"));
    CHECK(items[2].at("name") == "g");
    // The stream's items, in the same order, each added and done once; arguments by delta.
    std::vector<std::string> added, done;
    std::string arguments;
    for (const Event& e : r.events) {
      if (e.name == "response.output_item.added") added.push_back(std::string(e.data.at("item").at("type").as_string()));
      if (e.name == "response.output_item.done") done.push_back(std::string(e.data.at("item").at("type").as_string()));
      if (e.name == "response.function_call_arguments.delta" && e.data.at("output_index") == 1) {
        arguments += std::string(e.data.at("delta").as_string());
      }
    }
    CHECK(added == std::vector<std::string>{"message", "function_call", "function_call"});
    CHECK(done == added);
    CHECK(arguments == R"({"a":1})");
    CHECK(items_without_ids(r.events.back().data.at("response").at("output")) == items_without_ids(items));
  }
}

TEST_CASE("responses: only a call is one function_call item, only whitespace or nothing is one message") {
  const Run call = run({output({delta("\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>\n", FinishReason::stop)}, true)},
                       true);
  REQUIRE(call.body.at("output").as_array().size() == 1);
  CHECK(call.body.at("output").at(0).at("type") == "function_call");
  CHECK(call.body.at("output").at(0).at("arguments") == "{}");
  const Run empty = run({output({delta("", FinishReason::stop)}, true)}, false);
  REQUIRE(empty.body.at("output").as_array().size() == 1);
  CHECK(empty.body.at("output").at(0).at("content").at(0).at("text") == "");
  const Run space = run({output({delta(" \n", FinishReason::stop)}, true)}, false);
  CHECK(space.body.at("output").at(0).at("content").at(0).at("text") == " \n");
  std::string streamed;
  for (const Event& e : space.events) {
    if (e.name == "response.output_text.delta") streamed += std::string(e.data.at("delta").as_string());
  }
  CHECK(streamed == " \n");
}

TEST_CASE("responses: a cut output is incomplete with reason max_output_tokens") {
  const Run r = run({output({delta("abc", FinishReason::length)}, true, {3, 4, 0})}, false);
  CHECK(r.body.at("status") == "incomplete");
  CHECK(r.body.at("incomplete_details") == json::parse(R"({"reason":"max_output_tokens"})"));
  CHECK(r.body.at("completed_at").is_null());
  CHECK(r.body.at("output").at(0).at("status") == "incomplete");
  CHECK(r.events.back().name == "response.incomplete");
}

TEST_CASE("responses: an engine failure ends the stream with an error event") {
  ResponsesWriter writer({}, false, std::nullopt, {"resp_1", 1, "m"});
  std::string sse = writer.stream_start();
  sse += writer.stream_events(output({delta("a")}, false));
  ChoiceDelta failed = delta("", FinishReason::error);
  failed.finish_detail = "model pass failed";
  sse += writer.stream_events(output({failed}, true));
  const std::vector<Event> events = events_of(sse);
  REQUIRE_FALSE(events.empty());
  const Event& last = events.back();
  CHECK(last.name == "error");
  CHECK(last.data.at("code") == "server_error");
  CHECK(last.data.at("param").is_null());
  CHECK(last.data.at("message").as_string().find("model pass failed") != std::string::npos);
  REQUIRE(writer.error());
  CHECK(writer.error()->status == 500);
}
