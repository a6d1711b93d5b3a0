// OpenAI request parsing (hostile values included) and response building (chunks, usage, tools).

#include <catch2/catch.hpp>

#include <map>

#include <boost/json.hpp>

#include "http/sse.hpp"
#include "openai/errors.hpp"
#include "openai/request_parse.hpp"
#include "openai/response.hpp"

using namespace llaisys;
using namespace llaisys::server;
namespace json = boost::json;

namespace {

const std::filesystem::path kQwen2Dir = std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer";

struct Fixture {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::optional<text::ChatTemplate> chat_template;
  ModelTextContext context;
  Fixture() {
    auto t = text::Tokenizer::from_model_dir(kQwen2Dir);
    REQUIRE(t.ok());
    tokenizer = t.value();
    auto c = text::ChatTemplate::from_model_dir(kQwen2Dir);
    REQUIRE(c.ok());
    chat_template = std::move(c).value();
    context.vocab_size = tokenizer->vocab_size();
    context.max_model_len = 256;
    context.tokenizer = tokenizer;
    context.chat_template = &*chat_template;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

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

TEST_CASE("completions prompts: text, ids, one-element lists; out-of-vocabulary ids are refused") {
  CHECK(outcome(R"({"prompt":"hello"})", false).status == 200);
  CHECK(outcome(R"({"prompt":[1,2,3]})", false).status == 200);
  CHECK(outcome(R"({"prompt":["hello"]})", false).status == 200);
  CHECK(outcome(R"({"prompt":[[1,2]]})", false).status == 200);
  CHECK(outcome(R"({"prompt":["a","b"]})", false).status == 400);
  CHECK(outcome(R"({"prompt":[1,-2]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[151936]})", false).param == "prompt");
  CHECK(outcome(R"({"prompt":[1.5]})", false).status == 400);
  CHECK(outcome(R"({"prompt":""})", false).status == 400);
  CHECK(outcome(R"({"prompt":null})", false).status == 400);
  CHECK(outcome(R"({"prompt":"x","logprobs":21})", false).param == "logprobs");
  CHECK(outcome(R"({"prompt":"x","logprobs":5})", false).status == 200);
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
  CHECK(p->user == "u");
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
  CHECK(*a == *b);
}

TEST_CASE("without max_tokens a request may use the rest of the context") {
  auto body = parse_json_body(R"({"messages":[{"role":"user","content":"hi"}]})");
  auto p = parse_chat_request(*body, fixture().context);
  REQUIRE(p.ok());
  CHECK(*p->request.stop.max_tokens + static_cast<int32_t>(p->request.prompt_ids.size()) == 256);
}

namespace {

RequestOutput output(std::vector<ChoiceDelta> choices, bool finished, Usage usage = {}) {
  RequestOutput o;
  o.choices = std::move(choices);
  o.finished = finished;
  o.usage = usage;
  return o;
}

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
