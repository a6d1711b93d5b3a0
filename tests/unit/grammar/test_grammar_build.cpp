// The automaton (grammar.hpp) against the reference matcher (reference_match.hpp) on random strings,
// and build()'s refusals.
#include <random>

#include <catch2/catch.hpp>

#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/reference_match.hpp"
#include "automaton_match.hpp"

using namespace llaisys::grammar;


TEST_CASE("automaton agrees with the reference matcher", "[grammar]") {
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  const int32_t list = b.add_rule("list");
  const int32_t item = b.add_rule("item");
  // root ::= "[" list? "]" ; list ::= item ("," item)* ; item ::= [a-c]{1,3} | root
  b.set_rule(root, seq({literal("["), optional(ref(list)), literal("]")}));
  b.set_rule(list, seq({ref(item), star(seq({literal(","), ref(item)}))}));
  b.set_rule(item, alt({repeat(byte_range('a', 'c'), 1, 3), ref(root)}));
  auto g = b.build(root);
  REQUIRE(g.ok());
  std::mt19937 rng(7);
  const std::string alphabet = "[],abcd";
  int32_t positives = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int len = static_cast<int>(rng() % 12);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    const bool want = reference_match(b.exprs(), root, s);
    positives += want ? 1 : 0;
    INFO(s);
    REQUIRE(test::automaton_match(**g, s) == want);
  }
  CHECK(positives > 30);
  CHECK(test::automaton_match(**g, "[[a,bb],[],ccc]"));
  CHECK_FALSE(test::automaton_match(**g, "[aaaa]"));
}

TEST_CASE("UTF-8 classes hold exactly the code points asked for", "[grammar]") {
  CodePointSet set;
  set.add(0x41, 0x5A);
  set.add(0x3B1, 0x3C9);     // Greek small letters
  set.add(0x4E00, 0x4E0F);
  set.add(0x1F600, 0x1F64F); // emoji
  GrammarBuilder b;
  const int32_t root = b.add_rule("root", star(utf8_class(set)));
  auto g = b.build(root);
  REQUIRE(g.ok());
  CHECK(test::automaton_match(**g, "AB\xCE\xB1\xE4\xB8\x80\xF0\x9F\x98\x80"));
  CHECK_FALSE(test::automaton_match(**g, "a"));
  CHECK_FALSE(test::automaton_match(**g, "\xCE\xB1\xCE"));           // truncated
  CHECK_FALSE(test::automaton_match(**g, "\xE4\xB8\x90"));           // U+4E10, outside
  // Every code point of the class, and its neighbours outside.
  const std::vector<uint32_t> probes{0x40, 0x41, 0x5A, 0x5B, 0x3B0, 0x3B1, 0x3C9, 0x3CA, 0x4DFF, 0x4E00, 0x4E0F,
                                     0x4E10, 0x1F5FF, 0x1F600, 0x1F64F, 0x1F650};
  for (const uint32_t cp : probes) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    INFO(cp);
    CHECK(test::automaton_match(**g, s) == set.contains(cp));
  }
  // The complement excludes surrogates and holds everything else.
  GrammarBuilder all;
  const int32_t r = all.add_rule("root", utf8_class(set.complement()));
  auto ga = all.build(r);
  REQUIRE(ga.ok());
  CHECK(test::automaton_match(**ga, "a"));
  CHECK_FALSE(test::automaton_match(**ga, "A"));
  CHECK_FALSE(test::automaton_match(**ga, "\xED\xA0\x80"));  // a surrogate, never valid UTF-8
  CHECK(test::automaton_match(**ga, "\xF4\x8F\xBF\xBF"));    // U+10FFFF
}

TEST_CASE("build refuses grammars that could never end or are too large", "[grammar]") {
  {
    GrammarBuilder b;
    const int32_t a = b.add_rule("a");
    b.set_rule(a, alt({seq({ref(a), literal("x")}), literal("y")}));
    auto g = b.build(a);
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.status().message(), Catch::Contains("left-recursive"));
  }
  {
    GrammarBuilder b;
    const int32_t a = b.add_rule("a");
    b.set_rule(a, seq({literal("x"), ref(a)}));  // no base case
    auto g = b.build(a);
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.status().message(), Catch::Contains("no finite text"));
  }
  {
    GrammarBuilder b;
    const int32_t a = b.add_rule("a");
    b.add_rule("undefined");
    b.set_rule(a, ref(1));
    auto g = b.build(a);
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.status().message(), Catch::Contains("never defined"));
  }
  {
    // (a|b)*a(a|b){20}: 2^20 deterministic states, refused by the limit rather than built.
    GrammarBuilder b;
    const ExprPtr ab = byte_range('a', 'b');
    const int32_t a = b.add_rule("root", seq({star(ab), literal("a"), repeat(ab, 20, 20)}));
    auto g = b.build(a, GrammarLimits{.max_nfa_states = 100000, .max_dfa_states = 20000, .max_edges = 100000});
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.status().message(), Catch::Contains("too large"));
  }
  {
    // A branch without a base case is trimmed: the rest still works and no dead end is reachable.
    GrammarBuilder b;
    const int32_t root = b.add_rule("root");
    const int32_t loop = b.add_rule("loop");
    b.set_rule(loop, seq({literal("x"), ref(loop)}));
    b.set_rule(root, alt({literal("y"), ref(loop)}));
    auto g = b.build(root);
    REQUIRE(g.ok());
    CHECK(test::automaton_match(**g, "y"));
    CHECK((*g)->rule(0).states[0].calls.empty());
    CHECK((*g)->rule(0).states[0].step('x') < 0);
  }
}
