// GrammarMatcher: a sequence's parse (a configuration of stack tops in its own arena), its masks
// (accepted sets of the top positions, then the uncertain tokens run against the real stacks, sharing
// work between tokens with a common prefix) and its advance on the sampled token.

#include <algorithm>

#include "llaisys/grammar/token_mask.hpp"
#include "parse_stepper.hpp"

namespace llaisys::grammar {

using detail::Closure;
using detail::kBottom;
using detail::StackNode;
using detail::Stepper;

namespace {
// Past this many nodes the arena is compacted to the live stacks.
constexpr std::size_t kCompactAt = std::size_t{1} << 20;
}  // namespace

struct GrammarMatcher::Impl {
  Impl(const CompiledGrammar& g, const MatcherLimits& limits)
      : stepper(g.grammar(), g.first_bytes(), arena, limits.max_parses, limits.max_stack_depth) {
    arena.push_back(StackNode{.rule = g.grammar().root(), .state = 0, .parent = kBottom, .depth = 0});
    config = {0};
  }

  std::vector<StackNode> arena;
  Stepper stepper;
  std::vector<int32_t> config;  // the current parse (unclosed)
  Closure closure;              // of config, every callee pushed
  bool closure_valid = false;
  bool closure_ok = true;

  // Scratch for masks.
  std::vector<std::vector<int32_t>> level_config;
  std::vector<Closure> level_closure;
  std::vector<int32_t> candidates;

  const Closure* current_closure() {
    if (!closure_valid) {
      closure_ok = stepper.close(config, -1, closure);
      closure_valid = true;
    }
    return closure_ok ? &closure : nullptr;
  }

