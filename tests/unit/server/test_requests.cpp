// OpenAI request parsing (hostile values included) and response building (chunks, usage, tools).

#include <catch2/catch.hpp>

#include <limits>
#include <map>

#include <boost/json.hpp>

#include "http/sse.hpp"
#include "openai/errors.hpp"
#include "openai/request_parse.hpp"
#include "server_test_support.hpp"
#include "openai/response.hpp"

using namespace llaisys;
using namespace llaisys::server;
namespace json = boost::json;

namespace {

using llaisys::server::test::fixture;
using llaisys::server::test::output;

// The API error a chat (or completions) body gets, or status 200 when it parses.
ApiError outcome(const std::string& body, bool chat = true) {
  auto object = parse_json_body(body);
  if (!object.ok()) return from_parse_status(object.status());
  auto parsed = chat ? parse_chat_request(*object, fixture().context)
                     : parse_completion_request(*object, fixture().context);
  if (!parsed.ok()) return from_parse_status(parsed.status());
  return ApiError{.status = 200};
}

const std::string kMsg = R"("messages":[{"role":"user","content":"hi"}])";

// "1,1,...,1": n token ids for a JSON list.
std::string ids_list(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i == 0 ? "1" : ",1";
  return out;
}

}  // namespace

TEST_CASE("hostile and malformed chat bodies get 400 with the right param") {
  struct Case {
    std::string body;
    int status;
    std::string param;
    std::string code;
  };
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  const std::vector<Case> cases = {
      {"", 400, "", ""},
      {"{", 400, "", ""},
      {"[]", 400, "", ""},
      {"{\"messages\": \"hi\"}", 400, "messages", ""},
      {"{" + kMsg + ",\"x\":" + deep + "}", 400, "", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, "", ""},
      {"{\"messages\":[]}", 400, "messages", ""},
      {"{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400, "messages", ""},
      {"{\"messages\":[{\"role\":\"user\"}]}", 400, "messages", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400, "messages", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":42}]}", 400, "messages", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}]}", 200, "", ""},
      {"{" + kMsg + ",\"temperature\":\"hot\"}", 400, "temperature", ""},
      {"{" + kMsg + ",\"temperature\":3}", 400, "temperature", ""},
      {"{" + kMsg + ",\"temperature\":1e309}", 400, "temperature", ""},
      {"{" + kMsg + ",\"top_p\":0}", 400, "top_p", ""},
      {"{" + kMsg + ",\"top_k\":-5}", 400, "top_k", ""},
      {"{" + kMsg + ",\"top_k\":1.5}", 400, "top_k", ""},
      {"{" + kMsg + ",\"min_p\":2}", 400, "min_p", ""},
      {"{" + kMsg + ",\"presence_penalty\":-3}", 400, "presence_penalty", ""},
      {"{" + kMsg + ",\"frequency_penalty\":9}", 400, "frequency_penalty", ""},
      {"{" + kMsg + ",\"repetition_penalty\":0}", 400, "repetition_penalty", ""},
      {"{" + kMsg + ",\"n\":0}", 400, "n", ""},
      {"{" + kMsg + ",\"n\":1000000000000}", 400, "n", ""},
      {"{" + kMsg + ",\"n\":17}", 400, "n", ""},
      {"{" + kMsg + ",\"n\":16}", 200, "", ""},
      {"{" + kMsg + ",\"max_tokens\":0}", 400, "max_tokens", ""},
      {"{" + kMsg + ",\"max_tokens\":-1}", 400, "max_tokens", ""},
      {"{" + kMsg + ",\"max_tokens\":99999999999999}", 400, "max_tokens", ""},
      {"{" + kMsg + ",\"max_tokens\":250}", 400, "messages", "context_length_exceeded"},
      {"{" + kMsg + ",\"max_completion_tokens\":250}", 400, "messages", "context_length_exceeded"},
      {"{" + kMsg + ",\"max_tokens\":8}", 200, "", ""},
      {"{" + kMsg + ",\"stop\":5}", 400, "stop", ""},
      {"{" + kMsg + ",\"stop\":[\"a\",3]}", 400, "stop", ""},
      {"{" + kMsg + ",\"stop\":[\"\"]}", 400, "stop", ""},
      {"{" + kMsg + ",\"stop\":\"end\"}", 200, "", ""},
      {"{" + kMsg + ",\"logit_bias\":{\"abc\":1}}", 400, "logit_bias", ""},
      {"{" + kMsg + ",\"logit_bias\":{\"99999999\":1}}", 400, "logit_bias", ""},
      {"{" + kMsg + ",\"logit_bias\":{\"5\":500}}", 400, "logit_bias", ""},
      {"{" + kMsg + ",\"logit_bias\":{\"5\":-100}}", 200, "", ""},
      {"{" + kMsg + ",\"stop_token_ids\":[" + ids_list(1025) + "]}", 400, "stop_token_ids", ""},
      {"{" + kMsg + ",\"stop_token_ids\":[" + ids_list(1024) + "]}", 200, "", ""},
      {"{" + kMsg + ",\"logprobs\":1}", 400, "logprobs", ""},
      {"{" + kMsg + ",\"top_logprobs\":21}", 400, "top_logprobs", ""},
      {"{" + kMsg + ",\"top_logprobs\":2}", 400, "top_logprobs", ""},
      {"{" + kMsg + ",\"logprobs\":false,\"top_logprobs\":0}", 400, "top_logprobs", ""},
      {"{" + kMsg + ",\"logprobs\":true,\"top_logprobs\":2}", 200, "", ""},
      {"{" + kMsg + ",\"stream\":\"yes\"}", 400, "stream", ""},
      {"{" + kMsg + ",\"stream_options\":3}", 400, "stream_options", ""},
      {"{" + kMsg + ",\"seed\":\"x\"}", 400, "seed", ""},
      {"{" + kMsg + ",\"user\":5}", 400, "user", ""},
      {"{" + kMsg + ",\"tools\":{}}", 400, "tools", ""},
      {"{" + kMsg + ",\"tools\":[{\"type\":\"function\"}]}", 400, "tools", ""},
      {"{" + kMsg + ",\"tool_choice\":\"sometimes\"}", 400, "tool_choice", ""},
      {"{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(2000, 'x') + " y\"}]}", 400, "messages",
       "context_length_exceeded"},
  };
  for (const Case& c : cases) {
    INFO(c.body.substr(0, 200));
    const ApiError e = outcome(c.body);
    CHECK(e.status == c.status);
    if (c.status != 200) {
      CHECK(e.type == "invalid_request_error");
      CHECK(e.param == c.param);
      CHECK(e.code == c.code);
      CHECK_FALSE(e.message.empty());
    }
  }
}

