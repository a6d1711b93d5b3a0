// compile_regex (regex.hpp): what it refuses (each message names the construct and its byte offset),
// the ECMAScript meanings a PCRE2 comparison cannot check, and the size bounds.
#include <chrono>
#include <string>
#include <unordered_set>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/reference_match.hpp"
#include "llaisys/grammar/regex.hpp"

using namespace llaisys;
using namespace llaisys::grammar;

namespace {

bool full_match(std::string_view pattern, std::string_view text) {
  auto e = compile_regex(pattern);
  REQUIRE(e.ok());
  return reference_match({*e}, 0, text);
}

std::size_t distinct_nodes(const ExprPtr& e, std::unordered_set<const Expr*>& seen) {
  if (!seen.insert(e.get()).second) return 0;
  std::size_t n = 1;
  for (const ExprPtr& c : e->children) n += distinct_nodes(c, seen);
  return n;
}

struct Refusal {
  std::string pattern;
  std::string construct;  // a substring of the message
  std::size_t offset;
};

}  // namespace

TEST_CASE("compile_regex refuses what it cannot express, naming the construct and its offset", "[grammar][regex]") {
  const std::vector<Refusal> refusals{
      {R"((a)\1)", "backreference \\1", 3},
      {R"((?<n>a)\k<n>)", "named backreference \\k<name>", 7},
      {R"(a(?=b))", "lookahead", 1},
      {R"(a(?!b))", "lookahead", 1},
      {R"((?<=a)b)", "lookbehind", 0},
      {R"(x(?<!a)b)", "lookbehind", 1},
      {R"(\bword)", "word boundary \\b", 0},
      {R"(a\Bb)", "word boundary \\B", 1},
      {R"(a^b)", "anchor '^'", 1},
      {R"(a$b)", "anchor '$'", 1},
      {R"((^a))", "anchor '^'", 1},
      {R"((a$))", "anchor '$'", 2},
      {R"(^^a)", "anchor '^'", 1},
      {R"(a$$)", "anchor '$'", 1},
      {R"(a|b^)", "anchor '^'", 3},
      {R"(\p{Script=Greek})", "Unicode property \\p{Script=Greek}", 0},
      {R"(x\P{Alphabetic})", "Unicode property \\p{Alphabetic}", 1},
      {R"(\p{letter})", "Unicode property \\p{letter}", 0},
      {R"(\p{gc=Foo})", "Unicode property \\p{gc=Foo}", 0},
      {R"(\pL)", "\\p and \\P must be followed by {name}", 0},
      {R"(\p{L)", "unterminated \\p{name}", 0},
      {R"((?i)abc)", "inline flags", 0},
      {R"(a(?i:b))", "inline flags", 1},
      {R"((?-i:b))", "inline flags", 0},
      {R"((?P<n>a))", "(?P<name> is Python", 0},
      {R"((?#note))", "invalid group", 0},
      {"a\xFF" "b", "invalid UTF-8", 1},
      {"\xC0\x80", "invalid UTF-8", 0},           // overlong NUL
      {"ab\xED\xA0\x80", "invalid UTF-8", 2},     // a surrogate
      {"\xF4\x90\x80\x80", "invalid UTF-8", 0},   // above U+10FFFF
      {"\xE4\xB8", "invalid UTF-8", 0},           // cut short
      {R"((ab)", "unbalanced parenthesis: '(' is never closed", 0},
      {R"(a(b(c)d)", "unbalanced parenthesis: '(' is never closed", 1},
      {R"(ab))", "unbalanced parenthesis: ')'", 2},
      {R"([ab)", "unbalanced bracket: '[' is never closed", 0},
      {R"([]a])", "unbalanced bracket: ']'", 3},
      {R"(ab])", "unbalanced bracket: ']'", 2},
      {R"(x[z-a])", "range out of order", 2},
      {R"([\d-z])", "class range with a class escape", 3},
      {R"([a-\w])", "class range with a class escape", 2},
      {R"(*a)", "nothing to repeat", 0},
      {R"(a|+)", "nothing to repeat", 2},
      {R"((*))", "nothing to repeat", 1},
      {R"({3})", "nothing to repeat", 0},
      {R"(a**)", "quantifier follows a quantifier", 2},
      {R"(a*+)", "quantifier follows a quantifier", 2},
      {R"(a???)", "quantifier follows a quantifier", 3},
      {R"(a{2}{3})", "quantifier follows a quantifier", 4},
      {R"(a{1001})", "repeat count 1001 is above the limit of 1000", 1},
      {R"(a{1,1001})", "repeat count 1001 is above the limit of 1000", 1},
      {R"(a{99999999999999999999999,})", "is above the limit of 1000", 1},
      {R"(a{3,2})", "numbers out of order", 1},
      {R"(a{)", "'{' does not start a quantifier", 1},
      {R"(a{,5})", "'{' does not start a quantifier", 1},
      {R"(a{x})", "'{' does not start a quantifier", 1},
      {R"(a})", "lone '}'", 1},
      {R"(\q)", "unknown escape \\q", 0},
      {R"(ab\z)", "unknown escape \\z", 2},
      {R"(\A)", "unknown escape \\A", 0},
      {"ab\\", "'\\' at the end of the pattern", 2},
      {R"(\x4)", "\\x must be followed by two hex digits", 0},
      {R"(\u12)", "\\u must be followed by four hex digits", 0},
      {R"(\u{110000})", "above U+10FFFF", 0},
      {R"(\u{})", "\\u{ must be followed by hex digits", 0},
      {R"(\c1)", "\\c must be followed by an ASCII letter", 0},
      {R"(\01)", "\\0 followed by a digit", 0},
      {R"([[:alpha:]])", "POSIX class", 1},
      {R"([\B])", "\\B inside a character class", 1},
      {R"([\1])", "\\1 inside a character class", 1},
      {R"((?<>a))", "empty group name", 0},
      {R"((?<ab)", "unterminated group name", 0},
      {R"((?<1a>x))", "invalid character in a group name", 3},
      {"\\\xC3\xA9", "before a control or non-ASCII character", 0},
  };
  for (const Refusal& r : refusals) {
    INFO("pattern " << r.pattern);
    auto e = compile_regex(r.pattern);
    REQUIRE_FALSE(e.ok());
    CHECK(e.status().code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.status().message(), Catch::Contains(r.construct));
    CHECK_THAT(e.status().message(), Catch::EndsWith("at byte " + std::to_string(r.offset)));
  }
}

