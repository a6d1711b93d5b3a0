#pragma once
// PagedKVStore: the KVStore of the engine: a BlockPool, per-sequence block tables, and (optionally)
// a RadixCache over computed blocks. See kv_store.hpp for the contract it satisfies.
//
// A sequence's table is [cached prefix | private blocks]: the first num_cached_blocks entries are
// the blocks of the radix path it locks (shared, read-only, full); the rest are its own, possibly
// shared with forked siblings (ref counts), of which only the last may be partially filled.
//
// Sliding window W (config.sliding_window > 0), after release_outside_window():
// [kNoBlock x num_released_blocks | private blocks]. The rules that keep the radix tree hole-free:
//  - commit() caches at most the first max_cached_blocks() = ceil(W / block_size) blocks, and
//    match_prefix() reuses at most that many: prefixes shared within the first window are reused,
//    longer shared prefixes are recomputed.
//  - The cached prefix is given back as a whole (unlock, drop its references) once all of it lies
//    before the window; private blocks one by one after that. A block shared with a fork sibling
//    returns to the pool when its last holder lets go.
//  - Once a sequence has given back a block it holds no cached prefix and never commits again.
// So a long generation holds at most about two windows plus a block (the cached prefix plus a
// window), and about one window once it is past 2W.

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llaisys/kv/block_pool.hpp"
#include "llaisys/kv/kv_store.hpp"
#include "llaisys/kv/radix_cache.hpp"

namespace llaisys {

struct KVStoreConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  bool enable_prefix_cache = true;
  int32_t sliding_window = 0;  // > 0: every layer attends the last N positions only (ModelInfo)
};

class PagedKVStore {
 public:
  // Fails (invalid_argument) unless num_blocks > 0, block_size > 0 and sliding_window >= 0.
  static Result<std::unique_ptr<PagedKVStore>> create(const KVStoreConfig& config);
  explicit PagedKVStore(const KVStoreConfig& config);  // prefer create(): this one trusts config

  int32_t block_size() const { return config_.block_size; }
  int32_t num_blocks() const { return pool_->num_blocks(); }
  int32_t num_free_blocks() const { return pool_->num_free(); }
  int32_t num_available_blocks() const;  // free + evictable
  bool prefix_cache_enabled() const { return cache_ != nullptr; }
  int32_t sliding_window() const { return config_.sliding_window; }
  // The most leading blocks of a sequence the prefix cache holds: ceil(W / block_size) with a
  // window, unbounded without.
  int32_t max_cached_blocks() const;
  // Blocks needed to hold n slots.
  int32_t blocks_for(int32_t num_tokens) const;

  bool contains(SeqId seq) const { return seqs_.contains(seq); }
  int32_t match_prefix(SeqId seq, std::span<const TokenId> tokens, std::string_view cache_namespace);
  int32_t peek_prefix(std::span<const TokenId> tokens, std::string_view cache_namespace) const;
  // New blocks append(seq, n) would take, the copy-on-write block included.
  int32_t blocks_needed(SeqId seq, int32_t num_tokens) const;
  bool can_append(SeqId seq, int32_t num_tokens) const;
  Status append(SeqId seq, int32_t num_tokens, std::vector<BlockCopy>& copies);
  // A step (the contract is in kv_store.hpp): every change until commit() is kept, or undone when
  // the Step is destroyed uncommitted. The store must outlive the Step and stay where it is.
  class [[nodiscard]] Step {
   public:
    Step(Step&& other) noexcept : kv_(std::exchange(other.kv_, nullptr)) {}
    Step& operator=(Step&& other) noexcept;  // rolls back the step this one held, if open
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;
    ~Step();
    // Keeps everything the step did; the Step is spent (destroying it does nothing).
    void commit();

   private:
    friend class PagedKVStore;
    explicit Step(PagedKVStore* kv) : kv_(kv) {}
    PagedKVStore* kv_ = nullptr;  // nullptr: committed, rolled back, moved from, or a refused nesting
  };
  // Opens the step. With one already open it is a programming error: the Step returned is spent
  // and the changes belong to the open step.
  [[nodiscard]] Step begin_step();
  bool step_open() const { return step_.has_value(); }
  Status fork(SeqId parent, SeqId child);
  void commit(SeqId seq, std::span<const TokenId> computed_tokens);
  int32_t truncate(SeqId seq, int32_t num_tokens);
  void release(SeqId seq, std::span<const TokenId> computed_tokens);
  void free(SeqId seq);
  // With a window, gives back seq's blocks wholly before the window of position num_computed_tokens
  // (the next token's: blocks ending before num_computed_tokens - W + 1), following the rules above;
  // their entries become kNoBlock. Returns how many entries were given back now. Call it after a
  // successful step with the computed count; nothing happens without a window.
  int32_t release_outside_window(SeqId seq, int32_t num_computed_tokens);

  std::span<const BlockId> block_table(SeqId seq) const;
  int32_t num_tokens(SeqId seq) const;
  // Slots covered by the sequence's cached (shared) prefix.
  int32_t num_cached_tokens(SeqId seq) const;
  // Leading table entries given back by the window (kNoBlock).
  int32_t num_released_blocks(SeqId seq) const;

  KVStats stats() const;
  Status validate() const;

 private:
  struct SeqBlocks {
    std::vector<BlockId> blocks;
    int32_t num_tokens = 0;
    int32_t num_cached_blocks = 0;
    int32_t num_released_blocks = 0;  // leading entries given back (kNoBlock); > 0: no cached prefix
    RadixNode* node = nullptr;  // deepest locked radix node (nullptr without a cache)
  };
  // What an open step must undo.
  struct PendingCopy {
    SeqId seq;
    std::size_t index;   // in the sequence's table
    BlockId original;    // still referenced on the step's behalf
  };
  struct AppendMark {
    SeqId seq;
    int32_t num_tokens_before;  // slots when the step began
  };
  struct StepLog {
    std::vector<AppendMark> appended;  // sequences appended to, in first-append order
    std::vector<PendingCopy> copies;   // copy-on-writes, in order
    std::vector<SeqId> registered;     // sequences that did not exist at the start
  };

  SeqBlocks* find(SeqId seq);
  const SeqBlocks* find(SeqId seq) const;
  // Takes n fresh blocks, evicting cached ones if needed; false when even that is not enough.
  bool take_blocks(int32_t n, std::vector<BlockId>& out);
  // Whether a write into `block` must copy it: held by more than the writer, references kept for
  // an open step's rollback not counted.
  bool shared(BlockId block) const;
  void commit_computed(SeqBlocks& s, std::span<const TokenId> computed_tokens);
  void commit_step();
  void roll_back_step();
  // The open step lets go of seq (freed, or changed in a way a rollback cannot restore): its
  // copy-on-writes stay and a rollback leaves it alone.
  void settle(SeqId seq);
  // truncate / commit / release_outside_window inside a step: asserted; otherwise logged and the
  // sequence settled, so the store stays consistent.
  void refuse_in_step(const char* operation, SeqId seq);
  // The open step's records against the tables; counts the references it keeps into expected_refs.
  Status validate_step(std::vector<int32_t>& expected_refs) const;

  KVStoreConfig config_;
  std::unique_ptr<BlockPool> pool_;    // on the heap: cache_ refers to it, moves keep it in place
  std::unique_ptr<RadixCache> cache_;
  std::unordered_map<SeqId, SeqBlocks> seqs_;
  std::optional<StepLog> step_;        // set while a step is open
  int64_t num_evicted_blocks_ = 0;
  int64_t num_window_released_blocks_ = 0;
};

static_assert(KVStore<PagedKVStore>);

}  // namespace llaisys
