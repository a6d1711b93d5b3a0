#pragma once
// Runs a Grammar's automaton with an explicit set of stacks (no token machinery): an independent
// check of the byte language of compiled grammars in tests.
#include <algorithm>
#include <string_view>
#include <vector>

#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar::test {

// Runs the automaton with an explicit stack set (no token machinery): true when `text` is accepted.
inline bool automaton_match(const Grammar& g, std::string_view text) {
  struct Frame {
    int32_t rule, state;
  };
  using Stack = std::vector<Frame>;
  auto closure = [&](std::vector<Stack> stacks) {
    std::vector<Stack> out;
    while (!stacks.empty()) {
      Stack s = std::move(stacks.back());
      stacks.pop_back();
      bool seen = false;
      for (const Stack& o : out) {
        if (o.size() == s.size() && std::equal(o.begin(), o.end(), s.begin(), [](const Frame& a, const Frame& b) {
              return a.rule == b.rule && a.state == b.state;
            })) {
          seen = true;
        }
      }
      if (seen || s.size() > 64) continue;
      const RuleState& st = g.rule(s.back().rule).states[static_cast<std::size_t>(s.back().state)];
      for (const CallEdge& c : st.calls) {
        Stack t = s;
        t.back().state = c.next;
        t.push_back(Frame{c.rule, 0});
        stacks.push_back(std::move(t));
      }
      if (st.final && s.size() > 1) {
        Stack t = s;
        t.pop_back();
        stacks.push_back(std::move(t));
      }
      out.push_back(std::move(s));
    }
    return out;
  };
  std::vector<Stack> current = closure({Stack{Frame{g.root(), 0}}});
  for (const char c : text) {
    std::vector<Stack> next;
    for (const Stack& s : current) {
      const int32_t to = g.rule(s.back().rule).states[static_cast<std::size_t>(s.back().state)].step(static_cast<uint8_t>(c));
      if (to >= 0) {
        Stack t = s;
        t.back().state = to;
        next.push_back(std::move(t));
      }
    }
    current = closure(std::move(next));
    if (current.empty()) return false;
  }
  for (const Stack& s : current) {
    if (s.size() == 1 && g.rule(s.back().rule).states[static_cast<std::size_t>(s.back().state)].final) return true;
  }
  return false;
}


}  // namespace llaisys::grammar::test
