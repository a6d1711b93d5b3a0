// GBNF (gbnf.hpp): grammars in llama.cpp's format accept exactly their language (checked on the
// automaton by an explicit stack search), and malformed grammars are refused with line and column.
#include <catch2/catch.hpp>

#include "automaton_match.hpp"
#include "llaisys/grammar/gbnf.hpp"

using namespace llaisys::grammar;

namespace {

std::shared_ptr<const Grammar> must(std::string_view text) {
  auto g = gbnf_grammar(text);
  INFO(text);
  REQUIRE(g.ok());
  return *g;
}

}  // namespace

TEST_CASE("GBNF: llama.cpp-style grammars accept their language", "[grammar][gbnf]") {
  // The arithmetic grammar of llama.cpp's examples, with comments, nesting and newlines in parentheses.
  auto arith = must(R"G(# arithmetic
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)G");
  CHECK(test::automaton_match(*arith, "1+2= 3\n"));
  CHECK(test::automaton_match(*arith, "(a_1 *2)= x\nb= 4\n"));
  CHECK_FALSE(test::automaton_match(*arith, "1+2=3"));    // missing newline
  CHECK_FALSE(test::automaton_match(*arith, "1++2= 3\n"));
  CHECK_FALSE(test::automaton_match(*arith, "A= 3\n"));   // identifiers are lower case

  auto g = must(R"G(root ::= "say " ( "\"hi\"" | [^a-z\n]{2,3} | "\u00e9\x41" ) "."?
)G");
  CHECK(test::automaton_match(*g, "say \"hi\"."));
  CHECK(test::automaton_match(*g, "say XY"));
  CHECK(test::automaton_match(*g, "say \xC3\xA9" "A."));
  CHECK(test::automaton_match(*g, "say \xE4\xB8\xAD\xE6\x96\x87!"));  // code points, not bytes
  CHECK_FALSE(test::automaton_match(*g, "say ab"));
  CHECK_FALSE(test::automaton_match(*g, "say X"));
  CHECK_FALSE(test::automaton_match(*g, "say WXYZ"));

  auto rep = must("root ::= [0-9]{2} (\"-\" [0-9]{1,}){0,2} \"!\"{,1}\n");
  CHECK(test::automaton_match(*rep, "12"));
  CHECK(test::automaton_match(*rep, "12-3-456!"));
  CHECK_FALSE(test::automaton_match(*rep, "12-3-4-5"));
  CHECK_FALSE(test::automaton_match(*rep, "1"));

  auto any = must("root ::= \"<\" .* \">\"\n");
  CHECK(test::automaton_match(*any, "<\xF0\x9F\x98\x80 x>"));
  CHECK_FALSE(test::automaton_match(*any, "<\xFF>"));  // not UTF-8
}

TEST_CASE("GBNF: malformed grammars are refused with where and why", "[grammar][gbnf]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"root ::= foo\n", "rule 'foo' is used but never defined"},
      {"start ::= \"a\"\n", "no 'root' rule"},
      {"root ::= \"a\n", "newline inside a literal"},
      {"root ::= \"abc\"", ""},  // fine: no trailing newline needed
      {"root ::= [^\\n]+ \"\\x41\" \"\\U0001F600\" # comment\n\n", ""},
      {"root ::= [a-\n", "newline inside a literal or class"},
      {"root ::= (\"a\"\n", "expected ')'"},
      {"root ::= \"a\"{3,1}\n", "n < m"},
      {"root ::= \"a\"{99999999}\n", "above"},
      {"root ::= \"\\q\"\n", "unknown escape"},
      {"root ::= <[1000]>\n", "token references"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "defined twice"},
      {"root := \"a\"\n", "expected '::='"},
      {"root ::= [z-a]\n", "runs backwards"},
      {"root ::= root \"a\"\n", "left-recursive"},
      {"root ::= \"a\" root\n", "no finite text"},
      {"root ::= \"\\xC3\" \"\\uD800\"\n", "surrogate"},
  };
  for (const auto& [text, want] : cases) {
    auto g = gbnf_grammar(text);
    INFO(text);
    if (want.empty()) {  // accepted
      CHECK(g.ok());
      continue;
    }
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.status().message(), Catch::Contains(want));
  }
  auto g = gbnf_grammar("root ::= \"a\"\nx ::= \"b\" (\n \"c\" | %\n)\n");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.status().message(), Catch::Contains("line 3"));
}
