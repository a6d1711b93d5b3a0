#include "position_walk.hpp"

#include <algorithm>
#include <array>

#include "parse_stepper.hpp"

namespace llaisys::grammar::detail {
namespace {

constexpr int32_t kClassifyMaxNodes = 4096;
constexpr int32_t kClassifyMaxDepth = 1024;
// position_byte_classes looks this many bytes ahead of the position: what lies further matters to few
// tokens (and a class walk stays exact whatever the classes: it drops to bytes where they fail).
constexpr int32_t kClassesLookahead = 8;
// ... and leaves out a state entered on at most this many bytes that would split a class: its entry
// bytes are made sticky instead (a backslash in a JSON string, a UTF-8 lead byte such as E0).
constexpr int kMaxStickyRange = 4;

// The walk. Level L holds the configuration after the first L bytes of the current trie path and its
// closure; escaped[L]: some path could have returned below the position after k < L bytes with byte
// k + 1 one that may follow the rule (so the token's fate depends on the stack). The arena is
// append-only in preorder, so what deeper levels made is dropped by truncation.
class Walk {
 public:
  Walk(const PositionContext& p, const TokenTrie& trie, const ByteClasses* classes)
      : p_(p),
        trie_(trie),
        classes_(classes),
        arena_{StackNode{.rule = p.rule, .state = p.state, .parent = kSentinel, .depth = 0}},
        stepper_(p.grammar, p.first, arena_, kClassifyMaxNodes, kClassifyMaxDepth),
        out_(std::make_shared<PositionClasses>()) {
    const std::size_t levels = static_cast<std::size_t>(p.vocab.max_depth()) + 1;
    config_.resize(levels);
    closure_.resize(levels);
    closed_.assign(levels, 0);
    closure_ok_.assign(levels, 0);
    escaped_.assign(levels, 0);
    exact_.assign(levels, 0);
    config_mark_.assign(levels, 0);
    closure_mark_.assign(levels, 0);
    config_[0] = {0};
    config_mark_[0] = arena_.size();
    if (classes_ != nullptr) respects_.resize(p.grammar.rules().size());
  }

  // The position's own closure steps class bytes alike (else a class walk cannot start).
  bool start_respects_classes() {
    close_level(0);
    return closure_ok_[0] && respects_classes(closure_[0]);
  }

  void run() { run(trie_, 0, static_cast<uint32_t>(trie_.nodes.size())); }

  std::shared_ptr<const PositionClasses> finish() {
    if (&trie_ != &p_.vocab.trie()) {  // the matcher shares work between uncertain tokens in byte order
      std::sort(out_->uncertain.begin(), out_->uncertain.end(),
                [&](TokenId a, TokenId b) { return p_.vocab.trie_rank(a) < p_.vocab.trie_rank(b); });
    }
    std::vector<uint32_t> bits = accepted_bits();
    std::size_t accepted = 0;
    for (const uint32_t w : bits) accepted += static_cast<std::size_t>(std::popcount(w));
    if (accepted * 32 >= static_cast<std::size_t>(p_.vocab.vocab_size())) {
      out_->accepted_words = std::move(bits);
    } else {
      for (std::size_t w = 0; w < bits.size(); ++w) {
        for (uint32_t word = bits[w]; word != 0; word &= word - 1) {
          out_->accepted_ids.push_back(static_cast<TokenId>(w * 32 + static_cast<std::size_t>(std::countr_zero(word))));
        }
      }
    }
    return out_;
  }