TEST_CASE("completions prompts: text, ids, lists of either (a batch), out-of-vocabulary ids are refused") {
  CHECK(outcome(R"({"prompt":"hello"})", false).status == 200);
  CHECK(outcome(R"({"prompt":[1,2,3]})", false).status == 200);
  CHECK(outcome(R"({"prompt":["hello"]})", false).status == 200);
  CHECK(outcome(R"({"prompt":[[1,2]]})", false).status == 200);
  CHECK(outcome(R"({"prompt":["a","b"]})", false).status == 200);
  CHECK(outcome(R"({"prompt":[[1],[2,3]]})", false).status == 200);
  CHECK(outcome(R"({"prompt":["a",[1,2]]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[[1],"a"]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[[1],[]]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[1,-2]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[151936]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[1.5]})", false).status == 400);
  CHECK(outcome(R"({"prompt":""})", false).status == 400);
  CHECK(outcome(R"({"prompt":null})", false).status == 400);
  CHECK(outcome(R"({"prompt":"x","logprobs":21})", false).param == "logprobs");
  CHECK(outcome(R"({"prompt":"x","logprobs":5})", false).status == 200);
}

namespace {

Result<ParsedGenerate> parse_completion(const std::string& text) {
  auto body = parse_json_body(text);
  REQUIRE(body.ok());
  return parse_completion_request(*body, fixture().context);
}

}  // namespace

