// Our Jinja interpreter against Python Jinja2 on small templates covering the features chat
// templates use (tests/data/jinja-cases.json, written by gen_jinja_cases.py with Hugging Face's
// environment): the same text, or an error of the same kind.

#include <fmt/format.h>

#include "llaisys/text/chat_template.hpp"
#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {
namespace json = boost::json;

TEST_CASE("small templates render as Python Jinja2 renders them") {
  const json::value data = read_json(data_dir() / "jinja-cases.json");
  const json::object& context = data.at("context").as_object();
  ChatRenderOptions options;
  for (const auto& entry : context) {
    if (entry.key() != "messages") options.extra_context[entry.key()] = entry.value();
  }
  std::size_t count = 0;
  for (const json::value& c : data.at("cases").as_array()) {
    const std::string source(c.at("template").as_string());
    ++count;
    auto rendered = [&]() -> Result<std::string> {
      LLAISYS_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::from_string(source));
      return tmpl.render(context.at("messages"), options);
    }();
    if (c.at("ok").as_bool()) {
      const std::string expected(c.at("text").as_string());
      if (!rendered.ok() || rendered.value() != expected) {
        FAIL_CHECK(fmt::format("template {:?}\n got      {}\n expected {:?}", source,
                               rendered.ok() ? fmt::format("{:?}", rendered.value()) : rendered.status().to_string(),
                               expected));
      }
    } else {
      const std::string error(c.at("error").as_string());
      const std::string kind = error.substr(0, error.find(':'));
      if (rendered.ok() || rendered.status().message().find(kind) == std::string::npos) {
        FAIL_CHECK(fmt::format("template {:?}\n expected {:?}\n got {}", source, error,
                               rendered.ok() ? fmt::format("text {:?}", rendered.value()) : rendered.status().to_string()));
      }
    }
  }
  CHECK(count >= 70);
}

}  // namespace
}  // namespace llaisys::text::test