 private:
  // Walks nodes [begin, end) of `trie` (whole subtrees whose parents' levels are set).
  void run(const TokenTrie& trie, uint32_t begin, uint32_t end) {
    const bool by_class = &trie != &p_.vocab.trie();
    for (uint32_t i = begin; i < end;) {
      const TrieNode& node = trie.nodes[i];
      const std::size_t d = node.depth;
      const std::size_t up = d - 1;
      close_level(up);
      escaped_[d] = static_cast<char>((up > 0 && escaped_[up]) || (closure_[up].escapes && p_.follow.test(node.byte)));
      // Past the limits, the subtree is left to the full check at run time.
      if (!closure_ok_[up] || !stepper_.advance(closure_[up], node.byte, config_[d])) {
        uncertain_subtree(trie, i, node.subtree_end);
        i = node.subtree_end;
        continue;
      }
      config_mark_[d] = arena_.size();
      closed_[d] = 0;
      if (config_[d].empty()) {
        if (escaped_[d]) uncertain_subtree(trie, i, node.subtree_end);
        i = node.subtree_end;
        continue;
      }
      accept(trie, node);
      if (by_class) {
        exact_[d] = static_cast<char>(classes_->sticky.test(node.byte));
        if (!exact_[d] && node.subtree_end > i + 1) {
          close_level(d);
          if (!closure_ok_[d] || !respects_classes(closure_[d])) {
            // Some state here tells bytes of one class apart: below, walk each member's bytes.
            const TokenTrie& bytes = p_.vocab.trie();
            for (uint32_t m = trie.member_begin[i]; m < trie.member_begin[i + 1]; ++m) {
              const uint32_t member = trie.members[m];
              run(bytes, member + 1, bytes.nodes[member].subtree_end);
            }
            i = node.subtree_end;
            continue;
          }
        }
      }
      ++i;
    }
  }

  void close_level(std::size_t level) {
    if (!closed_[level]) {
      arena_.resize(config_mark_[level]);
      closure_ok_[level] = stepper_.close(config_[level], -1, closure_[level]) ? 1 : 0;
      closure_mark_[level] = arena_.size();
      closed_[level] = 1;
    } else {
      arena_.resize(closure_mark_[level]);
    }
  }

  // Accepted tokens of the walked trie are runs of its token order (a node's tokens are consecutive,
  // and so are those of nodes next in preorder); those found under a drop to bytes are listed.
  void accept(const TokenTrie& trie, const TrieNode& node) {
    if (node.tokens_end == node.tokens_begin) return;
    if (&trie != &trie_) {
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) accepted_ids_.push_back(trie.token_ids[t]);
    } else if (!runs_.empty() && runs_.back().second == node.tokens_begin) {
      runs_.back().second = node.tokens_end;
    } else {
      runs_.emplace_back(node.tokens_begin, node.tokens_end);
    }
  }

  // The accepted tokens as a bitmask: from the runs when they are few tokens, else from every token
  // with bytes less the gaps between runs (inside a free string nearly every token is accepted).
  std::vector<uint32_t> accepted_bits() const {
    std::size_t in_runs = 0;
    for (const auto& [b, e] : runs_) in_runs += e - b;
    const std::vector<TokenId>& ids = trie_.token_ids;
    auto flip = [](std::vector<uint32_t>& bits, TokenId id) { bits[static_cast<std::size_t>(id) / 32] ^= 1u << (id % 32); };
    std::vector<uint32_t> bits;
    if (in_runs * 2 <= ids.size()) {
      bits.assign(p_.vocab.mask_words(), 0u);
      for (const auto& [b, e] : runs_) {
        for (uint32_t t = b; t < e; ++t) flip(bits, ids[t]);
      }
    } else {
      bits = p_.vocab.trie_tokens_mask();
      uint32_t from = 0;
      for (const auto& [b, e] : runs_) {
        for (uint32_t t = from; t < b; ++t) flip(bits, ids[t]);
        from = e;
      }
      for (auto t = static_cast<std::size_t>(from); t < ids.size(); ++t) flip(bits, ids[t]);
    }
    for (const TokenId id : accepted_ids_) bits[static_cast<std::size_t>(id) / 32] |= 1u << (id % 32);
    return bits;
  }

