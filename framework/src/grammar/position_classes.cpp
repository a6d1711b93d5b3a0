// CompiledGrammar: first bytes per rule and the per-position token classes (token_mask.hpp), found by
// one preorder walk of the vocabulary trie from the position with an unknown context below it.

#include <algorithm>

#include "llaisys/grammar/token_mask.hpp"
#include "parse_stepper.hpp"

namespace llaisys::grammar {
namespace {

using detail::Closure;
using detail::kSentinel;
using detail::StackNode;
using detail::Stepper;

constexpr int32_t kClassifyMaxNodes = 4096;
constexpr int32_t kClassifyMaxDepth = 1024;

// The states of `rule` reached from `from` without consuming a byte (through calls of nullable rules).
std::vector<int32_t> reached_without_a_byte(const Grammar& g, std::size_t rule, int32_t from) {
  const Rule& r = g.rules()[rule];
  std::vector<char> seen(r.states.size(), 0);
  std::vector<int32_t> stack{from};
  std::vector<int32_t> reached;
  seen[static_cast<std::size_t>(from)] = 1;
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    reached.push_back(s);
    for (const CallEdge& c : r.states[static_cast<std::size_t>(s)].calls) {
      if (g.rule(c.rule).nullable && !seen[static_cast<std::size_t>(c.next)]) {
        seen[static_cast<std::size_t>(c.next)] = 1;
        stack.push_back(c.next);
      }
    }
  }
  return reached;
}

// The bytes that can come next from `states` of `rule`: their byte edges and what their callees start with.
std::bitset<256> next_bytes(const Grammar& g, std::size_t rule, const std::vector<int32_t>& states,
                            const std::vector<std::bitset<256>>& first) {
  std::bitset<256> out;
  for (const int32_t s : states) {
    const RuleState& st = g.rules()[rule].states[static_cast<std::size_t>(s)];
    for (const ByteEdge& e : st.bytes) {
      for (unsigned b = e.lo; b <= e.hi; ++b) out.set(b);
    }
    for (const CallEdge& c : st.calls) out |= first[static_cast<std::size_t>(c.rule)];
  }
  return out;
}

std::vector<std::bitset<256>> compute_first_bytes(const Grammar& g) {
  const std::size_t n = g.rules().size();
  std::vector<std::bitset<256>> first(n);
  std::vector<std::vector<int32_t>> reach(n);
  for (std::size_t r = 0; r < n; ++r) reach[r] = reached_without_a_byte(g, r, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      const std::bitset<256> f = first[r] | next_bytes(g, r, reach[r], first);
      if (f != first[r]) {
        first[r] = f;
        changed = true;
      }
    }
  }
  return first;
}

// follow[R]: for every call of R (from state s of rule r, returning to `next`), the bytes that can
// start what follows from `next` in r, and follow[r] when r can end from `next` without a byte.
std::vector<std::bitset<256>> compute_follow_bytes(const Grammar& g, const std::vector<std::bitset<256>>& first) {
  const std::size_t n = g.rules().size();
  std::vector<std::bitset<256>> follow(n);
  // Per (rule, state): what can come next within the rule, and whether it can end without a byte.
  struct Local {
    std::bitset<256> bytes;
    bool can_end = false;
  };
  std::vector<std::vector<Local>> local(n);
  for (std::size_t r = 0; r < n; ++r) {
    const Rule& rule = g.rules()[r];
    local[r].resize(rule.states.size());
    for (std::size_t s = 0; s < rule.states.size(); ++s) {
      const std::vector<int32_t> reached = reached_without_a_byte(g, r, static_cast<int32_t>(s));
      local[r][s].bytes = next_bytes(g, r, reached, first);
      local[r][s].can_end = std::any_of(reached.begin(), reached.end(), [&](int32_t t) {
        return rule.states[static_cast<std::size_t>(t)].final;
      });
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      for (const RuleState& st : g.rules()[r].states) {
        for (const CallEdge& c : st.calls) {
          const Local& after = local[r][static_cast<std::size_t>(c.next)];
          std::bitset<256> f = follow[static_cast<std::size_t>(c.rule)] | after.bytes;
          if (after.can_end) f |= follow[r];
          if (f != follow[static_cast<std::size_t>(c.rule)]) {
            follow[static_cast<std::size_t>(c.rule)] = f;
            changed = true;
          }
        }
      }
    }
  }
  return follow;
}

