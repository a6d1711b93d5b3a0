#pragma once
// Runs a Grammar's automaton with an explicit set of call stacks (no token machinery): an independent
// check of the byte language of compiled grammars in tests.
#include <algorithm>
#include <string_view>
#include <vector>

#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar::test {

struct Frame {
  int32_t rule;
  int32_t state;
  bool operator==(const Frame&) const = default;
};
using Stack = std::vector<Frame>;

inline const RuleState& state_of(const Grammar& g, const Frame& f) {
  return g.rule(f.rule).states[static_cast<std::size_t>(f.state)];
}

// Every stack reachable from `stacks` without reading a byte (calls entered, finished rules left).
inline std::vector<Stack> closure(const Grammar& g, std::vector<Stack> stacks) {
  std::vector<Stack> out;
  while (!stacks.empty()) {
    Stack s = std::move(stacks.back());
    stacks.pop_back();
    if (s.size() > 256 || std::find(out.begin(), out.end(), s) != out.end()) continue;
    const RuleState& st = state_of(g, s.back());
    for (const auto& c : st.calls) {
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
}

// True when the grammar accepts `text` as a whole.
inline bool automaton_match(const Grammar& g, std::string_view text) {
  std::vector<Stack> current = closure(g, {Stack{Frame{g.root(), 0}}});
  for (const char c : text) {
    std::vector<Stack> next;
    for (const Stack& s : current) {
      const int32_t to = state_of(g, s.back()).step(static_cast<uint8_t>(c));
      if (to < 0) continue;
      Stack t = s;
      t.back().state = to;
      next.push_back(std::move(t));
    }
    current = closure(g, std::move(next));
    if (current.empty()) return false;
  }
  return std::any_of(current.begin(), current.end(),
                     [&](const Stack& s) { return s.size() == 1 && state_of(g, s.back()).final; });
}

}  // namespace llaisys::grammar::test