TEST_CASE("compile_regex's limits", "[grammar][regex]") {
  {
    std::string deep;
    for (int i = 0; i < 65; ++i) deep += '(';
    deep += 'a';
    for (int i = 0; i < 65; ++i) deep += ')';
    auto e = compile_regex(deep);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.status().message(), Catch::Contains("nested deeper than the limit of 64") &&
                                         Catch::Contains("at byte 64"));
    CHECK(compile_regex(deep.substr(1, deep.size() - 2)).ok());  // 64 levels are fine
  }
  {
    auto e = compile_regex(std::string(16385, 'a'));
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.status().message(), Catch::Contains("16385 bytes long, above the limit of 16384"));
    CHECK(compile_regex(std::string(16384, 'a')).ok());
  }
  {
    // Identical classes share one expression; distinct large ones are bounded together.
    std::string same;
    for (int i = 0; i < 3000; ++i) same += R"(\p{L})";
    auto e = compile_regex(same);
    REQUIRE(e.ok());
    std::unordered_set<const Expr*> seen;
    CHECK(distinct_nodes(*e, seen) < 5000);
    std::string distinct;
    for (char c = 'a'; c <= 'z'; ++c) distinct += std::string(R"([\p{L}\p{N})") + c + ']';
    CHECK(compile_regex(distinct).ok());
    for (char c = 'a'; c <= 'z'; ++c) distinct += std::string(R"([\p{L}\p{P})") + c + ']';
    for (char c = 'a'; c <= 'z'; ++c) distinct += std::string(R"([\p{L}\p{S})") + c + ']';
    auto big = compile_regex(distinct);
    REQUIRE_FALSE(big.ok());
    CHECK_THAT(big.status().message(), Catch::Contains("character classes too large"));
  }
  {
    const RegexLimits small{.max_repeat = 10, .max_pattern_bytes = 8, .max_nesting = 2};
    CHECK(compile_regex("a{10}", small).ok());
    CHECK_THAT(compile_regex("a{11}", small).status().message(), Catch::Contains("above the limit of 10"));
    CHECK_THAT(compile_regex("a{2,11}", small).status().message(), Catch::Contains("above the limit of 10"));
    CHECK(compile_regex("((a))", small).ok());
    CHECK_THAT(compile_regex("(((a)))", small).status().message(), Catch::Contains("nested deeper than the limit of 2"));
    CHECK_THAT(compile_regex("abcdefghi", small).status().message(), Catch::Contains("above the limit of 8"));
  }
}

