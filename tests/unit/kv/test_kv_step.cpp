// PagedKVStore::Step: a failed step rolls back to the exact prior state (tables, counts, cached
// prefixes, locks and references), a committed one keeps everything; evictions and releases made
// during a failed step stay done.

#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/kv/paged_kv_store.hpp"

using namespace llaisys;

namespace {

std::vector<TokenId> iota_tokens(int32_t n, TokenId first) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<TokenId> concat(std::vector<TokenId> head, const std::vector<TokenId>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// A step as the engine runs it, outside any Step: append, commit, give back the window.
void compute(PagedKVStore& kv, SeqId seq, const std::vector<TokenId>& tokens, int32_t n) {
  std::vector<BlockCopy> copies;
  REQUIRE(kv.append(seq, n, copies).ok());
  REQUIRE(copies.empty());
  const int32_t computed = kv.num_tokens(seq);
  kv.commit(seq, std::span(tokens).first(static_cast<std::size_t>(computed)));
  kv.release_outside_window(seq, computed);
}

struct SeqState {
  bool present = false;
  std::vector<BlockId> table;
  int32_t num_tokens = 0;
  int32_t num_cached_tokens = 0;
  int32_t num_released_blocks = 0;
  bool operator==(const SeqState&) const = default;
};

// Everything the store lets a caller observe.
struct Snapshot {
  std::map<SeqId, SeqState> seqs;
  std::vector<int64_t> stats;            // every KVStats field
  int32_t num_available_blocks = 0;
  std::vector<int32_t> cached_prefixes;  // peek_prefix of each prompt
};

struct Fixture {
  std::unique_ptr<PagedKVStore> kv;
  std::vector<std::vector<TokenId>> prompts;
};

const std::vector<SeqId> kObserved = {1, 2, 3, 4, 5, 9, 10};

Snapshot snapshot(const Fixture& f) {
  const PagedKVStore& kv = *f.kv;
  Snapshot s;
  for (SeqId seq : kObserved) {
    const auto table = kv.block_table(seq);
    s.seqs[seq] = {.present = kv.contains(seq),
                   .table = std::vector<BlockId>(table.begin(), table.end()),
                   .num_tokens = kv.num_tokens(seq),
                   .num_cached_tokens = kv.num_cached_tokens(seq),
                   .num_released_blocks = kv.num_released_blocks(seq)};
  }
  const KVStats st = kv.stats();
  s.stats = {st.block_size,           st.num_blocks,    st.num_free_blocks,    st.num_cached_blocks,
             st.num_evictable_blocks, st.num_sequences, st.num_evicted_blocks, st.num_window_released_blocks};
  s.num_available_blocks = kv.num_available_blocks();
  for (const auto& prompt : f.prompts) s.cached_prefixes.push_back(kv.peek_prefix(prompt, ""));
  return s;
}

void check_same(const Snapshot& before, const Snapshot& after) {
  for (const auto& [seq, state] : before.seqs) {
    INFO("sequence " << seq);
    const SeqState& now = after.seqs.at(seq);
    CHECK(now.present == state.present);
    CHECK(now.table == state.table);
    CHECK(now.num_tokens == state.num_tokens);
    CHECK(now.num_cached_tokens == state.num_cached_tokens);
    CHECK(now.num_released_blocks == state.num_released_blocks);
  }
  CHECK(after.stats == before.stats);
  CHECK(after.num_available_blocks == before.num_available_blocks);
  CHECK(after.cached_prefixes == before.cached_prefixes);
}

// Sequences 1 and 2 share a cached prefix (with a window, 1 has given back its leading blocks);
// 3 and its fork 4 share a partially filled last block; 5 is half-way through its prompt.
Fixture build(int32_t window) {
  Fixture f{.kv = std::make_unique<PagedKVStore>(
                KVStoreConfig{.num_blocks = 64, .block_size = 4, .sliding_window = window}),
            .prompts = {}};
  PagedKVStore& kv = *f.kv;
  const std::vector<TokenId> p1 = iota_tokens(40, 100);
  const std::vector<TokenId> p2 = concat(std::vector<TokenId>(p1.begin(), p1.begin() + 8), iota_tokens(20, 200));
  const std::vector<TokenId> p3 = iota_tokens(6, 300);
  const std::vector<TokenId> p5 = iota_tokens(9, 400);
  f.prompts = {p1, p2, p3, p5};
  REQUIRE(kv.match_prefix(1, p1, "") == 0);
  compute(kv, 1, p1, 10);
  for (int i = 0; i < 11; ++i) compute(kv, 1, p1, 1);  // 21 tokens
  REQUIRE(kv.match_prefix(2, p2, "") == 8);
  compute(kv, 2, p2, 6);
  REQUIRE(kv.match_prefix(3, p3, "") == 0);
  compute(kv, 3, p3, 6);
  REQUIRE(kv.fork(3, 4).ok());
  REQUIRE(kv.match_prefix(5, p5, "") == 0);
  compute(kv, 5, p5, 5);
  if (window > 0) REQUIRE(kv.num_released_blocks(1) > 0);
  REQUIRE(kv.validate().ok());
  return f;
}

// Inside a step: appends (one crossing a block boundary), a copy-on-write of the shared block of 3
// and 4, an admission through the prefix cache (9), a fork (10) that copies a block appended in the
// step. Returns the copies the engine would apply.
std::vector<BlockCopy> step_work(Fixture& f) {
  PagedKVStore& kv = *f.kv;
  std::vector<BlockCopy> copies;
  REQUIRE(kv.append(1, 4, copies).ok());
  REQUIRE(kv.append(3, 1, copies).ok());
  REQUIRE(copies.size() == 1);  // 3 copies the block it shares with 4
  REQUIRE(kv.append(2, 5, copies).ok());
  const std::vector<TokenId> p9(f.prompts[0].begin(), f.prompts[0].begin() + 13);
  CHECK(kv.match_prefix(9, p9, "") == (kv.sliding_window() > 0 ? 8 : 12));  // the window caps it
  REQUIRE(kv.append(9, 5, copies).ok());
  REQUIRE(kv.fork(2, 10).ok());
  REQUIRE(kv.append(10, 1, copies).ok());
  REQUIRE(copies.size() == 2);  // 10 copies 2's last block, appended in this step
  const Status status = kv.validate();
  INFO(status.message());
  REQUIRE(status.ok());
  return copies;
}

}  // namespace

TEST_CASE("kv step: destroying an uncommitted step restores the exact prior state") {
  for (const int32_t window : {0, 6}) {
    INFO("window " << window);
    Fixture f = build(window);
    const Snapshot before = snapshot(f);
    std::vector<BlockCopy> failed_copies;
    {
      auto step = f.kv->begin_step();
      CHECK(f.kv->step_open());
      failed_copies = step_work(f);
      CHECK(f.kv->contains(9));
    }  // the pass failed: no commit
    CHECK_FALSE(f.kv->step_open());
    const Status status = f.kv->validate();
    INFO(status.message());
    REQUIRE(status.ok());
    check_same(before, snapshot(f));

    // Scheduled again, the step copies the same sources again (the failed copies may never have run).
    auto step = f.kv->begin_step();
    const std::vector<BlockCopy> copies = step_work(f);
    REQUIRE(copies.size() == failed_copies.size());
    CHECK(copies[0].src == failed_copies[0].src);
    CHECK(copies[1].src == f.kv->block_table(2)[4]);  // appended again, maybe another block
    step.commit();
    REQUIRE(f.kv->validate().ok());
  }
}

TEST_CASE("kv step: commit keeps everything and lets go of the copied originals") {
  for (const int32_t window : {0, 6}) {
    INFO("window " << window);
    Fixture f = build(window);
    const BlockId shared = f.kv->block_table(4)[1];
    Snapshot during;
    {
      auto step = f.kv->begin_step();
      step_work(f);
      during = snapshot(f);
      step.commit();
      CHECK_FALSE(f.kv->step_open());
      check_same(during, snapshot(f));
    }  // a committed step's destruction changes nothing
    check_same(during, snapshot(f));
    const Status status = f.kv->validate();  // counts references: the step's on the originals are gone
    INFO(status.message());
    REQUIRE(status.ok());
    // 3 let go of the block it shared with 4: 4 now writes into it in place.
    std::vector<BlockCopy> copies;
    REQUIRE(f.kv->append(4, 1, copies).ok());
    CHECK(copies.empty());
    CHECK(f.kv->block_table(4)[1] == shared);
    CHECK(f.kv->validate().ok());
  }
}

TEST_CASE("kv step: evictions and releases made during a failed step stay done") {
  PagedKVStore kv({.num_blocks = 10, .block_size = 4});
  const std::vector<TokenId> old_prompt = iota_tokens(9, 10);
  REQUIRE(kv.match_prefix(1, old_prompt, "") == 0);
  compute(kv, 1, old_prompt, 9);
  kv.release(1, old_prompt);  // 2 blocks cached, evictable
  const std::vector<TokenId> a = iota_tokens(10, 100), b = iota_tokens(10, 200);
  REQUIRE(kv.match_prefix(2, a, "") == 0);
  compute(kv, 2, a, 6);
  REQUIRE(kv.match_prefix(3, b, "") == 0);
  compute(kv, 3, b, 6);
  REQUIRE(kv.validate().ok());
  const std::vector<BlockId> table_a(kv.block_table(2).begin(), kv.block_table(2).end());
  const KVStats before = kv.stats();
  REQUIRE(before.num_free_blocks == 4);
  REQUIRE(before.num_evictable_blocks == 2);  // the old prompt's; a's and b's first blocks are locked
  {
    auto step = kv.begin_step();
    kv.release(3, std::span(b).first(6));  // preempted: its full block joins the cache
    std::vector<BlockCopy> copies;
    // 7 more blocks with 5 free: evicts the old prompt's node (least recently used), not b's block.
    REQUIRE(kv.append(2, 28, copies).ok());
    CHECK(kv.stats().num_evicted_blocks == 2);
    REQUIRE(kv.validate().ok());
  }
  REQUIRE(kv.validate().ok());
  CHECK(std::equal(table_a.begin(), table_a.end(), kv.block_table(2).begin(), kv.block_table(2).end()));
  CHECK(kv.num_tokens(2) == 6);
  CHECK_FALSE(kv.contains(3));
  CHECK(kv.peek_prefix(old_prompt, "") == 0);  // evicted for good
  CHECK(kv.peek_prefix(b, "") == 4);            // what 3 committed when released stays cached
  const KVStats after = kv.stats();
  CHECK(after.num_evicted_blocks == 2);
  CHECK(after.num_sequences == 1);
  CHECK(after.num_cached_blocks == before.num_cached_blocks - 2);
  CHECK(after.num_evictable_blocks == 1);  // b's block, unlocked by the release
  CHECK(after.num_free_blocks == 7);       // 10 less a's two and b's cached one
}

TEST_CASE("kv step: a moved step rolls back once") {
  PagedKVStore kv({.num_blocks = 16, .block_size = 4});
  const std::vector<TokenId> tokens = iota_tokens(12, 10);
  REQUIRE(kv.match_prefix(1, tokens, "") == 0);
  compute(kv, 1, tokens, 5);
  {
    auto first = kv.begin_step();
    std::vector<BlockCopy> copies;
    REQUIRE(kv.append(1, 4, copies).ok());
    {
      PagedKVStore::Step second = std::move(first);
      CHECK(kv.step_open());
    }  // rolled back here
    CHECK_FALSE(kv.step_open());
    CHECK(kv.num_tokens(1) == 5);
  }  // `first` was moved from: nothing more happens
  CHECK(kv.num_tokens(1) == 5);
  REQUIRE(kv.validate().ok());

  // Move-assigning over an open step rolls that one back before taking the other.
  auto held = kv.begin_step();
  std::vector<BlockCopy> copies;
  REQUIRE(kv.append(1, 4, copies).ok());
  held = PagedKVStore::Step(std::move(held));  // self-transfer through a temporary keeps it open
  CHECK(kv.step_open());
  held.commit();
  CHECK(kv.num_tokens(1) == 9);
  auto next = kv.begin_step();
  REQUIRE(kv.append(1, 1, copies).ok());
  held = std::move(next);  // `held` was spent: takes over `next`'s open step
  CHECK(kv.step_open());
  held.commit();
  CHECK(kv.num_tokens(1) == 10);
  CHECK(kv.validate().ok());
}
