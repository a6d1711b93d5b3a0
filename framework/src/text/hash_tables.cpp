#include "hash_tables.hpp"

namespace llaisys::text {

void StringIdMap::reserve(std::size_t count) {
  std::size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  const std::size_t mask = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.value < 0) continue;
    std::size_t i = slot.hash & mask;
    while (slots_[i].value >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void StringIdMap::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

bool StringIdMap::insert(std::string_view key, int32_t value) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t hash = hash_of(key);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  for (;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.value < 0) break;
    if (slot.hash == hash && std::string_view(arena_).substr(slot.offset, slot.length) == key) return false;
  }
  slots_[i] = Slot{.hash = hash,
                   .offset = static_cast<uint32_t>(arena_.size()),
                   .length = static_cast<uint32_t>(key.size()),
                   .value = value};
  arena_.append(key);
  ++size_;
  return true;
}

int32_t StringIdMap::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t hash = hash_of(key);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.value < 0) return -1;
    if (slot.hash == hash && slot.length == key.size() &&
        std::string_view(arena_).substr(slot.offset, slot.length) == key) {
      return slot.value;
    }
  }
}

void PairMap::reserve(std::size_t count) {
  std::size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  const std::size_t mask = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.merge.rank < 0) continue;
    std::size_t i = mix(slot.key) & mask;
    while (slots_[i].merge.rank >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void PairMap::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void PairMap::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = mix(key) & mask;
  for (;; i = (i + 1) & mask) {
    if (slots_[i].merge.rank < 0) break;
    if (slots_[i].key == key) return;
  }
  slots_[i] = Slot{.key = key, .merge = merge};
  ++size_;
}

}  // namespace llaisys::text