TEST_CASE("completions batches: one engine request per prompt, max_tokens 16 by default, best_of, echo") {
  auto batch = parse_completion(R"({"prompt":["hello there","a"],"n":2})");
  REQUIRE(batch.ok());
  REQUIRE(batch->prompts.size() == 2);
  const std::vector<std::string> texts = {"hello there", "a"};
  for (std::size_t i = 0; i < 2; ++i) {
    const GenerateRequest r = batch->prompt_request(i);
    CHECK(r.prompt_ids == fixture().tokenizer->encode(texts[i], true).value());
    CHECK(r.n == 2);
    CHECK(r.stop.max_tokens == kDefaultCompletionMaxTokens);
    CHECK(r.num_prompt_logprobs == -1);
  }
  // The default is cut to the rest of the context; an explicit value is kept.
  CHECK(parse_completion("{\"prompt\":[" + ids_list(250) + "]}")->prompt_request(0).stop.max_tokens == 6);
  CHECK(parse_completion(R"({"prompt":"x","max_tokens":40})")->prompt_request(0).stop.max_tokens == 40);
  // A batch over the context names the prompt.
  const auto over = parse_completion("{\"prompt\":[[1],[" + ids_list(300) + "]]}");
  REQUIRE_FALSE(over.ok());
  CHECK(from_parse_status(over.status(), "prompt").param == "prompt");
  CHECK(from_parse_status(over.status(), "prompt").code == "context_length_exceeded");
  std::string many = "{\"prompt\":[\"a\"";
  for (int i = 1; i < kMaxPrompts; ++i) many += ",\"a\"";
  CHECK(parse_completion(many + "]}").ok());
  CHECK(outcome(many + ",\"b\"]}", false).param == "prompt");

  // best_of: the engine makes best_of candidates (with their logprobs, to rank them); n are returned.
  const auto best = parse_completion(R"({"prompt":"x","n":2,"best_of":5})");
  REQUIRE(best.ok());
  CHECK(best->best_of == 5);
  CHECK(best->request.n == 2);
  CHECK(best->prompt_request(0).n == 5);
  CHECK(best->request.sampling.num_logprobs == 0);
  CHECK_FALSE(best->logprobs);
  CHECK(parse_completion(R"({"prompt":"x","n":2,"best_of":2})")->best_of == 0);
  CHECK(outcome(R"({"prompt":"x","n":3,"best_of":2})", false).param == "best_of");
  CHECK(outcome(R"({"prompt":"x","best_of":17})", false).param == "best_of");
  CHECK(outcome(R"({"prompt":"x","best_of":2,"stream":true})", false).param == "best_of");
  CHECK(outcome(R"({"prompt":"x","best_of":1,"stream":true})", false).status == 200);

  // echo + logprobs asks the engine for the prompt's logprobs; either alone does not.
  const auto echo = parse_completion(R"({"prompt":"x y","echo":true,"logprobs":3})");
  REQUIRE(echo.ok());
  CHECK(echo->request.num_prompt_logprobs == 3);
  CHECK(echo->prompts[0].text == "x y");
  CHECK(parse_completion(R"({"prompt":"x","logprobs":3})")->request.num_prompt_logprobs == -1);
  CHECK(parse_completion(R"({"prompt":"x","echo":true})")->request.num_prompt_logprobs == -1);

  CHECK(outcome(R"({"prompt":"x","suffix":"y"})", false).param == "suffix");
  CHECK(outcome(R"({"prompt":"x","suffix":""})", false).status == 200);
  CHECK(outcome(R"({"prompt":"x","suffix":null})", false).status == 200);
}

