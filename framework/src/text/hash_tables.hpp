#pragma once
// Two flat open-addressing hash tables for the tokenizer's hot paths: vocabulary strings -> ids and
// merge pairs -> (rank, merged id). Both are built once and then only read, so lookups need no locks.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace llaisys::text {

// String -> int32 value. Keys live in one arena; probing is linear over a power-of-two table.
class StringIdMap {
 public:
  void reserve(std::size_t count);
  // Returns false (and changes nothing) when the key is already present.
  bool insert(std::string_view key, int32_t value);
  // The value, or -1 when absent.
  int32_t find(std::string_view key) const;
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t value = -1;  // -1: empty
  };
  static uint64_t hash_of(std::string_view key) { return std::hash<std::string_view>{}(key) | 1; }
  void grow();
  std::vector<Slot> slots_;
  std::string arena_;
  std::size_t size_ = 0;
};

// (left id, right id) -> (rank, merged id) for BPE merges.
class PairMap {
 public:
  struct Merge {
    int32_t rank = -1;  // -1: no merge for this pair
    int32_t merged_id = -1;
  };
  void reserve(std::size_t count);
  // Keeps the first (lowest-rank) entry when a pair repeats.
  void insert(int32_t left, int32_t right, Merge merge);
  Merge find(int32_t left, int32_t right) const {
    if (slots_.empty()) return {};
    const uint64_t key = pack(left, right);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.merge.rank < 0) return {};
      if (slot.key == key) return slot.merge;
    }
  }
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    Merge merge;
  };
  static uint64_t pack(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  void grow();
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace llaisys::text
