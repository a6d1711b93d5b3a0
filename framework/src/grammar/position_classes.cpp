// CompiledGrammar: first and follow bytes per rule, and the per-position token classes (token_mask.hpp),
// each found by one walk of the vocabulary's byte trie or a class trie (position_walk.hpp).

#include <algorithm>

#include "llaisys/grammar/token_mask.hpp"
#include "position_walk.hpp"

namespace llaisys::grammar {
namespace {


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

}  // namespace

std::shared_ptr<const CompiledGrammar> CompiledGrammar::create(std::shared_ptr<const Grammar> grammar,
                                                               std::shared_ptr<const TokenVocabulary> vocab,
                                                               const MaskOptions& options) {
  std::shared_ptr<CompiledGrammar> c(new CompiledGrammar());
  c->options_ = options;
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
    const detail::PositionContext p{.grammar = *grammar_, .first = first_, .follow = follow_[static_cast<std::size_t>(rule)],
                                    .vocab = *vocab_, .rule = rule, .state = state};
    // A position that would walk much of the byte trie (inside a free string) walks a class trie.
    ByteClasses classes;
    std::shared_ptr<const TokenTrie> coarse;
    if (detail::walk_size(p, options_.class_trie_min_nodes) >= options_.class_trie_min_nodes) {
      classes = detail::position_byte_classes(p);
      if (classes.count <= options_.class_trie_max_classes) coarse = vocab_->class_trie(classes);
    }
    bool by_class = false;
    found = detail::classify(p, coarse.get(), &classes, &by_class);
    vocab_->store(fingerprint, state, found);
    std::lock_guard lock(mutex_);
    ++stats_.positions;
    if (by_class) ++stats_.class_walks;
  }
  std::lock_guard lock(mutex_);
  classes_[static_cast<std::size_t>(rule)][static_cast<std::size_t>(state)] = found;
  return found;
}

CompiledGrammar::ClassifyStats CompiledGrammar::classify_stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
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