TEST_CASE("embeddings: up to 2048 inputs in every form, dimensions within the embedding size") {
  auto parse = [](const std::string& text) {
    auto body = parse_json_body(text);
    REQUIRE(body.ok());
    return parse_embedding_request(*body, fixture().context);
  };
  std::string inputs = "[\"a\"";
  for (int i = 1; i < kMaxEmbeddingInputs; ++i) inputs += i % 2 == 0 ? ",\"a\"" : ",\"b c\"";
  const auto full = parse("{\"input\":" + inputs + "]}");
  REQUIRE(full.ok());
  CHECK(full->inputs.size() == static_cast<std::size_t>(kMaxEmbeddingInputs));
  const auto over = parse("{\"input\":" + inputs + ",\"d\"]}");
  REQUIRE_FALSE(over.ok());
  CHECK(from_parse_status(over.status()).param == "input");
  CHECK(parse(R"({"input":[[1,2],[3]]})")->inputs.size() == 2);
  CHECK(parse(R"({"input":[1,2,3]})")->inputs.size() == 1);
  CHECK(parse(R"({"input":"x"})")->dimensions == 0);
  CHECK(parse(R"({"input":"x","dimensions":16})")->dimensions == 16);
  CHECK(parse(R"({"input":"x","dimensions":64})")->dimensions == 64);
  for (const char* bad : {R"({"input":"x","dimensions":0})", R"({"input":"x","dimensions":65})",
                          R"({"input":"x","dimensions":"8"})", R"({"input":"x","dimensions":1.5})"}) {
    INFO(bad);
    const auto refused = parse(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(from_parse_status(refused.status()).param == "dimensions");
  }
}

TEST_CASE("parsed chat request carries the sampling values and the rendered prompt") {
  auto body = parse_json_body(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,
    "top_p":0.9,"top_k":-1,"min_p":0.1,"seed":7,"stop":["x","y"],"n":2,"max_tokens":9,"logprobs":true,
    "top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},"logit_bias":{"11":2.5},"user":"u"})");
  REQUIRE(body.ok());
  auto p = parse_chat_request(*body, fixture().context);
  REQUIRE(p.ok());
  const SamplingParams& s = p->request.sampling;
  CHECK(s.temperature == Approx(0.5));
  CHECK(s.top_p == Approx(0.9));
  CHECK(s.top_k == 0);
  CHECK(s.min_p == Approx(0.1));
  CHECK(s.seed == 7u);
  CHECK(s.num_logprobs == 3);
  REQUIRE(s.logit_bias.size() == 1);
  CHECK(s.logit_bias[0].first == 11);
  CHECK(p->request.stop.stop == std::vector<std::string>{"x", "y"});
  CHECK(p->request.n == 2);
  CHECK(p->request.stop.max_tokens == 9);
  CHECK(p->stream);
  CHECK(p->include_usage);
  // The prompt is exactly the template's rendering, encoded without added specials.
  auto rendered = fixture().chat_template->render(json::parse(R"([{"role":"user","content":"hi"}])"),
                                                  {.add_generation_prompt = true});
  REQUIRE(rendered.ok());
  CHECK(p->request.prompt_ids == fixture().tokenizer->encode(*rendered, false).value());
}

TEST_CASE("text content parts render like the equivalent string") {
  auto a = render_messages(json::parse(R"([{"role":"user","content":[{"type":"text","text":"ab"},{"type":"text","text":"c"}]}])"),
                           nullptr, fixture().context);
  auto b = render_messages(json::parse(R"([{"role":"user","content":"abc"}])"), nullptr, fixture().context);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->text == b->text);
  CHECK(a->ids == b->ids);
}

TEST_CASE("without max_tokens a request may use the rest of the context") {
  auto body = parse_json_body(R"({"messages":[{"role":"user","content":"hi"}]})");
  auto p = parse_chat_request(*body, fixture().context);
  REQUIRE(p.ok());
  CHECK(*p->request.stop.max_tokens + static_cast<int32_t>(p->request.prompt_ids.size()) == 256);
}

