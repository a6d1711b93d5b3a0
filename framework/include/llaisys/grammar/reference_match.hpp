#pragma once
// A slow, obviously-correct matcher over expressions, independent of the automaton (grammar.hpp):
// the reference the compiled grammar and the front ends are tested against. Sets of end positions,
// memoised per (rule, position); left-recursive rules are not supported (they return no match).

#include <string_view>
#include <vector>

#include "llaisys/grammar/expr.hpp"

namespace llaisys::grammar {

// True when `text` as a whole is in the language of rules[root] (rules[i] the expression of rule i).
bool reference_match(const std::vector<ExprPtr>& rules, int32_t root, std::string_view text);

}  // namespace llaisys::grammar
