#pragma once
// A JSON grammar written directly with expressions (tests of the token machinery, independent of
// the JSON Schema front end): value, object, array, string with escapes, number, literals.
#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar::test {

// Returns the builder and its root; `ws` allows single spaces between tokens.
inline std::pair<GrammarBuilder, int32_t> json_grammar(bool ws = false) {
  GrammarBuilder b;
  const int32_t value = b.add_rule("value");
  const int32_t object = b.add_rule("object");
  const int32_t array = b.add_rule("array");
  const int32_t string = b.add_rule("string");
  const int32_t number = b.add_rule("number");
  const ExprPtr space = ws ? optional(literal(" ")) : empty();
  CodePointSet plain = CodePointSet::all();
  CodePointSet excluded;
  excluded.add(0, 0x1F);
  excluded.add('"', '"');
  excluded.add('\\', '\\');
  CodePointSet chars;
  for (const auto& [lo, hi] : plain.ranges()) chars.add(lo, hi);
  chars = excluded.complement();
  const ExprPtr hex = alt({byte_range('0', '9'), byte_range('a', 'f'), byte_range('A', 'F')});
  const ExprPtr escape = seq({literal("\\"), alt({byte_set([] {
                                                       std::bitset<256> s;
                                                       for (const char c : std::string("\"\\/bfnrt")) s.set(static_cast<uint8_t>(c));
                                                       return s;
                                                     }()),
                                                     seq({literal("u"), repeat(hex, 4, 4)})})});
  b.set_rule(string, seq({literal("\""), star(alt({utf8_class(chars), escape})), literal("\"")}));
  const ExprPtr digits = plus(byte_range('0', '9'));
  b.set_rule(number, seq({optional(literal("-")), alt({literal("0"), seq({byte_range('1', '9'), star(byte_range('0', '9'))})}),
                          optional(seq({literal("."), digits})),
                          optional(seq({byte_set([] {
                                          std::bitset<256> s;
                                          s.set('e');
                                          s.set('E');
                                          return s;
                                        }()),
                                        optional(byte_set([] {
                                          std::bitset<256> s;
                                          s.set('+');
                                          s.set('-');
                                          return s;
                                        }())),
                                        digits}))}));
  const ExprPtr member = seq({ref(string), space, literal(":"), space, ref(value)});
  b.set_rule(object, seq({literal("{"), space, optional(seq({member, star(seq({space, literal(","), space, member}))})), space,
                          literal("}")}));
  b.set_rule(array, seq({literal("["), space, optional(seq({ref(value), star(seq({space, literal(","), space, ref(value)}))})),
                         space, literal("]")}));
  b.set_rule(value, alt({ref(object), ref(array), ref(string), ref(number), literal("true"), literal("false"), literal("null")}));
  return {std::move(b), value};
}

}  // namespace llaisys::grammar::test