namespace {

ChoiceDelta delta(int32_t index, std::string text, std::optional<FinishReason> finish = std::nullopt) {
  ChoiceDelta d;
  d.index = index;
  d.text = std::move(text);
  d.finish_reason = finish;
  return d;
}

std::vector<json::value> events_of(const std::string& sse, bool& done_last) {
  std::vector<json::value> out;
  done_last = false;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const std::size_t end = sse.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string event = sse.substr(pos, end - pos);
    REQUIRE(event.rfind("data: ", 0) == 0);
    CHECK_FALSE(done_last);  // nothing after [DONE]
    if (event == "data: [DONE]") {
      done_last = true;
    } else {
      out.push_back(json::parse(event.substr(6)));
    }
    pos = end + 2;
  }
  return out;
}

ParsedGenerate parsed_chat(int32_t n, bool tools, bool usage) {
  ParsedGenerate p;
  p.kind = ApiKind::chat;
  p.request.n = n;
  p.parse_tools = tools;
  p.include_usage = usage;
  p.stream = true;
  return p;
}

}  // namespace

TEST_CASE("streamed chunks: role first, one id, one finish_reason per choice, usage, [DONE] last") {
  const std::vector<RequestOutput> outputs = {
      output({delta(0, "Hel"), delta(1, "Wor")}, false),
      output({delta(0, "lo")}, false),
      output({delta(0, "!", FinishReason::stop), delta(1, "ld", FinishReason::length)}, true, {5, 6, 2}),
  };
  GenerationResponse streamed(parsed_chat(2, false, true), {"chatcmpl-1", 1, "m"}, nullptr);
  GenerationResponse whole(parsed_chat(2, false, true), {"chatcmpl-1", 1, "m"}, nullptr);
  std::string sse;
  for (const RequestOutput& o : outputs) {
    sse += streamed.stream_events(o);
    whole.accumulate(o);
  }
  bool done_last = false;
  const auto events = events_of(sse, done_last);
  CHECK(done_last);
  std::map<int64_t, std::string> text;
  std::map<int64_t, int> finishes, roles;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json::object& e = events[i].as_object();
    CHECK(e.at("id").as_string() == "chatcmpl-1");
    CHECK(e.at("object").as_string() == "chat.completion.chunk");
    for (const json::value& c : e.at("choices").as_array()) {
      const int64_t index = c.at("index").as_int64();
      const json::object& d = c.at("delta").as_object();
      if (d.contains("role")) {
        ++roles[index];
        CHECK(text[index].empty());  // the role comes with the first chunk
      }
      if (d.contains("content")) text[index] += std::string(d.at("content").as_string());
      if (!c.at("finish_reason").is_null()) ++finishes[index];
    }
    if (i + 1 == events.size()) {
      CHECK(e.at("choices").as_array().empty());
      CHECK(e.at("usage").at("completion_tokens").as_int64() == 6);
      CHECK(e.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64() == 2);
    }
  }
  CHECK(text[0] == "Hello!");
  CHECK(text[1] == "World");
  CHECK(roles[0] == 1);
  CHECK(roles[1] == 1);
  CHECK(finishes[0] == 1);
  CHECK(finishes[1] == 1);
  // The non-streamed body has the same text.
  const json::value body = json::parse(whole.body());
  CHECK(body.at("choices").at(0).at("message").at("content").as_string() == "Hello!");
  CHECK(body.at("choices").at(0).at("finish_reason").as_string() == "stop");
  CHECK(body.at("choices").at(1).at("message").at("content").as_string() == "World");
  CHECK(body.at("choices").at(1).at("finish_reason").as_string() == "length");
  CHECK(body.at("usage").at("total_tokens").as_int64() == 11);
}

