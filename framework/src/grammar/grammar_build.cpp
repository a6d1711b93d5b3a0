// GrammarBuilder::build: expressions -> one NFA per rule (Thompson) -> one DFA per rule (subset
// construction over bytes and calls) -> checks (left recursion, productivity) -> trimming (edges into
// states that cannot finish are dropped, so every live parse can still be completed: a token the
// matcher allows never leads into a dead end).

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar {
namespace {

struct NfaState {
  std::vector<int32_t> eps;
  std::vector<std::pair<std::bitset<256>, int32_t>> bytes;
  std::vector<CallEdge> calls;
};

struct Nfa {
  std::vector<NfaState> states;
  int32_t start = 0;
  int32_t end = 0;
};

class NfaCompiler {
 public:
  NfaCompiler(Nfa& nfa, int64_t& budget, const std::vector<int32_t>& rule_map)
      : nfa_(nfa), budget_(budget), rule_map_(rule_map) {}

  Status compile(const ExprPtr& e, int32_t& start, int32_t& end) {
    start = add();
    end = add();
    if (budget_ < 0) return too_large();
    return into(e, start, end);
  }

 private:
  int32_t add() {
    --budget_;
    nfa_.states.emplace_back();
    return static_cast<int32_t>(nfa_.states.size() - 1);
  }
  static Status too_large() {
    return Status(ErrorCode::invalid_argument, "the grammar is too large (its automaton passes the state limit)");
  }
  NfaState& at(int32_t s) { return nfa_.states[static_cast<std::size_t>(s)]; }

  // Connects `from` to `to` through e.
  Status into(const ExprPtr& e, int32_t from, int32_t to) {
    if (budget_ < 0) return too_large();
    switch (e->kind) {
      case Expr::Kind::empty: at(from).eps.push_back(to); return Status();
      case Expr::Kind::nothing: return Status();
      case Expr::Kind::bytes: at(from).bytes.emplace_back(e->set, to); return Status();
      case Expr::Kind::ref: {
        const int32_t mapped = rule_map_[static_cast<std::size_t>(e->rule)];
        at(from).calls.push_back(CallEdge{.rule = mapped, .next = to});
        return Status();
      }
      case Expr::Kind::seq: {
        int32_t cur = from;
        for (std::size_t i = 0; i < e->children.size(); ++i) {
          const int32_t next = i + 1 == e->children.size() ? to : add();
          LLAISYS_RETURN_IF_ERROR(into(e->children[i], cur, next));
          cur = next;
        }
        return Status();
      }
      case Expr::Kind::alt:
        for (const ExprPtr& c : e->children) {
          const int32_t s = add();
          at(from).eps.push_back(s);
          LLAISYS_RETURN_IF_ERROR(into(c, s, to));
        }
        return Status();
      case Expr::Kind::repeat: {
        const ExprPtr& child = e->children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < e->min; ++i) {
          const int32_t next = add();
          LLAISYS_RETURN_IF_ERROR(into(child, cur, next));
          cur = next;
          if (budget_ < 0) return too_large();
        }
        if (e->max == kUnbounded) {
          const int32_t loop = add();
          at(cur).eps.push_back(loop);
          const int32_t body_end = add();
          LLAISYS_RETURN_IF_ERROR(into(child, loop, body_end));
          at(body_end).eps.push_back(loop);
          at(loop).eps.push_back(to);
          return Status();
        }
        for (int32_t i = e->min; i < e->max; ++i) {
          at(cur).eps.push_back(to);  // stop here
          const int32_t next = add();
          LLAISYS_RETURN_IF_ERROR(into(child, cur, next));
          cur = next;
          if (budget_ < 0) return too_large();
        }
        at(cur).eps.push_back(to);
        return Status();
      }
    }
    return Status();
  }

  Nfa& nfa_;
  int64_t& budget_;
  const std::vector<int32_t>& rule_map_;
};

struct VectorHash {
  std::size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (const int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};

// Subset construction. Fails when the DFA passes `budget` states.
Status determinize(const Nfa& nfa, Rule& rule, int64_t& budget, int64_t& edge_budget) {
  auto closure = [&](std::vector<int32_t> set) {
    std::vector<char> seen(nfa.states.size(), 0);
    std::vector<int32_t> stack = set;
    for (const int32_t s : set) seen[static_cast<std::size_t>(s)] = 1;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (const int32_t t : nfa.states[static_cast<std::size_t>(s)].eps) {
        if (!seen[static_cast<std::size_t>(t)]) {
          seen[static_cast<std::size_t>(t)] = 1;
          set.push_back(t);
          stack.push_back(t);
        }
      }
    }
    std::sort(set.begin(), set.end());
    // Keep only states with edges out, or the end: the others add nothing once closed.
    std::erase_if(set, [&](int32_t s) {
      const NfaState& st = nfa.states[static_cast<std::size_t>(s)];
      return s != nfa.end && st.bytes.empty() && st.calls.empty();
    });
    return set;
  };
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> ids;
  std::vector<std::vector<int32_t>> sets;
  auto intern = [&](std::vector<int32_t> set) -> int32_t {
    auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(sets.size()));
    if (inserted) {
      sets.push_back(std::move(set));
      rule.states.emplace_back();
      --budget;
    }
    return it->second;
  };
  intern(closure({nfa.start}));
  for (std::size_t d = 0; d < sets.size(); ++d) {
    if (budget < 0 || edge_budget < 0) {
      return make_error(ErrorCode::invalid_argument,
                        "the grammar is too large (rule '{}' passes the automaton's state or edge limit)", rule.name);
    }
    const std::vector<int32_t> set = sets[d];  // copy: `sets` grows below
    bool final = false;
    std::vector<const std::pair<std::bitset<256>, int32_t>*> edges;
    std::map<int32_t, std::vector<int32_t>> calls;
    for (const int32_t s : set) {
      if (s == nfa.end) final = true;
      const NfaState& st = nfa.states[static_cast<std::size_t>(s)];
      for (const auto& e : st.bytes) edges.push_back(&e);
      for (const CallEdge& c : st.calls) calls[c.rule].push_back(c.next);
    }
    std::vector<ByteEdge> out_bytes;
    std::vector<int32_t> previous;
    int32_t previous_target = -1;
    for (unsigned b = 0; b < 256; ++b) {
      std::vector<int32_t> targets;
      for (const auto* e : edges) {
        if (e->first.test(b)) targets.push_back(e->second);
      }
      if (targets.empty()) {
        previous.clear();
        previous_target = -1;
        continue;
      }
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      if (previous_target >= 0 && targets == previous) {
        out_bytes.back().hi = static_cast<uint8_t>(b);
        continue;
      }
      const int32_t target = intern(closure(targets));
      out_bytes.push_back(ByteEdge{.lo = static_cast<uint8_t>(b), .hi = static_cast<uint8_t>(b), .next = target});
      previous = std::move(targets);
      previous_target = target;
    }
    std::vector<CallEdge> out_calls;
    for (auto& [callee, targets] : calls) {
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      out_calls.push_back(CallEdge{.rule = callee, .next = intern(closure(targets))});
    }
    edge_budget -= static_cast<int64_t>(out_bytes.size() + out_calls.size());
    RuleState& st = rule.states[d];
    st.bytes = std::move(out_bytes);
    st.calls = std::move(out_calls);
    st.final = final;
  }
  if (budget < 0 || edge_budget < 0) {
    return make_error(ErrorCode::invalid_argument,
                      "the grammar is too large (rule '{}' passes the automaton's state or edge limit)", rule.name);
  }
  return Status();
}

