#pragma once
// The code-point sets behind the regex front end (regex.cpp): ECMAScript's class escapes and `.`, and
// Unicode General_Category sets for \p{..}. Everything here is in scalar values (no surrogates).

#include <optional>
#include <string_view>

#include "llaisys/grammar/expr.hpp"

namespace llaisys::grammar::regex_detail {

// \d: [0-9] (ASCII only in ECMAScript, with or without the u flag).
const CodePointSet& digit_set();
// \w: [A-Za-z0-9_] (ASCII only without the i flag).
const CodePointSet& word_set();
// \s: ECMA-262 WhiteSpace and LineTerminator: TAB VT FF SP NBSP ZWNBSP (U+FEFF), the Zs category
// (U+1680, U+2000-U+200A, U+202F, U+205F, U+3000), LF CR LS PS.
const CodePointSet& space_set();
// `.` without the s flag: every code point but the line terminators LF CR U+2028 U+2029.
const CodePointSet& dot_set();

// The code points of a General_Category value spelled exactly as ECMAScript accepts it: a short or
// long alias from Unicode's PropertyValueAliases ("L", "Letter", "Lu", "Uppercase_Letter", "Nd",
// "digit", "LC", ...), case-sensitive. nullopt when `name` is not such a value. The data is ICU's.
std::optional<CodePointSet> general_category(std::string_view name);

}  // namespace llaisys::grammar::regex_detail