TEST_CASE("a tool call split over deltas streams as tool_calls with finish_reason tool_calls") {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  for (std::size_t cut = 1; cut < text.size(); cut += 3) {
    GenerationResponse streamed(parsed_chat(1, true, false), {"id", 1, "m"}, nullptr);
    GenerationResponse whole(parsed_chat(1, true, false), {"id", 1, "m"}, nullptr);
    const std::vector<RequestOutput> outputs = {output({delta(0, text.substr(0, cut))}, false),
                                                output({delta(0, text.substr(cut), FinishReason::stop)}, true)};
    std::string sse;
    for (const RequestOutput& o : outputs) {
      sse += streamed.stream_events(o);
      whole.accumulate(o);
    }
    bool done_last = false;
    const auto events = events_of(sse, done_last);
    std::string content, finish;
    int calls = 0;
    for (const json::value& e : events) {
      for (const json::value& c : e.at("choices").as_array()) {
        const json::object& d = c.at("delta").as_object();
        if (d.contains("content")) content += std::string(d.at("content").as_string());
        if (d.contains("tool_calls")) {
          const json::value& call = d.at("tool_calls").at(0);
          CHECK(call.at("function").at("name").as_string() == "f");
          CHECK(call.at("function").at("arguments").as_string() == R"({"a":1})");
          ++calls;
        }
        if (!c.at("finish_reason").is_null()) finish = std::string(c.at("finish_reason").as_string());
      }
    }
    INFO("cut " << cut);
    CHECK(content.empty());
    CHECK(calls == 1);
    CHECK(finish == "tool_calls");
    const json::value body = json::parse(whole.body());
    CHECK(body.at("choices").at(0).at("message").at("content").is_null());
    CHECK(body.at("choices").at(0).at("finish_reason").as_string() == "tool_calls");
    CHECK(body.at("choices").at(0).at("message").at("tool_calls").at(0).at("function").at("name").as_string() == "f");
  }
}

TEST_CASE("an engine failure mid-stream ends with an error event, then [DONE]") {
  GenerationResponse streamed(parsed_chat(1, false, true), {"id", 1, "m"}, nullptr);
  std::string sse = streamed.stream_events(output({delta(0, "a")}, false));
  ChoiceDelta failed = delta(0, "", FinishReason::error);
  failed.finish_detail = "model pass failed";
  sse += streamed.stream_events(output({failed}, true));
  CHECK(sse.ends_with("data: [DONE]\n\n"));
  bool done_last = false;
  const auto events = events_of(sse, done_last);
  REQUIRE(events.size() == 2);
  CHECK(events.back().at("error").at("message").as_string().find("model pass failed") != std::string::npos);
  REQUIRE(streamed.error());
  CHECK(streamed.error()->status == 500);
}

