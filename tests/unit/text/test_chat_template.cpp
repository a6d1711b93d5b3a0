// Chat templates against Python Jinja2 3.1 with Hugging Face's conventions: all 17 real templates x 6
// conversations of chat-templates/expected.json byte for byte, and the same errors where Jinja2
// raised. Plus loading from tokenizer_config.json, error locations, and limits.

#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "llaisys/text/chat_template.hpp"
#include "temp_dir.hpp"
#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {
namespace json = boost::json;

// expected.json was rendered with strftime_now fixed to 2026-11-22 (local time).
std::chrono::system_clock::time_point fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 22;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&tm));
}

ChatRenderOptions options_for(const json::object& conversation) {
  ChatRenderOptions options;
  options.now = fixed_now();
  if (const json::value* tools = conversation.if_contains("tools")) options.tools = *tools;
  if (const json::value* gen = conversation.if_contains("add_generation_prompt")) options.add_generation_prompt = gen->as_bool();
  return options;
}

TEST_CASE("all 17 templates x 6 conversations render as Jinja2 does, errors included") {
  const json::value expected = read_json(data_dir() / "chat-templates" / "expected.json");
  const json::object& conversations = expected.at("conversations").as_object();
  const json::object& renderings = expected.at("expected").as_object();
  REQUIRE(renderings.size() == 17);
  std::size_t checked = 0, failures = 0, errors_expected = 0;
  for (const auto& [file, cases] : renderings) {
    const std::string source = read_text(data_dir() / "chat-templates" / std::string(file));
    auto tmpl = ChatTemplate::from_string(source, "<s>", "</s>");
    INFO(std::string(file));
    REQUIRE(tmpl.ok());
    for (const auto& [name, want] : cases.as_object()) {
      const json::object& conversation = conversations.at(name).as_object();
      auto got = tmpl->render(conversation.at("messages"), options_for(conversation));
      ++checked;
      const json::object& w = want.as_object();
      if (w.at("ok").as_bool()) {
        const std::string text(w.at("text").as_string());
        if (!got.ok() || got.value() != text) {
          ++failures;
          FAIL_CHECK(fmt::format("{} / {}: got {}\nexpected {}", std::string(file), std::string(name),
                                    got.ok() ? json::serialize(json::value(got.value())) : got.status().to_string(),
                                    json::serialize(json::value(text))));
        }
      } else {
        ++errors_expected;
        // "TypeError: Object of type generator is not JSON serializable" -> our message carries the
        // same kind and text.
        const std::string error(w.at("error").as_string());
        const std::string kind = error.substr(0, error.find(": "));
        const std::string message = error.substr(error.find(": ") + 2);
        if (got.ok() || got.status().message().find(message) == std::string::npos ||
            got.status().message().find(kind) == std::string::npos) {
          ++failures;
          FAIL_CHECK(fmt::format("{} / {}: expected error {:?}, got {}", std::string(file), std::string(name), error,
                                    got.ok() ? "text " + json::serialize(json::value(got.value())) : got.status().to_string()));
        }
      }
    }
  }
  CHECK(checked == 17 * 6);
  CHECK(errors_expected == 13);
  CHECK(failures == 0);
}

TEST_CASE("Qwen3's template renders as Jinja2 does: enable_thinking, reasoning_content, tool loops") {
  // chat-templates/qwen3/expected.json: rendered by render.py beside it with Python's Jinja2.
  const std::filesystem::path dir = data_dir() / "chat-templates" / "qwen3";
  const json::value expected = read_json(dir / "expected.json");
  auto tmpl = ChatTemplate::from_string(read_text(dir / std::string(expected.at("template").as_string())), "",
                                        "<|im_end|>");
  REQUIRE(tmpl.ok());
  const json::object& cases = expected.at("cases").as_object();
  REQUIRE(cases.size() == 6);
  for (const auto& [name, want] : expected.at("expected").as_object()) {
    INFO(std::string(name));
    const json::object& c = cases.at(name).as_object();
    ChatRenderOptions options = options_for(c);
    if (const json::value* kwargs = c.if_contains("kwargs")) options.extra_context = kwargs->as_object();
    auto got = tmpl->render(c.at("messages"), options);
    REQUIRE(got.ok());
    CHECK(got.value() == std::string(want.as_string()));
  }
}

