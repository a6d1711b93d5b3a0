#pragma once
// Template errors. Inside the interpreter an error unwinds as a jinja::Error exception carrying
// Python's exception kind, the message and the template location; ChatTemplate turns it into a
// Status at the API boundary, so no exception ever leaves the text library.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace llaisys::text::jinja {

struct SourceLocation {
  int line = 0;    // 1-based; 0: unknown
  int column = 0;  // 1-based
};

class Error : public std::runtime_error {
 public:
  // kind: "TemplateSyntaxError", "TemplateError" (raise_exception), "UndefinedError", "TypeError",
  // "ValueError", "ZeroDivisionError", "SecurityError", "LimitError"...
  Error(std::string kind, std::string message, SourceLocation where)
      : std::runtime_error(message), kind_(std::move(kind)), message_(std::move(message)), where_(where) {}
  const std::string& kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const SourceLocation& where() const { return where_; }
  // "TypeError at line 3, column 7: can only concatenate str (not "int") to str"
  std::string describe() const {
    if (where_.line <= 0) return fmt::format("{}: {}", kind_, message_);
    return fmt::format("{} at line {}, column {}: {}", kind_, where_.line, where_.column, message_);
  }

 private:
  std::string kind_;
  std::string message_;
  SourceLocation where_;
};

[[noreturn]] inline void fail(std::string kind, std::string message, const SourceLocation& where) {
  throw Error(std::move(kind), std::move(message), where);
}
[[noreturn]] inline void type_error(std::string message, const SourceLocation& where) {
  fail("TypeError", std::move(message), where);
}

}  // namespace llaisys::text::jinja