TEST_CASE("sanitize_utf8 keeps valid text and replaces broken bytes") {
  CHECK(sanitize_utf8("héllo 世界") == "héllo 世界");
  CHECK(sanitize_utf8("a\xff" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(sanitize_utf8("\xe4\xb8") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(sanitize_utf8("\xed\xa0\x80") != "\xed\xa0\x80");  // surrogates are not UTF-8
  CHECK(sanitize_utf8("\xc0\x80") != "\xc0\x80");          // overlong
}

TEST_CASE("a completions batch streams choice j of prompt i as index i * n + j, [DONE] once all are done") {
  auto parsed = parse_completion(R"({"prompt":["a","b"],"n":2,"stream":true,"stream_options":{"include_usage":true}})");
  REQUIRE(parsed.ok());
  GenerationResponse streamed(*parsed, {"cmpl-1", 1, "m"}, fixture().tokenizer);
  GenerationResponse whole(*parsed, {"cmpl-1", 1, "m"}, fixture().tokenizer);
  // Outputs of the two prompts' engine requests, interleaved.
  const std::vector<std::pair<std::size_t, RequestOutput>> outputs = {
      {1, output({delta(0, "x"), delta(1, "y")}, false, {1, 2, 0})},
      {0, output({delta(0, "p", FinishReason::stop), delta(1, "q", FinishReason::stop)}, true, {1, 2, 0})},
      {1, output({delta(0, "z", FinishReason::length), delta(1, "w", FinishReason::length)}, true, {3, 4, 1})},
  };
  std::string sse;
  for (const auto& [prompt, o] : outputs) {
    CHECK(sse.find("[DONE]") == std::string::npos);
    sse += streamed.stream_events(o, prompt);
    whole.accumulate(o, prompt);
  }
  bool done_last = false;
  const auto events = events_of(sse, done_last);
  CHECK(done_last);
  std::map<int64_t, std::string> text;
  std::map<int64_t, int> finishes;
  for (const json::value& e : events) {
    for (const json::value& c : e.at("choices").as_array()) {
      text[c.at("index").as_int64()] += std::string(c.at("text").as_string());
      if (!c.at("finish_reason").is_null()) ++finishes[c.at("index").as_int64()];
    }
  }
  CHECK(text == std::map<int64_t, std::string>{{0, "p"}, {1, "q"}, {2, "xz"}, {3, "yw"}});
  CHECK(finishes == std::map<int64_t, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}});
  const json::value& usage = events.back().at("usage");
  CHECK(usage.at("prompt_tokens").as_int64() == 4);
  CHECK(usage.at("completion_tokens").as_int64() == 6);
  CHECK(usage.at("prompt_tokens_details").at("cached_tokens").as_int64() == 1);
  const json::value body = json::parse(whole.body());
  const json::array& choices = body.at("choices").as_array();
  REQUIRE(choices.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(choices[i].at("index").as_int64() == static_cast<int64_t>(i));
    CHECK(choices[i].at("text").as_string() == text[static_cast<int64_t>(i)]);
  }
  CHECK(body.at("usage").at("total_tokens").as_int64() == 10);
}

namespace {

ChoiceDelta scored(int32_t index, std::string text, std::vector<float> logprobs) {
  ChoiceDelta d = delta(index, std::move(text), FinishReason::length);
  for (float lp : logprobs) d.logprobs.push_back({.token = 5, .logprob = lp, .top = {{5, lp}}});
  return d;
}

}  // namespace

TEST_CASE("best_of returns the n candidates with the highest cumulative logprob, best first") {
  auto parsed = parse_completion(R"({"prompt":"a","n":2,"best_of":4})");
  REQUIRE(parsed.ok());
  GenerationResponse response(*parsed, {"cmpl-1", 1, "m"}, fixture().tokenizer);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  response.accumulate(output({scored(0, "c0", {-1.0f, -1.0f}), scored(1, "c1", {-0.5f, -0.25f}),
                              scored(2, "c2", {-0.1f, nan}), scored(3, "c3", {-1.5f, -0.25f})},
                             true, {1, 8, 0}));
  const json::value body = json::parse(response.body());
  const json::array& choices = body.at("choices").as_array();
  REQUIRE(choices.size() == 2);
  CHECK(choices[0].at("text").as_string() == "c1");  // -0.75
  CHECK(choices[1].at("text").as_string() == "c3");  // -1.75 beats -2 (c0) and NaN (c2)
  CHECK(choices[0].at("index").as_int64() == 0);
  CHECK(choices[1].at("index").as_int64() == 1);
  CHECK(choices[0].at("logprobs").is_null());  // ranked by them, not asked for
  CHECK(body.at("usage").at("completion_tokens").as_int64() == 8);
}

namespace {

std::shared_ptr<const text::Tokenizer> stories_tokenizer() {
  static auto tokenizer = [] {
    auto loaded = text::Tokenizer::from_model_dir(std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K");
    REQUIRE(loaded.ok());
    return loaded.value();
  }();
  return tokenizer;
}

// A token's bytes read off its vocabulary entry: "▁" is a space, "<0xNN>" the byte, special tokens
// their text.
std::string vocab_bytes(TokenId id) {
  const std::string piece = stories_tokenizer()->token_text(id).value();
  if (stories_tokenizer()->is_special(id)) return piece;
  if (piece.size() == 6 && piece.starts_with("<0x") && piece.ends_with(">")) {
    return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  }
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

std::vector<int64_t> byte_values(const std::string& bytes) {
  std::vector<int64_t> out;
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}

std::vector<int64_t> json_ints(const json::value& list) {
  std::vector<int64_t> out;
  for (const json::value& v : list.as_array()) out.push_back(v.as_int64());
  return out;
}

}  // namespace

TEST_CASE("SentencePiece logprobs: each token's own bytes, chat keeps tokens of equal text apart") {
  // 403 "▁Once", 13 "<0x0A>", 231 "<0xE4>" (a lone UTF-8 lead byte), 2 "</s>"; 410 "▁" and 35
  // "<0x20>" are both a space.
  const std::vector<TokenId> ids = {403, 13, 231, 2};
  ChoiceDelta d = delta(0, "Once\n", FinishReason::stop);
  for (TokenId id : ids) d.logprobs.push_back({.token = id, .logprob = -1.0f, .top = {{410, -0.5f}, {35, -0.75f}, {id, -1.0f}}});
  ParsedGenerate chat = parsed_chat(1, false, false);
  chat.logprobs = true;
  chat.top_logprobs = 3;
  GenerationResponse response(chat, {"chatcmpl-1", 1, "m"}, stories_tokenizer());
  response.accumulate(output({d}, true));
  const json::value body = json::parse(response.body());
  const json::array& content = body.at("choices").at(0).at("logprobs").at("content").as_array();
  REQUIRE(content.size() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    INFO("token " << ids[i]);
    const std::string expected = vocab_bytes(ids[i]);
    CHECK(json_ints(content[i].at("bytes")) == byte_values(expected));
    CHECK(content[i].at("token").as_string() == sanitize_utf8(expected));
    const json::array& top = content[i].at("top_logprobs").as_array();
    REQUIRE(top.size() == 3);
    CHECK(json_ints(top[0].at("bytes")) == std::vector<int64_t>{' '});
    CHECK(json_ints(top[1].at("bytes")) == std::vector<int64_t>{' '});
    CHECK(top[1].at("logprob").as_double() == -0.75);
  }
  CHECK(content[0].at("token").as_string() == " Once");
  CHECK(content[2].at("token").as_string() == "\xEF\xBF\xBD");
  CHECK(content[3].at("token").as_string() == "</s>");
}

TEST_CASE("echo + logprobs: the prompt's entries first (the first without a logprob), offsets add up") {
  ParsedGenerate p;
  p.kind = ApiKind::completion;
  p.logprobs = true;
  p.top_logprobs = 2;
  p.echo = true;
  p.prompts = {{.ids = {1, 403, 410}, .text = "Once "}};
  GenerationResponse response(p, {"cmpl-1", 1, "m"}, stories_tokenizer());
  RequestOutput out = output({delta(0, "the", FinishReason::length)}, true);
  out.prompt_logprobs = {{.token = 403, .logprob = -2.0f, .top = {{403, -2.0f}, {13, -3.0f}}},
                         {.token = 410, .logprob = -1.0f, .top = {{410, -1.0f}, {35, -1.5f}}}};
  out.choices[0].logprobs = {{.token = 265, .logprob = -0.5f, .top = {{265, -0.5f}, {410, -2.5f}}}};
  response.accumulate(out);
  const json::value choice = json::parse(response.body()).at("choices").at(0);
  CHECK(choice.at("text").as_string() == "Once the");
  const json::value& lp = choice.at("logprobs");
  CHECK(lp.at("tokens") == json::parse(R"(["<s>", " Once", " ", " the"])"));
  CHECK(lp.at("token_logprobs") == json::parse("[null, -2.0, -1.0, -0.5]"));
  CHECK(lp.at("text_offset") == json::parse("[0, 3, 8, 9]"));
  CHECK(lp.at("top_logprobs").at(0).is_null());
  CHECK(lp.at("top_logprobs").at(1) == json::parse(R"({" Once": -2.0, "\n": -3.0})"));
  // 410 and 35 are both " ": the dict keeps the more likely one's value.
  CHECK(lp.at("top_logprobs").at(2) == json::parse(R"({" ": -1.0})"));
}
