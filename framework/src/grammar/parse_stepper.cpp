#include "parse_stepper.hpp"

namespace llaisys::grammar::detail {
namespace {

constexpr int32_t kEmpty = INT32_MIN;

std::size_t hash3(int32_t a, int32_t b, int32_t c) {
  uint64_t h = static_cast<uint32_t>(a) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint32_t>(b) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint32_t>(c) * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace

void KeyTable::reset(std::size_t expected) {
  num_small_ = 0;
  hashed_ = false;
  if (expected > kSmall) {
    hashed_ = true;
    std::size_t size = 16;
    while (size < expected * 2) size <<= 1;
    slots_.assign(size, Slot{kEmpty, 0, 0, 0});
    used_ = 0;
  }
}

void KeyTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{kEmpty, 0, 0, 0});
  used_ = 0;
  for (const Slot& s : old) {
    if (s.a != kEmpty) hashed_find_or_insert(s.a, s.b, s.c, s.id);
  }
}

int32_t KeyTable::find_or_insert(int32_t a, int32_t b, int32_t c, int32_t id) {
  if (!hashed_) {
    for (std::size_t i = 0; i < num_small_; ++i) {
      const Slot& s = small_[i];
      if (s.a == a && s.b == b && s.c == c) return s.id;
    }
    if (num_small_ < kSmall) {
      small_[num_small_++] = Slot{a, b, c, id};
      return -1;
    }
    hashed_ = true;  // move the small keys into the table
    slots_.assign(64, Slot{kEmpty, 0, 0, 0});
    used_ = 0;
    for (std::size_t i = 0; i < num_small_; ++i) hashed_find_or_insert(small_[i].a, small_[i].b, small_[i].c, small_[i].id);
  }
  return hashed_find_or_insert(a, b, c, id);
}

int32_t KeyTable::hashed_find_or_insert(int32_t a, int32_t b, int32_t c, int32_t id) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash3(a, b, c) & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.a == kEmpty) {
      s = Slot{a, b, c, id};
      ++used_;
      return -1;
    }
    if (s.a == a && s.b == b && s.c == c) return s.id;
  }
}

int32_t Stepper::intern(const StackNode& key) {
  const auto next_id = static_cast<int32_t>(arena_.size());
  const int32_t found = intern_.find_or_insert(key.rule, key.state, key.parent, next_id);
  if (found >= 0) return found;
  arena_.push_back(key);
  return next_id;
}

bool Stepper::add_member(int32_t id, Closure& out) {
  if (members_.find_or_insert(id, 0, 0, id) >= 0) return true;
  out.nodes.push_back(id);
  return static_cast<int32_t>(out.nodes.size()) <= max_nodes_;
}

bool Stepper::close(std::span<const int32_t> config, int32_t byte, Closure& out) {
  out.nodes.clear();
  out.can_end = false;
  out.escapes = false;
  if (config.size() == 1) {  // the common case inside strings and numbers: nothing to push or pop
    const StackNode& n = arena_[static_cast<std::size_t>(config[0])];
    const RuleState& st = grammar_.rule(n.rule).states[static_cast<std::size_t>(n.state)];
    if (st.calls.empty() && !st.final) {
      out.nodes.push_back(config[0]);
      return true;
    }
  }
  intern_.reset(config.size() * 4);
  members_.reset(config.size() * 4);
  for (const int32_t id : config) {
    const StackNode& n = arena_[static_cast<std::size_t>(id)];
    intern_.find_or_insert(n.rule, n.state, n.parent, id);
    if (!add_member(id, out)) return false;
  }
  for (std::size_t i = 0; i < out.nodes.size(); ++i) {
    const StackNode n = arena_[static_cast<std::size_t>(out.nodes[i])];
    const RuleState& st = grammar_.rule(n.rule).states[static_cast<std::size_t>(n.state)];
    if (st.final) {
      if (n.parent == kBottom) {
        out.can_end = true;
      } else if (n.parent == kSentinel) {
        out.escapes = true;
      } else if (!add_member(n.parent, out)) {
        return false;
      }
    }
    for (const CallEdge& call : st.calls) {
      if (byte >= 0 && !first_[static_cast<std::size_t>(call.rule)].test(static_cast<std::size_t>(byte)) &&
          !grammar_.rule(call.rule).nullable) {
        continue;
      }
      if (n.depth + 1 > max_depth_) return false;
      const int32_t ret = intern(StackNode{.rule = n.rule, .state = call.next, .parent = n.parent, .depth = n.depth});
      const int32_t child = intern(StackNode{.rule = call.rule, .state = 0, .parent = ret, .depth = n.depth + 1});
      if (!add_member(child, out)) return false;
    }
  }
  return true;
}

bool Stepper::advance(const Closure& closure, uint8_t byte, std::vector<int32_t>& next) {
  next.clear();
  if (closure.nodes.size() == 1) {
    const StackNode n = arena_[static_cast<std::size_t>(closure.nodes[0])];
    const int32_t to = grammar_.rule(n.rule).states[static_cast<std::size_t>(n.state)].step(byte);
    if (to >= 0) {
      next.push_back(static_cast<int32_t>(arena_.size()));
      arena_.push_back(StackNode{.rule = n.rule, .state = to, .parent = n.parent, .depth = n.depth});
    }
    return true;
  }
  intern_.reset(closure.nodes.size());
  for (const int32_t id : closure.nodes) {
    const StackNode n = arena_[static_cast<std::size_t>(id)];
    const int32_t to = grammar_.rule(n.rule).states[static_cast<std::size_t>(n.state)].step(byte);
    if (to < 0) continue;
    const auto next_id = static_cast<int32_t>(arena_.size());
    const int32_t found = intern_.find_or_insert(n.rule, to, n.parent, next_id);
    if (found >= 0) continue;
    arena_.push_back(StackNode{.rule = n.rule, .state = to, .parent = n.parent, .depth = n.depth});
    next.push_back(next_id);
  }
  return static_cast<int32_t>(next.size()) <= max_nodes_;
}

}  // namespace llaisys::grammar::detail
