// libFuzzer target: arbitrary bytes as a chat template source. Parsing and rendering (with a fixed
// conversation that has tools and tool calls) must end in a value or a Status, never a crash, a
// sanitizer report, a leak or a hang beyond the interpreter's limits.

#include <cstddef>
#include <cstdint>
#include <string>

#include <boost/json.hpp>

#include "llaisys/text/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const boost::json::value messages = boost::json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi! 你好 🚀"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "abc123def",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21}"}
  ])");
  static const boost::json::value tools = boost::json::parse(R"([{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  auto tmpl = llaisys::text::ChatTemplate::from_string(std::string(reinterpret_cast<const char*>(data), size), "<s>", "</s>");
  if (!tmpl.ok()) return 0;
  llaisys::text::ChatRenderOptions options;
  (void)tmpl->render(messages, options);
  options.tools = tools;
  options.add_generation_prompt = false;
  (void)tmpl->render(messages, options);
  return 0;
}
