#pragma once
// Jinja lexer with Hugging Face's settings (trim_blocks, lstrip_blocks, keep_trailing_newline off):
// template text, {{ }}, {% %} and {# #} with -/+ whitespace control, newline normalisation, raw
// blocks, and the expression tokens inside tags. Mirrors Jinja2's lexer rule for rule.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/error.hpp"

namespace llaisys::text::jinja {

enum class TokenType : uint8_t {
  data,         // template text (value: the text)
  var_begin,    // {{
  var_end,      // }}
  block_begin,  // {%
  block_end,    // %}
  name,         // identifier
  string,       // string literal (value: decoded)
  integer,      // value: digits without underscores (or 0x.. etc. converted)
  floating,     // value: the literal
  op,           // operator or punctuation (value: the operator)
  eof,
};

struct Token {
  TokenType type = TokenType::eof;
  std::string value;
  SourceLocation where;
};

// Throws jinja::Error (TemplateSyntaxError) on unterminated tags, strings or comments.
std::vector<Token> tokenize(std::string_view source);

}  // namespace llaisys::text::jinja
