#pragma once
// Parser for Jinja templates: tokens -> syntax tree, following Jinja2's grammar and operator
// precedence. Nesting deeper than kMaxNesting is an error, so hostile templates cannot exhaust the
// stack.

#include <string_view>

#include "jinja/ast.hpp"

namespace llaisys::text::jinja {

inline constexpr int kMaxNesting = 96;

// Throws jinja::Error (TemplateSyntaxError) with the location of the problem.
Template parse(std::string_view source);

}  // namespace llaisys::text::jinja