TEST_CASE("the Qwen2 tokenizer_config.json template renders and tokenizes") {
  auto tmpl = ChatTemplate::from_model_dir(qwen2_dir());
  REQUIRE(tmpl.ok());
  const json::value messages = json::parse(R"([{"role": "user", "content": "Hello"}])");
  auto text = tmpl->render(messages, {});
  REQUIRE(text.ok());
  CHECK(text.value() ==
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  auto ids = qwen2()->encode(text.value());
  REQUIRE(ids.ok());
  CHECK(ids->front() == 151644);  // <|im_start|> recognised as a special token
}

TEST_CASE("named templates: default, tool_use when tools are given, or by name") {
  llaisys::test::TempDir dir;
  dir.write("tokenizer_config.json", R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>",
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ messages|length }}"},
                      {"name": "tool_use", "template": "T{{ tools|length }}{{ eos_token }}"}]})");
  const json::value messages = json::parse(R"([{"role": "user", "content": "x"}])");
  auto tmpl = ChatTemplate::from_model_dir(dir.path());
  REQUIRE(tmpl.ok());
  CHECK(tmpl->render(messages, {}).value() == "D<s>1");
  ChatRenderOptions with_tools;
  with_tools.tools = json::parse(R"([{"type": "function"}])");
  CHECK(tmpl->render(messages, with_tools).value() == "T1</s>");
  auto by_name = ChatTemplate::from_model_dir(dir.path(), "tool_use");
  REQUIRE(by_name.ok());
  CHECK(by_name->render(messages, {}).value() == "T0</s>");
  CHECK_FALSE(ChatTemplate::from_model_dir(dir.path(), "nope").ok());
}

TEST_CASE("template errors say what and where") {
  struct Case {
    std::string source;
    std::string message;
  };
  const std::vector<Case> syntax = {
      {"{% if x %}never closed", "TemplateSyntaxError at 1:23: unexpected end of template: expected 'endif'"},
      {"line one\n{{ 1 + }}", "TemplateSyntaxError at 2:8: unexpected end of print statement"},
      {"{% for x in y %}{% endif %}", "unexpected 'endif'"},
      {"{{ x | no_such_filter }}", "No filter named 'no_such_filter'."},
      {"{{ 'unterminated }}", "unexpected end of string"},
      {"{% frobnicate %}", "encountered unknown tag 'frobnicate'"},
      {"{# comment", "missing end of comment tag"},
      // found by fuzz_chat_template: an attribute index beyond int64
      {"{{ x.99999999999999999999 }}", "integer index out of range"},
  };
  for (const Case& c : syntax) {
    auto tmpl = ChatTemplate::from_string(c.source);
    INFO(c.source);
    REQUIRE_FALSE(tmpl.ok());
    CHECK(tmpl.status().code() == ErrorCode::parse_error);
    CHECK_THAT(tmpl.status().message(), Catch::Contains(c.message));
  }
  const std::vector<Case> runtime = {
      {"\n  {{ raise_exception('bad roles') }}", "TemplateError at 2:6: bad roles"},
      {"{{ messages[0].content + 1 }}", "TypeError at 1:24: can only concatenate str (not \"int\") to str"},
      {"{{ nothing.here }}", "UndefinedError at 1:11: 'nothing' is undefined"},
      {"{{ 1 // 0 }}", "ZeroDivisionError"},
      {"{{ messages.append(1) }}", "SecurityError"},
      {"{% for i in range(10**6) %}{% endfor %}", "Range too big"},
  };
  const json::value messages = json::parse(R"([{"role": "user", "content": "x"}])");
  for (const Case& c : runtime) {
    auto tmpl = ChatTemplate::from_string(c.source);
    INFO(c.source);
    REQUIRE(tmpl.ok());
    auto text = tmpl->render(messages, {});
    REQUIRE_FALSE(text.ok());
    CHECK_THAT(text.status().message(), Catch::Contains(c.message));
  }
}