  // Keeps only the nodes the configuration reaches (parents), renumbered.
  void compact() {
    std::vector<int32_t> remap(arena.size(), -1);
    std::vector<StackNode> fresh;
    auto keep = [&](auto&& self, int32_t id) -> int32_t {
      if (id < 0) return id;
      int32_t& slot = remap[static_cast<std::size_t>(id)];
      if (slot >= 0) return slot;
      StackNode n = arena[static_cast<std::size_t>(id)];
      n.parent = self(self, n.parent);
      slot = static_cast<int32_t>(fresh.size());
      fresh.push_back(n);
      return slot;
    };
    for (int32_t& id : config) id = keep(keep, id);
    arena = std::move(fresh);
    closure_valid = false;
  }
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), limits_(limits), impl_(std::make_unique<Impl>(*grammar_, limits)) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

GrammarMatcher GrammarMatcher::clone() const {
  GrammarMatcher copy(grammar_, limits_);
  copy.impl_->arena = impl_->arena;  // the parse: its stack nodes and the configuration over them
  copy.impl_->config = impl_->config;
  copy.limit_reached_ = limit_reached_;
  return copy;
}

bool GrammarMatcher::can_end() const {
  Impl& m = *impl_;
  const Closure* c = m.current_closure();
  return c != nullptr && c->can_end;
}

bool GrammarMatcher::is_terminated() const {
  Impl& m = *impl_;
  const Closure* c = m.current_closure();
  if (c == nullptr) return false;
  for (const int32_t id : c->nodes) {
    if (!m.stepper.state_of(id).bytes.empty()) return false;
  }
  return true;
}

void GrammarMatcher::fill_mask(std::span<uint32_t> mask) {
  Impl& m = *impl_;
  const TokenVocabulary& vocab = grammar_->vocab();
  std::fill(mask.begin(), mask.end(), 0u);
  const std::size_t words = std::min(mask.size(), vocab.mask_words());
  ++stats_.num_masks;
  const Closure* root = m.current_closure();
  if (root == nullptr) {
    limit_reached_ = true;
    return;
  }
  auto set = [&](TokenId id) {
    const auto u = static_cast<std::size_t>(id);
    if (u / 32 < words) mask[u / 32] |= 1u << (u % 32);
  };
  auto is_set = [&](TokenId id) {
    const auto u = static_cast<std::size_t>(id);
    return u / 32 < words && ((mask[u / 32] >> (u % 32)) & 1u) != 0;
  };
  // Accepted sets of the configuration's positions (each position's classes cover its pushes).
  m.candidates.clear();
  std::size_t num_lists = 0;
  for (const int32_t id : m.config) {
    const StackNode& n = m.arena[static_cast<std::size_t>(id)];
    const std::shared_ptr<const PositionClasses> c = grammar_->classes(n.rule, n.state);
    if (!c->accepted_words.empty()) {
      for (std::size_t w = 0; w < words; ++w) mask[w] |= c->accepted_words[w];
    } else {
      for (const TokenId t : c->accepted_ids) set(t);
    }
    if (!c->uncertain.empty()) {
      m.candidates.insert(m.candidates.end(), c->uncertain.begin(), c->uncertain.end());
      ++num_lists;
    }
  }
  if (num_lists > 1) {  // each list is in trie order; merged they must be too, without repeats
    std::sort(m.candidates.begin(), m.candidates.end(),
              [&](TokenId a, TokenId b) { return vocab.trie_rank(a) < vocab.trie_rank(b); });
    m.candidates.erase(std::unique(m.candidates.begin(), m.candidates.end()), m.candidates.end());
  }
  // Uncertain tokens against the whole stacks. Level L: the configuration after the first L bytes of
  // the current token (and its closure); consecutive tokens (trie order) share the levels of their
  // common prefix, and a prefix found dead is skipped for every token that starts with it.
  const std::size_t arena_mark = m.arena.size();
  const std::size_t levels = static_cast<std::size_t>(vocab.max_depth()) + 1;
  if (m.level_config.size() < levels) {
    m.level_config.resize(levels);
    m.level_closure.resize(levels);
  }
  m.level_closure[0] = *root;
  std::size_t ready = 1;           // levels [0, ready) hold closures for the previous token's prefix
  std::size_t dead_at = SIZE_MAX;  // the previous token's first dead_at bytes lead nowhere
  const std::string* previous = nullptr;
  for (const TokenId t : m.candidates) {
    if (is_set(t)) continue;
    const std::string& piece = vocab.piece(t);
    std::size_t common = 0;
    if (previous != nullptr) {
      const std::size_t limit = std::min(previous->size(), piece.size());
      while (common < limit && (*previous)[common] == piece[common]) ++common;
    }
    previous = &piece;
    if (dead_at != SIZE_MAX && common >= dead_at) continue;
    dead_at = SIZE_MAX;
    ready = std::min(ready, common + 1);
    ++stats_.num_uncertain_checked;
    bool alive = true;
    for (std::size_t d = common; d < piece.size(); ++d) {
      if (d >= ready) {
        if (!m.stepper.close(m.level_config[d], -1, m.level_closure[d])) {
          limit_reached_ = true;
          alive = false;
          dead_at = d;
          break;
        }
        ready = d + 1;
      }
      if (!m.stepper.advance(m.level_closure[d], static_cast<uint8_t>(piece[d]), m.level_config[d + 1]) ||
          m.level_config[d + 1].empty()) {
        alive = false;
        dead_at = d + 1;
        break;
      }
    }
    if (alive) set(t);
  }
  m.arena.resize(arena_mark);
  if (root->can_end) {
    for (const TokenId e : vocab.eos_ids()) set(e);
  }
}

bool GrammarMatcher::accept(TokenId token) {
  const TokenVocabulary& vocab = grammar_->vocab();
  if (token < 0 || token >= vocab.vocab_size()) return false;
  if (std::binary_search(vocab.eos_ids().begin(), vocab.eos_ids().end(), token)) return can_end();
  const std::string& piece = vocab.piece(token);
  if (piece.empty()) return false;
  return accept_bytes(piece);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  Impl& m = *impl_;
  const std::size_t mark = m.arena.size();
  std::vector<int32_t> current = m.config;
  std::vector<int32_t> next;
  Closure closure;
  for (const char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (!m.stepper.close(current, b, closure) || !m.stepper.advance(closure, b, next)) {
      limit_reached_ = true;
      m.arena.resize(mark);
      return false;
    }
    if (next.empty()) {
      m.arena.resize(mark);
      return false;
    }
    std::swap(current, next);
  }
  m.config = std::move(current);
  m.closure_valid = false;
  if (m.arena.size() > kCompactAt) m.compact();
  return true;
}

}  // namespace llaisys::grammar
