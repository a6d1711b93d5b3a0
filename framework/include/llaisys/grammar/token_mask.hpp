#pragma once
// Token masks: which tokens of a vocabulary may come next under a grammar.
//
// How (the idea xgrammar calls an adaptive token mask cache): a parse is a set of stacks of
// automaton positions (rule, state). For one position, most tokens are decided by the position alone:
// accepted when some path consumes all their bytes without leaving the position's rule, rejected when
// every path dies inside it. Only tokens that may run past the rule's end depend on the stack below
// ("uncertain"). PositionClasses holds that split, computed once per position by walking the
// vocabulary trie and cached per vocabulary (so two grammars with the same string rule share it).
// A mask is then the union of the accepted sets of the parse's top positions plus the uncertain
// tokens checked against the whole stacks, with EOS allowed exactly when the grammar can end.
//
// Threads: CompiledGrammar is shared and thread-safe; a GrammarMatcher belongs to one sequence.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/token_vocabulary.hpp"

namespace llaisys::grammar {

struct PositionClasses {
  std::vector<uint32_t> accepted_words;  // bitmask over the vocabulary when dense; else empty
  std::vector<TokenId> accepted_ids;     // when sparse (fewer than vocab / 32)
  std::vector<TokenId> uncertain;        // in trie order (sorted by bytes)
  std::size_t bytes() const {
    return accepted_words.size() * 4 + (accepted_ids.size() + uncertain.size()) * sizeof(TokenId);
  }
};

// How positions are classified. A position whose walk would visit at least `class_trie_min_nodes`
// nodes of the byte trie (inside a free string: most of the vocabulary) walks the class trie of its
// position's byte classes instead, when it tells at most `class_trie_max_classes` classes apart.
// Both walks give the same classes (tests compare them); only the time differs.
struct MaskOptions {
  int64_t class_trie_min_nodes = 8192;
  int32_t class_trie_max_classes = 64;
};

// Internal automaton facts the matcher needs (first bytes per rule), computed once.
class CompiledGrammar {
 public:
  static std::shared_ptr<const CompiledGrammar> create(std::shared_ptr<const Grammar> grammar,
                                                       std::shared_ptr<const TokenVocabulary> vocab,
                                                       const MaskOptions& options = {});
  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  // The bytes that can start a non-empty match of each rule.
  const std::vector<std::bitset<256>>& first_bytes() const { return first_; }
  // The bytes that can come right after a match of each rule, over all its call sites (an
  // over-approximation: a token that leaves the rule on another byte is rejected without its stack).
  const std::vector<std::bitset<256>>& follow_bytes() const { return follow_; }
  // The token classes of position (rule, state): computed on first use, then shared.
  std::shared_ptr<const PositionClasses> classes(int32_t rule, int32_t state) const;
  // Computes every position's classes now (to move the cost to compile time); returns how many.
  int64_t precompute_all() const;
  // Positions this grammar classified itself (not found in the vocabulary's cache), and how many of
  // those walked a class trie.
  struct ClassifyStats {
    int64_t positions = 0;
    int64_t class_walks = 0;
  };
  ClassifyStats classify_stats() const;

 private:
  CompiledGrammar() = default;
  MaskOptions options_;
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<std::bitset<256>> first_;
  std::vector<std::bitset<256>> follow_;
  mutable std::mutex mutex_;
  mutable std::vector<uint64_t> fingerprints_;  // per rule; 0: not computed yet
  mutable std::vector<std::vector<std::shared_ptr<const PositionClasses>>> classes_;  // [rule][state]
  mutable ClassifyStats stats_;
};

struct MatcherLimits {
  int32_t max_parses = 4096;          // stacks alive at once (an ambiguous grammar's bound)
  int32_t max_stack_depth = 1024;     // nesting (rules inside rules)
};

// One sequence's position in a grammar.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherLimits& limits = {});
  ~GrammarMatcher();
  // One parse per matcher: movable, not copyable (a copy would share the parse).
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
  GrammarMatcher(const GrammarMatcher&) = delete;
  GrammarMatcher& operator=(const GrammarMatcher&) = delete;
  // An independent matcher at the same position (speculative decoding advances it over drafts to
  // make the masks of the rows after them, leaving this one where the accepted tokens put it).
  GrammarMatcher clone() const;

  // Writes the allowed-token bitmask of the next token into mask (its first vocab().mask_words()
  // words are set; words past them are zeroed). EOS ids are allowed exactly when can_end().
  void fill_mask(std::span<uint32_t> mask);
  // Advances on `token`. An EOS id is accepted when can_end(); a token the grammar does not allow
  // returns false and leaves the matcher as it was; so does passing MatcherLimits (then
  // limit_reached() is true).
  bool accept(TokenId token);
  // Advances on raw bytes (tests, prefilled text); same contract as accept().
  bool accept_bytes(std::string_view bytes);
  bool can_end() const;
  // Nothing but the end may follow (every parse is complete and can take no further byte).
  bool is_terminated() const;
  bool limit_reached() const { return limit_reached_; }
  const CompiledGrammar& compiled() const { return *grammar_; }

  struct Stats {
    int64_t num_masks = 0;
    int64_t num_uncertain_checked = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Impl;
  std::shared_ptr<const CompiledGrammar> grammar_;
  MatcherLimits limits_;
  std::unique_ptr<Impl> impl_;
  bool limit_reached_ = false;
  Stats stats_;
};

}  // namespace llaisys::grammar