// The rules whose expressions `e` refers to.
void collect_refs(const ExprPtr& e, std::vector<int32_t>& out) {
  if (e->kind == Expr::Kind::ref) {
    out.push_back(e->rule);
    return;
  }
  for (const ExprPtr& c : e->children) collect_refs(c, out);
}

}  // namespace

int64_t Grammar::num_states() const {
  int64_t n = 0;
  for (const Rule& r : rules_) n += static_cast<int64_t>(r.states.size());
  return n;
}

uint64_t Grammar::fingerprint(int32_t rule) const {
  // Rules reachable from `rule`, numbered in discovery order, hashed with their automata.
  std::unordered_map<int32_t, int32_t> order;
  std::vector<int32_t> queue{rule};
  order.emplace(rule, 0);
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t x) { h = (h ^ x) * 0x100000001b3ull; };
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const Rule& r = rules_[static_cast<std::size_t>(queue[i])];
    mix(0xFFFF0000u + r.states.size());
    for (const RuleState& s : r.states) {
      mix(s.final ? 1 : 2);
      for (const ByteEdge& e : s.bytes) mix((static_cast<uint64_t>(e.lo) << 40) | (static_cast<uint64_t>(e.hi) << 32) | static_cast<uint32_t>(e.next));
      for (const CallEdge& c : s.calls) {
        auto [it, inserted] = order.emplace(c.rule, static_cast<int32_t>(queue.size()));
        if (inserted) queue.push_back(c.rule);
        mix((1ull << 63) | (static_cast<uint64_t>(it->second) << 32) | static_cast<uint32_t>(c.next));
      }
      mix(3);
    }
  }
  return h;
}

