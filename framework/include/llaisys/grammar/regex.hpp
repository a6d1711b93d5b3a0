#pragma once
// Regular expressions -> grammar expressions (expr.hpp), in the ECMAScript dialect that JSON Schema's
// "pattern" and vLLM's guided_regex use, with the "u" flag's meaning (code points, not UTF-16 units).
//
// Semantics: the whole generated text matches the pattern (full match). A leading ^ and a trailing $
// are accepted and change nothing; a JSON Schema pattern is unanchored by the spec, so every text we
// generate for it also matches it there. Everything with no regular-language meaning or that we do not
// implement is refused with a message naming it (never ignored): backreferences, lookaround, \b \B,
// anchors inside the pattern, \p{..} classes other than the ones listed in regex.cpp, flags.
// Bounds: repeat counts above RegexLimits::max_repeat are refused; the expression size is bounded.

#include <string_view>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/expr.hpp"

namespace llaisys::grammar {

struct RegexLimits {
  int32_t max_repeat = 1000;       // n and m of {n,m}
  int32_t max_pattern_bytes = 16384;
  int32_t max_nesting = 64;        // groups inside groups
};

// invalid_argument with the offending construct and its byte offset when the pattern is refused.
Result<ExprPtr> compile_regex(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace llaisys::grammar