TEST_CASE("hostile templates end in errors, not crashes") {
  const json::value messages = json::parse("[]");
  // Deep nesting is refused by the parser instead of recursing without bound.
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  CHECK_THAT(ChatTemplate::from_string(deep).status().message(), Catch::Contains("nested deeper"));
  std::string blocks;
  for (int i = 0; i < 2000; ++i) blocks += "{% if true %}";
  CHECK_FALSE(ChatTemplate::from_string(blocks).ok());
  // Unbounded recursion, huge output and endless loops hit the limits.
  auto recursive = ChatTemplate::from_string("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  REQUIRE(recursive.ok());
  CHECK_THAT(recursive->render(messages, {}).status().message(), Catch::Contains("macro calls nested deeper"));
  auto huge = ChatTemplate::from_string("{{ 'x' * 1000000000 }}");
  REQUIRE(huge.ok());
  CHECK(huge->render(messages, {}).status().code() == ErrorCode::resource_exhausted);
  auto slow = ChatTemplate::from_string(
      "{% for a in range(100000) %}{% set x = range(100000) %}{% endfor %}");
  REQUIRE(slow.ok());
  CHECK(slow->render(messages, {}).status().code() == ErrorCode::resource_exhausted);
  // Values nested without bound (whose destruction would recurse as deep) are refused.
  auto nesting = ChatTemplate::from_string(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}");
  REQUIRE(nesting.ok());
  CHECK_THAT(nesting->render(messages, {}).status().message(), Catch::Contains("nested deeper than"));
  auto namespaces = ChatTemplate::from_string(
      "{% set ns = namespace(x=none) %}{% for i in range(100000) %}{% set ns.x = namespace(x=ns.x) %}{% endfor %}");
  REQUIRE(namespaces.ok());
  CHECK_THAT(namespaces->render(messages, {}).status().message(), Catch::Contains("nested deeper than"));
  // A chain of namespaces built link by link (each stored while it was still empty) is freed
  // without recursing once per link: 2 x 100,000 links overflowed the stack.
  auto chain = ChatTemplate::from_string(
      "{%- set root = namespace(n=none) -%}{%- set st = namespace(cur=root) -%}"
      "{%- for j in range(2) -%}{%- for i in range(100000) -%}{%- set nxt = namespace(n=none) -%}"
      "{%- set tmp = st.cur -%}{%- set tmp.n = nxt -%}{%- set st.cur = nxt -%}{%- endfor -%}{%- endfor -%}"
      "{%- set root = none -%}done");  // dropping the head frees the chain during the render, too
  REQUIRE(chain.ok());
  CHECK(chain->render(messages, {}).value() == "done");
  // Sizes a template chooses are checked before they are allocated (std::bad_alloc escaped before).
  for (const char* source : {"{{ 1|tojson(indent=10**18) }}", "{{ 'x'|indent(10**18) }}", "{{ [1]|batch(10**12, 0)|list }}"}) {
    auto sized = ChatTemplate::from_string(source);
    REQUIRE(sized.ok());
    INFO(source);
    CHECK(sized->render(messages, {}).status().code() == ErrorCode::resource_exhausted);
  }
  // break / continue outside a loop are compile errors, as in Jinja2 (they used to cut the output);
  // inside a loop's body, nested ifs included, they work; a macro body is not inside its caller's loop.
  CHECK_THAT(ChatTemplate::from_string("{% if true %}{% continue %}{% endif %}x").status().message(),
             Catch::Contains("'continue' outside of a loop"));
  CHECK_FALSE(ChatTemplate::from_string("{% for i in [1] %}{% else %}{% break %}{% endfor %}").ok());
  CHECK_FALSE(ChatTemplate::from_string("{% for i in [1] %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}").ok());
  auto loop = ChatTemplate::from_string("{% for i in [1, 2, 3] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}");
  REQUIRE(loop.ok());
  CHECK(loop->render(messages, {}).value() == "1");
  // int of a value beyond 64 bits is an error (it was an undefined conversion to INT64_MIN).
  for (const char* source : {"{{ '9223372036854775808'|int }}", "{{ 1e300|int }}"}) {
    auto big = ChatTemplate::from_string(source);
    REQUIRE(big.ok());
    CHECK_THAT(big->render(messages, {}).status().message(), Catch::Contains("does not fit in 64 bits"));
  }
  // A namespace holding itself is freed (LeakSanitizer checks this under asan-ubsan).
  auto cycle = ChatTemplate::from_string("{% set ns = namespace() %}{% set ns.me = ns %}ok");
  REQUIRE(cycle.ok());
  CHECK(cycle->render(messages, {}).value() == "ok");
}

}  // namespace
}  // namespace llaisys::text::test