int32_t GrammarBuilder::add_rule(std::string name) {
  names_.push_back(std::move(name));
  exprs_.push_back(nullptr);
  return static_cast<int32_t>(exprs_.size() - 1);
}

int32_t GrammarBuilder::add_rule(std::string name, ExprPtr expr) {
  const int32_t id = add_rule(std::move(name));
  set_rule(id, std::move(expr));
  return id;
}

void GrammarBuilder::set_rule(int32_t id, ExprPtr expr) { exprs_[static_cast<std::size_t>(id)] = std::move(expr); }

Result<std::shared_ptr<const Grammar>> GrammarBuilder::build(int32_t root, const GrammarLimits& limits) const {
  const auto num = static_cast<int32_t>(exprs_.size());
  if (root < 0 || root >= num) return Status(ErrorCode::invalid_argument, "the grammar has no root rule");
  // Reachable rules, root first.
  std::vector<int32_t> map(static_cast<std::size_t>(num), -1);
  std::vector<int32_t> order{root};
  map[static_cast<std::size_t>(root)] = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ExprPtr& e = exprs_[static_cast<std::size_t>(order[i])];
    if (!e) return make_error(ErrorCode::invalid_argument, "rule '{}' is used but never defined", names_[order[i]]);
    std::vector<int32_t> refs;
    collect_refs(e, refs);
    for (const int32_t r : refs) {
      if (r < 0 || r >= num) return Status(ErrorCode::invalid_argument, "a grammar expression names a rule that does not exist");
      if (map[static_cast<std::size_t>(r)] < 0) {
        map[static_cast<std::size_t>(r)] = static_cast<int32_t>(order.size());
        order.push_back(r);
      }
    }
  }
  auto grammar = std::make_shared<Grammar>();
  grammar->rules_.resize(order.size());
  int64_t nfa_budget = limits.max_nfa_states;
  int64_t dfa_budget = limits.max_dfa_states;
  int64_t edge_budget = limits.max_edges;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Rule& rule = grammar->rules_[i];
    rule.name = names_[static_cast<std::size_t>(order[i])];
    Nfa nfa;
    NfaCompiler compiler(nfa, nfa_budget, map);
    LLAISYS_RETURN_IF_ERROR(compiler.compile(exprs_[static_cast<std::size_t>(order[i])], nfa.start, nfa.end));
    LLAISYS_RETURN_IF_ERROR(determinize(nfa, rule, dfa_budget, edge_budget));
  }
  std::vector<Rule>& rules = grammar->rules_;
  const std::size_t n = rules.size();

  // Nullable rules (fixpoint): the start reaches a final state through calls of nullable rules only.
  auto empty_reach = [&](const Rule& r, const std::vector<char>& nullable) {
    std::vector<char> seen(r.states.size(), 0);
    std::vector<int32_t> stack{0};
    seen[0] = 1;
    std::vector<int32_t> reached;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      reached.push_back(s);
      for (const CallEdge& c : r.states[static_cast<std::size_t>(s)].calls) {
        if (nullable[static_cast<std::size_t>(c.rule)] && !seen[static_cast<std::size_t>(c.next)]) {
          seen[static_cast<std::size_t>(c.next)] = 1;
          stack.push_back(c.next);
        }
      }
    }
    return reached;
  };
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (nullable[i]) continue;
      for (const int32_t s : empty_reach(rules[i], nullable)) {
        if (rules[i].states[static_cast<std::size_t>(s)].final) {
          nullable[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) rules[i].nullable = nullable[i] != 0;

  // Left recursion: a rule called, without a byte consumed first, from itself (directly or not).
  std::vector<std::vector<int32_t>> left_calls(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const int32_t s : empty_reach(rules[i], nullable)) {
      for (const CallEdge& c : rules[i].states[static_cast<std::size_t>(s)].calls) left_calls[i].push_back(c.rule);
    }
  }
  {
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    for (std::size_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      std::vector<std::pair<int32_t, std::size_t>> stack{{static_cast<int32_t>(start), 0}};
      color[start] = 1;
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        const auto& callees = left_calls[static_cast<std::size_t>(r)];
        if (next == callees.size()) {
          color[static_cast<std::size_t>(r)] = 2;
          stack.pop_back();
          continue;
        }
        const int32_t c = callees[next++];
        if (color[static_cast<std::size_t>(c)] == 1) {
          return make_error(ErrorCode::invalid_argument,
                            "rule '{}' is left-recursive (it reaches itself before matching anything), so it can never end",
                            rules[static_cast<std::size_t>(c)].name);
        }
        if (color[static_cast<std::size_t>(c)] == 0) {
          color[static_cast<std::size_t>(c)] = 1;
          stack.emplace_back(c, 0);
        }
      }
    }
  }

  // Live states (fixpoint over rules): a state from which the rule can end through byte edges and
  // calls of productive rules. A rule is productive when its start is live.
  std::vector<std::vector<char>> live(n);
  for (std::size_t i = 0; i < n; ++i) live[i].assign(rules[i].states.size(), 0);
  std::vector<char> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Rule& r = rules[i];
      for (bool inner = true; inner;) {
        inner = false;
        for (std::size_t s = 0; s < r.states.size(); ++s) {
          if (live[i][s]) continue;
          const RuleState& st = r.states[s];
          bool ok = st.final;
          for (const ByteEdge& e : st.bytes) ok = ok || live[i][static_cast<std::size_t>(e.next)];
          for (const CallEdge& c : st.calls) {
            ok = ok || (productive[static_cast<std::size_t>(c.rule)] && live[i][static_cast<std::size_t>(c.next)]);
          }
          if (ok) {
            live[i][s] = 1;
            inner = true;
          }
        }
      }
      if (!productive[i] && live[i][0]) {
        productive[i] = 1;
        changed = true;
      }
    }
  }
  if (!productive[0]) {
    return make_error(ErrorCode::invalid_argument,
                      "rule '{}' matches no finite text (a recursion without a base case, or an unsatisfiable constraint)",
                      rules[0].name);
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (RuleState& st : rules[i].states) {
      std::erase_if(st.bytes, [&](const ByteEdge& e) { return !live[i][static_cast<std::size_t>(e.next)]; });
      std::erase_if(st.calls, [&](const CallEdge& c) {
        return !productive[static_cast<std::size_t>(c.rule)] || !live[i][static_cast<std::size_t>(c.next)];
      });
      if (st.bytes.size() > 4 && st.bytes.size() < 256) {
        st.edge_of_byte.assign(256, 0);
        for (std::size_t e = 0; e < st.bytes.size(); ++e) {
          for (unsigned b = st.bytes[e].lo; b <= st.bytes[e].hi; ++b) st.edge_of_byte[b] = static_cast<uint8_t>(e + 1);
        }
      }
    }
  }
  grammar->root_ = 0;
  return std::shared_ptr<const Grammar>(std::move(grammar));
}

}  // namespace llaisys::grammar
