#pragma once
// Regular expressions -> grammar expressions (expr.hpp), in the ECMAScript dialect that JSON Schema's
// "pattern" and vLLM's guided_regex use, with the "u" flag's meaning (code points, not UTF-16 units).
//
// Semantics: the whole generated text matches the pattern (full match). A leading ^ and a trailing $
// are accepted and change nothing; a JSON Schema pattern is unanchored by the spec, so every text we
// generate for it also matches it there. Everything with no regular-language meaning or that we do not
// implement is refused with a message naming it (never ignored).
//
// Accepted:
//  - literal characters (the pattern is UTF-8; one character is one code point);
//  - `.`: any code point but LF, CR, U+2028, U+2029 (no s flag);
//  - \d \D \w \W (ASCII [0-9], [A-Za-z0-9_] and their complements), \s \S (ECMA-262 WhiteSpace and
//    LineTerminator: TAB LF VT FF CR SP U+00A0 U+1680 U+2000-U+200A U+2028 U+2029 U+202F U+205F U+3000
//    U+FEFF);
//  - \p{V} \P{V} for a General_Category value V by its exact short or long name (L, Letter, Lu, Ll, Lt,
//    Lm, Lo, LC, M, Mn, Mc, Me, N, Nd, Nl, No, P, Pc, Pd, Ps, Pe, Pi, Pf, Po, S, Sm, Sc, Sk, So, Z, Zs,
//    Zl, Zp, C, Cc, Cf, Cs, Co, Cn and their long aliases), also as gc=V or General_Category=V. Other
//    properties (Script=, binary properties such as Alphabetic) are refused. Data: ICU's Unicode version;
//  - escapes \t \n \v \f \r \0 \xHH \uHHHH (a \uD8xx\uDCxx pair is one code point; a lone surrogate
//    matches nothing) \u{H..} \cX, and a backslash before ASCII punctuation or space (the u flag allows
//    only syntax characters and '/', but no dialect gives the others a meaning);
//  - classes [..] and [^..] (the complement within all Unicode scalar values), ranges, class escapes
//    inside, [\b] (backspace), [] (matches nothing) and [^] (any code point);
//  - groups (..), (?:..), (?<name>..); alternation |; quantifiers * + ? {n} {n,} {n,m} and their lazy
//    forms (the same language);
//  - ^ at the start and $ at the end of the pattern or of a top-level alternative ("^a|^b$").
// Refused (invalid_argument, "regex: <construct> at byte <offset>"): backreferences (\1, \k<name>),
// lookahead and lookbehind, \b \B, ^ or $ anywhere else, other \p properties, inline flags/modifiers
// ((?i), (?i:..)), unknown escapes of letters or digits (\a, \z, \A, \1 in a class, \0 before a digit),
// POSIX classes ([[:alpha:]]), invalid UTF-8, unbalanced ( ) [ ] (a lone ']' too, as with the u flag),
// a '{' or '}' that is not part of a quantifier (write \{ \}), ranges out of order or with a class
// escape as an end ([\d-z]), a quantifier with nothing to repeat (also "a**", "a*+", "a{2}{3}"), counts
// above RegexLimits::max_repeat, groups nested deeper than max_nesting, patterns longer than
// max_pattern_bytes.
//
// Size: the expression is linear in the pattern's length: a quantifier is one repeat node sharing its
// atom's expression, so nested counts like (a{1000}){1000} cost nothing here; the automaton they would
// expand to is bounded where the grammar is built (GrammarBuilder::build refuses it as too large).

#include <cstdint>
#include <string_view>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/expr.hpp"

namespace llaisys::grammar {

struct RegexLimits {
  int32_t max_repeat = 1000;       // n and m of {n,m}
  int32_t max_pattern_bytes = 16384;
  int32_t max_nesting = 64;        // groups inside groups (the parser recurses per level; at most 1000)
  // Expression nodes that the distinct character classes spell, all together (identical classes are
  // shared; \p{L} alone is about 3500): bounds the memory a short pattern can ask for.
  int64_t max_class_nodes = 200'000;
};

// invalid_argument with the offending construct and its byte offset when the pattern is refused.
Result<ExprPtr> compile_regex(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace llaisys::grammar