std::shared_ptr<const PositionClasses> classify(const Grammar& grammar, const std::vector<std::bitset<256>>& first,
                                                const std::bitset<256>& follow, const TokenVocabulary& vocab,
                                                int32_t rule, int32_t state) {
  const std::vector<TrieNode>& nodes = vocab.nodes();
  const std::vector<TokenId>& ids = vocab.token_ids();
  std::vector<StackNode> arena{StackNode{.rule = rule, .state = state, .parent = kSentinel, .depth = 0}};
  Stepper stepper(grammar, first, arena, kClassifyMaxNodes, kClassifyMaxDepth);
  // Level L holds the configuration after the first L bytes of the current trie path and its
  // closure; escaped[L]: some path could have returned below the position after k < L bytes with
  // byte k + 1 one that may follow the rule (so the token's fate depends on the stack).
  // The arena is append-only in preorder, so what deeper levels made is dropped by truncation.
  const std::size_t levels = static_cast<std::size_t>(vocab.max_depth()) + 1;
  std::vector<std::vector<int32_t>> config(levels);
  std::vector<Closure> closure(levels);
  std::vector<char> closed(levels, 0);
  std::vector<char> closure_ok(levels, 0);
  std::vector<char> escaped(levels, 0);
  std::vector<std::size_t> config_mark(levels, 0);
  std::vector<std::size_t> closure_mark(levels, 0);
  config[0] = {0};
  config_mark[0] = arena.size();

  std::vector<uint32_t> bits(vocab.mask_words(), 0u);
  std::size_t num_accepted = 0;
  auto out = std::make_shared<PositionClasses>();
  auto accept = [&](const TrieNode& node) {
    for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) {
      const auto id = static_cast<uint32_t>(ids[t]);
      bits[id / 32] |= 1u << (id % 32);
      ++num_accepted;
    }
  };
  auto uncertain_subtree = [&](uint32_t from, uint32_t to) {
    for (uint32_t j = from; j < to; ++j) {
      for (uint32_t t = nodes[j].tokens_begin; t < nodes[j].tokens_end; ++t) out->uncertain.push_back(ids[t]);
    }
  };

  for (uint32_t i = 0; i < nodes.size();) {
    const TrieNode& node = nodes[i];
    const std::size_t d = node.depth;
    const std::size_t up = d - 1;
    if (!closed[up]) {
      arena.resize(config_mark[up]);
      closure_ok[up] = stepper.close(config[up], -1, closure[up]) ? 1 : 0;
      closure_mark[up] = arena.size();
      closed[up] = 1;
    } else {
      arena.resize(closure_mark[up]);
    }
    escaped[d] = static_cast<char>((up > 0 && escaped[up]) || (closure[up].escapes && follow.test(node.byte)));
    // Past the limits, the subtree is left to the full check at run time.
    if (!closure_ok[up] || !stepper.advance(closure[up], node.byte, config[d])) {
      uncertain_subtree(i, node.subtree_end);
      i = node.subtree_end;
      continue;
    }
    config_mark[d] = arena.size();
    closed[d] = 0;
    if (!config[d].empty()) {
      accept(node);
      ++i;
      continue;
    }
    if (escaped[d]) uncertain_subtree(i, node.subtree_end);
    i = node.subtree_end;
  }
  if (num_accepted * 32 >= static_cast<std::size_t>(vocab.vocab_size())) {
    out->accepted_words = std::move(bits);
  } else {
    for (std::size_t w = 0; w < bits.size(); ++w) {
      for (uint32_t word = bits[w]; word != 0; word &= word - 1) {
        out->accepted_ids.push_back(static_cast<TokenId>(w * 32 + static_cast<std::size_t>(std::countr_zero(word))));
      }
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<const CompiledGrammar> CompiledGrammar::create(std::shared_ptr<const Grammar> grammar,
                                                               std::shared_ptr<const TokenVocabulary> vocab) {
  std::shared_ptr<CompiledGrammar> c(new CompiledGrammar());
  c->first_ = compute_first_bytes(*grammar);
  c->follow_ = compute_follow_bytes(*grammar, c->first_);
  c->fingerprints_.assign(grammar->rules().size(), 0);
  c->classes_.resize(grammar->rules().size());
  for (std::size_t r = 0; r < grammar->rules().size(); ++r) c->classes_[r].resize(grammar->rules()[r].states.size());
  c->grammar_ = std::move(grammar);
  c->vocab_ = std::move(vocab);
  return c;
}

std::shared_ptr<const PositionClasses> CompiledGrammar::classes(int32_t rule, int32_t state) const {
  uint64_t fingerprint = 0;
  {
    std::lock_guard lock(mutex_);
    auto& slot = classes_[static_cast<std::size_t>(rule)][static_cast<std::size_t>(state)];
    if (slot) return slot;
    uint64_t& f = fingerprints_[static_cast<std::size_t>(rule)];
    if (f == 0) {
      // Classes depend on the rule's automaton (and what it calls) and on what may follow it.
      uint64_t h = grammar_->fingerprint(rule);
      const std::bitset<256>& follow = follow_[static_cast<std::size_t>(rule)];
      for (unsigned b = 0; b < 256; ++b) h = (h ^ (follow.test(b) ? b + 1 : 0)) * 0x100000001b3ull;
      f = h | 1u;
    }
    fingerprint = f;
  }
  std::shared_ptr<const PositionClasses> found = vocab_->cached(fingerprint, state);
  if (!found) {
    found = classify(*grammar_, first_, follow_[static_cast<std::size_t>(rule)], *vocab_, rule, state);
    vocab_->store(fingerprint, state, found);
  }
  std::lock_guard lock(mutex_);
  classes_[static_cast<std::size_t>(rule)][static_cast<std::size_t>(state)] = found;
  return found;
}

int64_t CompiledGrammar::precompute_all() const {
  int64_t n = 0;
  for (std::size_t r = 0; r < grammar_->rules().size(); ++r) {
    for (std::size_t s = 0; s < grammar_->rules()[r].states.size(); ++s) {
      classes(static_cast<int32_t>(r), static_cast<int32_t>(s));
      ++n;
    }
  }
  return n;
}

}  // namespace llaisys::grammar