  void uncertain_subtree(const TokenTrie& trie, uint32_t from, uint32_t to) {
    for (uint32_t j = from; j < to; ++j) {
      for (uint32_t t = trie.nodes[j].tokens_begin; t < trie.nodes[j].tokens_end; ++t) {
        out_->uncertain.push_back(trie.token_ids[t]);
      }
    }
  }

  // Every state of the closure steps all bytes of a class to the same place (memoized per state).
  bool respects_classes(const Closure& closure) {
    for (const int32_t id : closure.nodes) {
      const StackNode& n = arena_[static_cast<std::size_t>(id)];
      std::vector<int8_t>& memo = respects_[static_cast<std::size_t>(n.rule)];
      if (memo.empty()) memo.assign(p_.grammar.rule(n.rule).states.size(), -1);
      int8_t& known = memo[static_cast<std::size_t>(n.state)];
      if (known < 0) known = state_respects(stepper_.state_of(id)) ? 1 : 0;
      if (known == 0) return false;
    }
    return true;
  }

  bool state_respects(const RuleState& st) const {
    std::array<int32_t, 256> of_class;
    of_class.fill(INT32_MIN);
    for (unsigned b = 0; b < 256; ++b) {
      const int32_t to = st.step(static_cast<uint8_t>(b));
      int32_t& seen = of_class[classes_->of[b]];
      if (seen == INT32_MIN) {
        seen = to;
      } else if (seen != to) {
        return false;
      }
    }
    return true;
  }

  const PositionContext& p_;
  const TokenTrie& trie_;
  const ByteClasses* classes_;
  std::vector<StackNode> arena_;
  Stepper stepper_;
  std::vector<std::vector<int32_t>> config_;
  std::vector<Closure> closure_;
  std::vector<char> closed_;
  std::vector<char> closure_ok_;
  std::vector<char> escaped_;
  std::vector<char> exact_;  // class walks: the node's byte is sticky, its children are exact bytes
  std::vector<std::size_t> config_mark_;
  std::vector<std::size_t> closure_mark_;
  std::vector<std::vector<int8_t>> respects_;  // [rule][state]: 1 yes, 0 no, -1 not known yet
  std::vector<std::pair<uint32_t, uint32_t>> runs_;
  std::vector<TokenId> accepted_ids_;
  std::shared_ptr<PositionClasses> out_;
};

}  // namespace

int64_t walk_size(const PositionContext& p, int64_t enough) {
  std::vector<StackNode> arena{StackNode{.rule = p.rule, .state = p.state, .parent = kSentinel, .depth = 0}};
  Stepper stepper(p.grammar, p.first, arena, kClassifyMaxNodes, kClassifyMaxDepth);
  Closure root;
  const std::vector<int32_t> start{0};
  if (!stepper.close(start, -1, root)) return 0;
  const std::size_t mark = arena.size();
  const std::vector<TrieNode>& nodes = p.vocab.trie().nodes;
  // Depth 1: the subtrees of the first bytes taken (or that may leave the rule).
  std::vector<uint32_t> alive;
  int64_t size = 0;
  std::vector<int32_t> next;
  for (uint32_t j = 0; j < nodes.size(); j = nodes[j].subtree_end) {
    const uint8_t byte = nodes[j].byte;
    const bool taken = stepper.advance(root, byte, next) && !next.empty();
    arena.resize(mark);
    if (taken) alive.push_back(j);
    if (taken || (root.escapes && p.follow.test(byte))) size += nodes[j].subtree_end - j;
  }
  if (size < enough || size >= 8 * enough) return size;
  // Depth 2, for positions that take a few first bytes (an enum): most of their subtrees die at once.
  size = 0;
  Closure after;
  for (const uint32_t j : alive) {
    ++size;
    if (!stepper.advance(root, nodes[j].byte, next) || !stepper.close(next, -1, after)) return INT64_MAX;
    const std::size_t inner = arena.size();
    for (uint32_t k = j + 1; k < nodes[j].subtree_end; k = nodes[k].subtree_end) {
      const bool taken = stepper.advance(after, nodes[k].byte, next) && !next.empty();
      arena.resize(inner);
      if (taken || root.escapes || (after.escapes && p.follow.test(nodes[k].byte))) size += nodes[k].subtree_end - k;
    }
    arena.resize(mark);
    if (size >= enough) return size;
  }
  return size;
}