TEST_CASE("nested bounded repeats stay small until the grammar is built", "[grammar][regex]") {
  const auto start = std::chrono::steady_clock::now();
  auto e = compile_regex("((a{1000}){1000}){1000}");
  REQUIRE(e.ok());
  std::unordered_set<const Expr*> seen;
  CHECK(distinct_nodes(*e, seen) <= 4);  // three repeats sharing one 'a'
  auto twice = compile_regex("(a{1000}){1000}");
  REQUIRE(twice.ok());
  GrammarBuilder b;
  const int32_t root = b.add_rule("root", *twice);
  auto g = b.build(root);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == ErrorCode::invalid_argument);
  CHECK_THAT(g.status().message(), Catch::Contains("too large"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
}

TEST_CASE("ECMAScript meanings PCRE2 does not share", "[grammar][regex]") {
  // \s is ECMA-262's WhiteSpace + LineTerminator, not Unicode White_Space: U+0085 and U+180E are out.
  for (const char* space : {" ", "\t", "\n", "\v", "\f", "\r", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80",
                            "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
                            "\xE3\x80\x80", "\xEF\xBB\xBF"}) {
    INFO(static_cast<int>(static_cast<uint8_t>(space[0])));
    CHECK(full_match(R"(\s)", space));
    CHECK_FALSE(full_match(R"(\S)", space));
    CHECK_FALSE(full_match(R"([^\s])", space));
  }
  for (const char* other : {"\xC2\x85", "\xE1\xA0\x8E", "\xE2\x80\x8B", "a", "\x1F"}) {
    CHECK_FALSE(full_match(R"(\s)", other));
    CHECK(full_match(R"(\S)", other));
  }
  // `.` stops at the four line terminators only.
  CHECK(full_match(".", "\xC2\x85"));
  CHECK(full_match(".", "\xF0\x9F\x98\x80"));  // one code point, four bytes
  for (const char* terminator : {"\n", "\r", "\xE2\x80\xA8", "\xE2\x80\xA9"}) CHECK_FALSE(full_match(".", terminator));
  // \d and \w are ASCII only.
  CHECK_FALSE(full_match(R"(\d)", "\xD9\xA3"));  // ARABIC-INDIC DIGIT THREE
  CHECK_FALSE(full_match(R"(\w)", "\xC3\xA9"));
  CHECK(full_match(R"(\W)", "\xC3\xA9"));
  // [] matches nothing, [^] anything, even a line terminator; [\b] is backspace.
  CHECK_FALSE(full_match("a[]", "a"));
  CHECK(full_match("[^]", "\n"));
  CHECK(full_match("[^]", "\xF4\x8F\xBF\xBF"));
  CHECK(full_match(R"([\b])", "\b"));
  // A negated class is a complement within scalar values: astral code points included, no surrogates.
  CHECK(full_match("[^a]", "\xF0\x90\x80\x80"));
  CHECK_FALSE(full_match("[^a]", "\xED\xA0\x80"));
  // A lone surrogate escape matches nothing in well-formed text; a pair is one code point.
  CHECK_FALSE(full_match(R"(x\uD800?)", "x\xED\xA0\x80"));
  CHECK(full_match(R"(x\uD800?)", "x"));
  CHECK(full_match(R"(\uD83D\uDE00)", "\xF0\x9F\x98\x80"));
  CHECK(full_match(R"([\uD83D\uDE00-\uD83D\uDE4F])", "\xF0\x9F\x98\x81"));
  // \cX is the letter modulo 32; \0 is NUL.
  CHECK(full_match(R"(\cj\cJ\0)", std::string_view("\n\n\0", 3)));
  // Lazy quantifiers match the same language; {0} is empty.
  CHECK(full_match("a{2,3}?b??c*?", "aaa"));
  CHECK(full_match("xa{0}y", "xy"));
  // Escaped punctuation that the u flag would refuse but no dialect gives a meaning: literal.
  CHECK(full_match(R"(\@\"\'\#\ \_\%)", R"(@"'# _%)"));
  CHECK(full_match(R"([\-])", "-"));
  // A '-' at either end of a class or after a range is literal.
  CHECK(full_match("[-a][a-]", "--"));
  CHECK(full_match("[a-c-e]", "-"));
  CHECK_FALSE(full_match("[a-c-e]", "d"));
  // ^/$ at the start/end of top-level alternatives change nothing.
  CHECK(full_match("^a|^b$|c$", "c"));
  CHECK(full_match("^", ""));
  CHECK(full_match("$", ""));
  // General_Category by long name, negated inside a class.
  CHECK(full_match(R"(\p{Uppercase_Letter}[\P{Lu}])", "\xC3\x89" "a"));
  CHECK_FALSE(full_match(R"([\P{Lu}])", "A"));
  CHECK(full_match(R"(\p{Cased_Letter}\p{digit}\p{punct})", "x7!"));
}
