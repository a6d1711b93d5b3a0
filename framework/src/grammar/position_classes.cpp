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

std::vector<std::bitset<256>> compute_first_bytes(const Grammar& g) {
  const std::size_t n = g.rules().size();
  std::vector<std::bitset<256>> first(n);
  // States reachable from each rule's start without consuming a byte (through nullable calls).
  std::vector<std::vector<int32_t>> reach(n);
  for (std::size_t r = 0; r < n; ++r) {
    const Rule& rule = g.rules()[r];
    std::vector<char> seen(rule.states.size(), 0);
    std::vector<int32_t> stack{0};
    seen[0] = 1;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      reach[r].push_back(s);
      for (const CallEdge& c : rule.states[static_cast<std::size_t>(s)].calls) {
        if (g.rule(c.rule).nullable && !seen[static_cast<std::size_t>(c.next)]) {
          seen[static_cast<std::size_t>(c.next)] = 1;
          stack.push_back(c.next);
        }
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      std::bitset<256> f = first[r];
      for (const int32_t s : reach[r]) {
        const RuleState& st = g.rules()[r].states[static_cast<std::size_t>(s)];
        for (const ByteEdge& e : st.bytes) {
          for (unsigned b = e.lo; b <= e.hi; ++b) f.set(b);
        }
        for (const CallEdge& c : st.calls) f |= first[static_cast<std::size_t>(c.rule)];
      }
      if (f != first[r]) {
        first[r] = f;
        changed = true;
      }
    }
  }
  return first;
}

std::shared_ptr<const PositionClasses> classify(const Grammar& grammar, const std::vector<std::bitset<256>>& first,
                                                const TokenVocabulary& vocab, int32_t rule, int32_t state) {
  const std::vector<TrieNode>& nodes = vocab.nodes();
  const std::vector<TokenId>& ids = vocab.token_ids();
  std::vector<StackNode> arena{StackNode{.rule = rule, .state = state, .parent = kSentinel, .depth = 0}};
  Stepper stepper(grammar, first, arena, kClassifyMaxNodes, kClassifyMaxDepth);
  // Level L holds the configuration after the first L bytes of the current trie path, its closure,
  // and whether some path could have returned below the position before byte L + 1 (`escaped`).
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
      escaped[up] = static_cast<char>((up > 0 && escaped[up - 1]) || closure[up].escapes);
      closure_mark[up] = arena.size();
      closed[up] = 1;
    } else {
      arena.resize(closure_mark[up]);
    }
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
    if (escaped[up]) uncertain_subtree(i, node.subtree_end);
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
    if (f == 0) f = grammar_->fingerprint(rule) | 1u;
    fingerprint = f;
  }
  std::shared_ptr<const PositionClasses> found = vocab_->cached(fingerprint, state);
  if (!found) {
    found = classify(*grammar_, first_, *vocab_, rule, state);
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