ByteClasses position_byte_classes(const PositionContext& p) {
  const Grammar& g = p.grammar;
  std::bitset<257> cut;  // a class starts at byte b when some range starts at b or ends at b - 1
  std::bitset<256> sticky;
  std::vector<std::vector<int8_t>> seen(g.rules().size());  // 1 visited, -1 left out
  struct Visit {
    int32_t rule, state, distance;
  };
  std::vector<Visit> todo;
  auto splits = [&](const RuleState& st) {
    return std::any_of(st.bytes.begin(), st.bytes.end(),
                       [&](const ByteEdge& e) { return !cut.test(e.lo) || !cut.test(e.hi + std::size_t{1}); });
  };
  // `entry`: the edge it is reached on (null: the position, a callee or a return).
  auto visit = [&](int32_t rule, int32_t state, const ByteEdge* entry, int32_t distance) {
    std::vector<int8_t>& s = seen[static_cast<std::size_t>(rule)];
    if (s.empty()) s.assign(g.rule(rule).states.size(), 0);
    int8_t& mark = s[static_cast<std::size_t>(state)];
    if (mark == 1 || distance > kClassesLookahead) return;
    const RuleState& st = g.rule(rule).states[static_cast<std::size_t>(state)];
    if (entry != nullptr && entry->hi - entry->lo < kMaxStickyRange && splits(st)) {
      for (unsigned b = entry->lo; b <= entry->hi; ++b) sticky.set(b);
      mark = -1;
      return;
    }
    mark = 1;
    for (const ByteEdge& e : st.bytes) {
      cut.set(e.lo);
      cut.set(static_cast<std::size_t>(e.hi) + 1);
    }
    todo.push_back(Visit{rule, state, distance});
  };
  visit(p.rule, p.state, nullptr, 0);
  // Breadth first, so that the states nearest the position set the classes.
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const Visit v = todo[i];
    const RuleState& st = g.rule(v.rule).states[static_cast<std::size_t>(v.state)];
    for (const CallEdge& c : st.calls) {
      visit(c.rule, 0, nullptr, v.distance);
      visit(v.rule, c.next, nullptr, v.distance);
    }
    for (const ByteEdge& e : st.bytes) visit(v.rule, e.next, &e, v.distance + 1);
  }
  for (unsigned b = 0; b < 256; ++b) {
    if (sticky.test(b)) {  // a class of its own
      cut.set(b);
      cut.set(b + 1);
    }
  }
  ByteClasses out;
  out.sticky = sticky;
  std::array<int16_t, 512> id_of_key;
  id_of_key.fill(-1);
  int32_t segment = 0;
  int32_t count = 0;
  for (std::size_t b = 0; b < 256; ++b) {
    if (b > 0 && cut.test(b)) ++segment;
    int16_t& id = id_of_key[static_cast<std::size_t>(segment * 2 + (p.follow.test(b) ? 1 : 0))];
    if (id < 0) id = static_cast<int16_t>(count++);
    out.of[b] = static_cast<uint8_t>(id);
  }
  out.count = count;
  return out;
}

std::shared_ptr<const PositionClasses> classify(const PositionContext& p, const TokenTrie* class_trie,
                                                const ByteClasses* classes, bool* by_class) {
  *by_class = false;
  if (class_trie != nullptr && classes != nullptr) {
    Walk walk(p, *class_trie, classes);
    if (walk.start_respects_classes()) {
      *by_class = true;
      walk.run();
      return walk.finish();
    }
  }
  Walk walk(p, p.vocab.trie(), nullptr);
  walk.run();
  return walk.finish();
}

}  // namespace llaisys::grammar::detail
