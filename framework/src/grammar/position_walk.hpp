#pragma once
// Classifying one position (rule, state) against a vocabulary (token_mask.hpp's PositionClasses): a
// preorder walk of the token trie from the position with an unknown context below it. Internal to
// the grammar library; CompiledGrammar decides which trie a position walks.

#include <bitset>
#include <cstdint>
#include <memory>
#include <vector>

#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/grammar/token_vocabulary.hpp"

namespace llaisys::grammar::detail {

struct PositionContext {
  const Grammar& grammar;
  const std::vector<std::bitset<256>>& first;  // first bytes per rule
  const std::bitset<256>& follow;              // the bytes that may follow the position's rule
  const TokenVocabulary& vocab;
  int32_t rule = 0;
  int32_t state = 0;
};

// About how many nodes of the byte trie a walk from the position visits: the subtrees of the first
// bytes it takes (or may leave its rule on), or when that is between `enough` and 8 x `enough`, of
// the first two bytes. Returns early once the answer is `enough` or more. Cheap: a step per byte
// of the first one or two trie levels.
int64_t walk_size(const PositionContext& p, int64_t enough);

// The bytes the position's likely paths tell apart: the states reached from it through calls and
// edges of two bytes or more (a JSON string's characters, not what follows a backslash), split by the
// follow set. A class trie walk is exact whatever this returns (states that tell a class apart walk
// bytes); it is fast when these classes are few.
ByteClasses position_byte_classes(const PositionContext& p);

// The position's classes. With `class_trie` (built for `classes`), the walk goes by class and drops to
// the byte trie under any trie node whose configuration treats bytes of one class differently (or
// walks the byte trie when the position itself does); `by_class` says whether it went by class.
std::shared_ptr<const PositionClasses> classify(const PositionContext& p, const TokenTrie* class_trie,
                                                const ByteClasses* classes, bool* by_class);

}  // namespace llaisys::grammar::detail
