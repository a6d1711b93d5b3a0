#pragma once
// The parse machinery shared by position classification and the matcher: stacks as parent-linked
// nodes in an arena (a configuration is a list of node ids, one per stack top), closed under calls
// (push the callee) and returns (pop to the parent, whose state is already the return state), then
// advanced one byte at a time. Internal to the grammar library.

#include <cstdint>
#include <span>
#include <vector>

#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar::detail {

inline constexpr int32_t kBottom = -1;    // the root's parent: ending here ends the grammar
inline constexpr int32_t kSentinel = -2;  // classification: an unknown context below the position

struct StackNode {
  int32_t rule = 0;
  int32_t state = 0;
  int32_t parent = kBottom;
  int32_t depth = 0;  // nodes below this one
};

// A configuration closed under calls and returns.
struct Closure {
  std::vector<int32_t> nodes;
  bool can_end = false;   // a bottom node in a final state: the grammar may end here
  bool escapes = false;   // a sentinel child in a final state: the position's rule may return
};

// A map (a, b, c) -> id, cleared per use. Configurations are mostly a node or two, so up to kSmall
// keys live in an array searched linearly (clearing is O(1)); past that, open addressing.
class KeyTable {
 public:
  void reset(std::size_t expected);
  // The id stored for the key, or -1 after storing `id` for it.
  int32_t find_or_insert(int32_t a, int32_t b, int32_t c, int32_t id);

 private:
  struct Slot {
    int32_t a, b, c, id;
  };
  static constexpr std::size_t kSmall = 8;
  Slot small_[kSmall];
  std::size_t num_small_ = 0;
  bool hashed_ = false;
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
  int32_t hashed_find_or_insert(int32_t a, int32_t b, int32_t c, int32_t id);
  void grow();
};

class Stepper {
 public:
  Stepper(const Grammar& grammar, const std::vector<std::bitset<256>>& first_bytes, std::vector<StackNode>& arena,
          int32_t max_nodes_per_step, int32_t max_depth)
      : grammar_(grammar), first_(first_bytes), arena_(arena), max_nodes_(max_nodes_per_step), max_depth_(max_depth) {}

  // Closes `config`. With `byte` >= 0, only callees that can start with it (or are nullable) are
  // pushed; with -1 every callee is (a closure shared by all next bytes). False when the step passes
  // the node or depth limit.
  bool close(std::span<const int32_t> config, int32_t byte, Closure& out);
  // The configuration after `byte` from a closure (deduplicated).
  bool advance(const Closure& closure, uint8_t byte, std::vector<int32_t>& next);

  const RuleState& state_of(int32_t node) const {
    const StackNode& n = arena_[static_cast<std::size_t>(node)];
    return grammar_.rule(n.rule).states[static_cast<std::size_t>(n.state)];
  }

 private:
  int32_t intern(const StackNode& key);  // the node with these contents, made when new
  bool add_member(int32_t id, Closure& out);

  const Grammar& grammar_;
  const std::vector<std::bitset<256>>& first_;
  std::vector<StackNode>& arena_;
  int32_t max_nodes_;
  int32_t max_depth_;
  KeyTable intern_;   // contents -> node id, for this step
  KeyTable members_;  // node ids in the closure
  std::vector<int32_t> work_;
};

}  // namespace llaisys::grammar::detail
