#pragma once
// Grammar: rules of expressions (expr.hpp) compiled into one deterministic byte automaton per rule
// whose edges are bytes or calls of other rules (a recursive transition network). The matcher
// (matcher.hpp) runs it with a stack per parse; token masks come from it (token_mask.hpp).
//
// build() checks, each failure an invalid_argument naming the rule:
//  - every ref names a defined rule; the root is defined;
//  - no left recursion (a rule reaching itself without consuming a byte): it would never end;
//  - the root matches at least one finite string (rules without a base case are refused);
//  - the automaton stays within `GrammarLimits` (states, edges), so hostile input (huge enums,
//    nested bounded repeats, exponential determinization) is refused, never allowed to exhaust memory.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/expr.hpp"

namespace llaisys::grammar {

struct GrammarLimits {
  int64_t max_nfa_states = 1'000'000;  // before determinization, all rules together
  int64_t max_dfa_states = 200'000;    // after
  int64_t max_edges = 4'000'000;
};

// One automaton state. Edges are sorted by `lo`, disjoint. Calls: from here, run `rule` from its
// start, then continue at `next` (a state of this rule).
struct ByteEdge {
  uint8_t lo = 0;
  uint8_t hi = 0;
  int32_t next = -1;
};
struct CallEdge {
  int32_t rule = -1;
  int32_t next = -1;
};
struct RuleState {
  std::vector<ByteEdge> bytes;
  std::vector<CallEdge> calls;
  bool final = false;  // the rule may end here
  // States with many edges (UTF-8 classes) get a byte -> edge + 1 table (0: none), so step() is one
  // lookup: the token-mask walks call it once per trie node.
  std::vector<uint8_t> edge_of_byte;
  int32_t step(uint8_t byte) const {
    if (!edge_of_byte.empty()) {
      const uint8_t e = edge_of_byte[byte];
      return e == 0 ? -1 : bytes[e - 1u].next;
    }
    for (const ByteEdge& e : bytes) {
      if (byte < e.lo) return -1;
      if (byte <= e.hi) return e.next;
    }
    return -1;
  }
};
struct Rule {
  std::string name;
  std::vector<RuleState> states;  // state 0 is the start
  bool nullable = false;          // matches the empty string
};

class Grammar {
 public:
  const std::vector<Rule>& rules() const { return rules_; }
  int32_t root() const { return root_; }
  const Rule& rule(int32_t id) const { return rules_[static_cast<std::size_t>(id)]; }
  int64_t num_states() const;
  // A stable digest of the automaton (rules reachable from `rule`, names excluded): equal digests mean
  // equal languages from that rule, so per-vocabulary work can be shared across grammars.
  uint64_t fingerprint(int32_t rule) const;

 private:
  friend class GrammarBuilder;
  std::vector<Rule> rules_;
  int32_t root_ = 0;
  std::vector<uint64_t> fingerprints_;
};

class GrammarBuilder {
 public:
  // Declares a rule (its expression set later), so rules can refer to each other in any order.
  int32_t add_rule(std::string name);
  int32_t add_rule(std::string name, ExprPtr expr);
  void set_rule(int32_t id, ExprPtr expr);
  int32_t num_rules() const { return static_cast<int32_t>(exprs_.size()); }
  const std::string& rule_name(int32_t id) const { return names_[static_cast<std::size_t>(id)]; }
  // Rule i's expression (null while only declared); reference_match() takes this list.
  const std::vector<ExprPtr>& exprs() const { return exprs_; }
  // Compiles the rules reachable from `root` (others are dropped; ids are renumbered, root first).
  Result<std::shared_ptr<const Grammar>> build(int32_t root, const GrammarLimits& limits = {}) const;

 private:
  std::vector<std::string> names_;
  std::vector<ExprPtr> exprs_;
};

}  // namespace llaisys::grammar
