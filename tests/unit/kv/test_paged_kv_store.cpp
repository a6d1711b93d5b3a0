// PagedKVStore: block tables, prefix matching, eviction, copy-on-write, transactions, invariants.

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/kv/paged_kv_store.hpp"

using namespace llaisys;

namespace {

std::vector<TokenId> iota_tokens(int32_t n, TokenId first = 100) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// Registers seq, computes all of `tokens` (append + commit) and returns the cached prefix it got.
int32_t run_sequence(PagedKVStore& kv, SeqId seq, const std::vector<TokenId>& tokens,
                     std::string_view ns = "") {
  const int32_t cached = kv.match_prefix(seq, tokens, ns);
  std::vector<BlockCopy> copies;
  REQUIRE(kv.append(seq, static_cast<int32_t>(tokens.size()) - cached, copies).ok());
  CHECK(copies.empty());
  kv.commit(seq, tokens);
  return cached;
}

}  // namespace

TEST_CASE("block pool: all-or-nothing allocation and reference counts") {
  BlockPool pool(4);
  std::vector<BlockId> blocks;
  CHECK_FALSE(pool.allocate(5, blocks));
  CHECK(blocks.empty());
  REQUIRE(pool.allocate(3, blocks));
  CHECK(blocks == std::vector<BlockId>{0, 1, 2});
  CHECK(pool.num_free() == 1);
  pool.add_ref(1);
  CHECK_FALSE(pool.release(1));
  CHECK(pool.release(1));
  CHECK(pool.num_free() == 2);
  CHECK(pool.validate().ok());
}

TEST_CASE("kv budget to blocks") {
  CHECK(kv_blocks_for_budget(1024, 8, 16) == 8);
  CHECK(kv_blocks_for_budget(100, 8, 16) == 0);
  CHECK(kv_blocks_for_budget(1 << 20, 0, 16) == 65536);
}

TEST_CASE("create rejects an empty pool") {
  CHECK_FALSE(PagedKVStore::create({.num_blocks = 0}).ok());
  CHECK_FALSE(PagedKVStore::create({.num_blocks = 4, .block_size = 0}).ok());
  CHECK(PagedKVStore::create({.num_blocks = 4, .block_size = 4}).ok());
}

TEST_CASE("block tables grow by whole blocks") {
  PagedKVStore kv({.num_blocks = 8, .block_size = 4, .enable_prefix_cache = false});
  std::vector<BlockCopy> copies;
  const std::vector<TokenId> tokens = iota_tokens(6);
  CHECK(kv.match_prefix(1, tokens, "") == 0);
  REQUIRE(kv.append(1, 6, copies).ok());
  CHECK(kv.block_table(1).size() == 2);
  CHECK(kv.num_tokens(1) == 6);
  REQUIRE(kv.append(1, 2, copies).ok());
  CHECK(kv.block_table(1).size() == 2);
  REQUIRE(kv.append(1, 1, copies).ok());
  CHECK(kv.block_table(1).size() == 3);
  CHECK(kv.num_free_blocks() == 5);
  CHECK(kv.validate().ok());
  kv.release(1, tokens);  // no cache: everything returns to the free list
  CHECK(kv.num_free_blocks() == 8);
  CHECK(kv.validate().ok());
}

TEST_CASE("a finished sequence's full blocks are matched by the next one, never the last token") {
  PagedKVStore kv({.num_blocks = 16, .block_size = 4});
  const std::vector<TokenId> tokens = iota_tokens(10);
  CHECK(run_sequence(kv, 1, tokens) == 0);
  kv.release(1, tokens);
  KVStats stats = kv.stats();
  CHECK(stats.num_cached_blocks == 2);  // tokens 0..7; the half block is freed
  CHECK(stats.num_evictable_blocks == 2);
  CHECK(stats.num_free_blocks == 14);
  REQUIRE(kv.validate().ok());

  // Same prompt: two whole blocks. A prompt of exactly 8 tokens matches only one (token 8 must run).
  CHECK(kv.peek_prefix(tokens, "") == 8);
  CHECK(kv.peek_prefix(std::span(tokens).first(8), "") == 4);
  CHECK(kv.match_prefix(2, tokens, "") == 8);
  CHECK(kv.stats().num_evictable_blocks == 0);  // locked by sequence 2
  CHECK(kv.num_cached_tokens(2) == 8);
  REQUIRE(kv.validate().ok());

  // Another namespace never sees these blocks.
  CHECK(kv.match_prefix(3, tokens, "adapter-b") == 0);
  // A prompt sharing one block and then diverging matches one block (the node is split).
  std::vector<TokenId> other = tokens;
  other[5] = 7;
  CHECK(kv.match_prefix(4, other, "") == 4);
  REQUIRE(kv.validate().ok());
  kv.free(2);
  kv.free(3);
  kv.free(4);
  CHECK(kv.stats().num_evictable_blocks == 2);
  REQUIRE(kv.validate().ok());
}

TEST_CASE("eviction takes the least recently used unlocked leaves, never locked ones") {
  PagedKVStore kv({.num_blocks = 6, .block_size = 2});
  const auto a = iota_tokens(5, 10), b = iota_tokens(5, 50), c = iota_tokens(5, 90);
  run_sequence(kv, 1, a);
  kv.release(1, a);  // caches 2 blocks
  run_sequence(kv, 2, b);
  kv.release(2, b);  // 2 more
  CHECK(kv.stats().num_cached_blocks == 4);
  CHECK(kv.num_free_blocks() == 2);
  // Touch `a` again (and keep it locked while c runs).
  CHECK(kv.match_prefix(3, a, "") == 4);
  // c needs 3 blocks: 2 free + 1 evicted from b, the least recently used; a is locked.
  std::vector<BlockCopy> copies;
  CHECK(kv.match_prefix(4, c, "") == 0);
  REQUIRE(kv.append(4, 5, copies).ok());
  CHECK(kv.peek_prefix(a, "") == 4);
  CHECK(kv.peek_prefix(b, "") == 0);  // b's one node (2 blocks) went as a whole
  CHECK(kv.stats().num_evicted_blocks == 2);
  REQUIRE(kv.validate().ok());
  // Nothing else can be taken: a is locked, the pool is otherwise full.
  CHECK_FALSE(kv.can_append(4, 4));
  const std::vector<BlockId> before(kv.block_table(4).begin(), kv.block_table(4).end());
  Status status = kv.append(4, 4, copies);
  CHECK(status.code() == ErrorCode::out_of_memory);
  CHECK(std::equal(before.begin(), before.end(), kv.block_table(4).begin(), kv.block_table(4).end()));
  CHECK(kv.num_tokens(4) == 5);
  REQUIRE(kv.validate().ok());
}

TEST_CASE("fork shares blocks, the first write into a shared partial block copies it") {
  PagedKVStore kv({.num_blocks = 8, .block_size = 4});
  const std::vector<TokenId> prompt = iota_tokens(6);
  run_sequence(kv, 1, prompt);  // block 0 cached (and locked), block 1 half full
  REQUIRE(kv.fork(1, 2).ok());
  REQUIRE(kv.fork(1, 3).ok());
  CHECK(kv.num_tokens(2) == 6);
  REQUIRE(kv.validate().ok());
  const BlockId shared = kv.block_table(1)[1];

  std::vector<BlockCopy> copies;
  REQUIRE(kv.append(2, 1, copies).ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == shared);
  CHECK(kv.block_table(2)[1] == copies[0].dst);
  CHECK(kv.block_table(2)[0] == kv.block_table(1)[0]);  // the full cached block stays shared
  copies.clear();
  REQUIRE(kv.append(3, 1, copies).ok());
  CHECK(copies.size() == 1);
  copies.clear();
  REQUIRE(kv.append(1, 1, copies).ok());  // the last holder writes in place
  CHECK(copies.empty());
  CHECK(kv.block_table(1)[1] == shared);
  REQUIRE(kv.validate().ok());
}

TEST_CASE("truncate drops a range, rounding down into the shared prefix") {
  PagedKVStore kv({.num_blocks = 8, .block_size = 4});
  const std::vector<TokenId> tokens = iota_tokens(14);
  run_sequence(kv, 1, tokens);
  CHECK(kv.num_cached_tokens(1) == 12);
  CHECK(kv.truncate(1, 13) == 13);
  CHECK(kv.block_table(1).size() == 4);
  CHECK(kv.truncate(1, 6) == 4);  // block 1 is shared with the cache: dropped whole
  CHECK(kv.num_cached_tokens(1) == 4);
  CHECK(kv.block_table(1).size() == 1);
  REQUIRE(kv.validate().ok());
  CHECK(kv.stats().num_cached_blocks == 3);  // the cache keeps what it had
  kv.free(1);
  CHECK(kv.stats().num_evictable_blocks == 3);
  REQUIRE(kv.validate().ok());
}

// A random workload against a simulation of the model's memory: every slot holds a hash of the
// tokens up to its position, written when "computed". A matched or shared block must hold exactly
// what recomputing would write, copies are applied as the engine would, and the invariants hold
// after every operation. Every computation is a Step; one in five fails: its pass writes garbage
// into every slot it was given (and admits a newcomer that does the same), then it is rolled back.
TEST_CASE("random workload: cached blocks always hold the right contents") {
  constexpr int32_t kBlockSize = 4;
  PagedKVStore kv({.num_blocks = 40, .block_size = kBlockSize});
  std::vector<uint64_t> memory(40 * kBlockSize, 0);
  auto prefix_hash = [](std::span<const TokenId> tokens) {
    uint64_t h = 1469598103934665603ull;
    for (TokenId t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    return h;
  };
  auto slot = [&](SeqId seq, int32_t pos) -> uint64_t& {
    return memory[static_cast<std::size_t>(kv.block_table(seq)[static_cast<std::size_t>(pos / kBlockSize)] * kBlockSize +
                                           pos % kBlockSize)];
  };
  struct Live {
    std::vector<TokenId> tokens;
    int32_t computed = 0;
  };
  std::map<SeqId, Live> live;
  std::mt19937 rng(7);
  std::mt19937 failure_rng(3);  // which steps fail, and their newcomers: a stream of its own
  SeqId next_seq = 1;
  std::vector<std::vector<TokenId>> prefixes = {iota_tokens(9, 1), iota_tokens(13, 40), iota_tokens(6, 80)};
  int64_t verified_hits = 0, rolled_back = 0;
  for (int step = 0; step < 3000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 3 || live.empty()) {  // new sequence: a shared prefix plus a random tail
      std::vector<TokenId> tokens = prefixes[rng() % prefixes.size()];
      const int tail = static_cast<int>(rng() % 8);
      for (int i = 0; i < tail; ++i) tokens.push_back(static_cast<TokenId>(rng() % 5));
      if (tokens.empty()) tokens.push_back(1);
      const SeqId seq = next_seq++;
      const int32_t cached = kv.match_prefix(seq, tokens, "");
      for (int32_t p = 0; p < cached; ++p) {
        REQUIRE(slot(seq, p) == prefix_hash(std::span(tokens).first(static_cast<std::size_t>(p + 1))));
        ++verified_hits;
      }
      live[seq] = {.tokens = tokens, .computed = cached};
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      const SeqId seq = it->first;
      Live& s = it->second;
      if (op < 7) {  // compute some tokens (appending new ones past the end)
        const int32_t n = 1 + static_cast<int32_t>(rng() % 6);
        while (static_cast<int32_t>(s.tokens.size()) < s.computed + n) {
          s.tokens.push_back(static_cast<TokenId>(rng() % 5));
        }
        const bool fails = failure_rng() % 5 == 0;
        const int32_t slots_before = kv.num_tokens(seq);
        bool computed = false;
        {
          auto kv_step = kv.begin_step();
          std::vector<BlockCopy> copies;
          if (kv.append(seq, s.computed + n - slots_before, copies).ok()) {
            for (const BlockCopy& c : copies) {
              std::copy_n(memory.begin() + c.src * kBlockSize, kBlockSize, memory.begin() + c.dst * kBlockSize);
            }
            if (fails) {
              for (int32_t p = s.computed; p < s.computed + n; ++p) slot(seq, p) = 0xbad;
              const SeqId newcomer = next_seq++;
              const std::vector<TokenId>& prompt = prefixes[failure_rng() % prefixes.size()];
              const int32_t cached = kv.match_prefix(newcomer, prompt, "");
              const auto uncached = static_cast<int32_t>(prompt.size()) - cached;
              if (kv.append(newcomer, uncached, copies).ok()) {
                for (int32_t p = cached; p < cached + uncached; ++p) slot(newcomer, p) = 0xbad;
              }
              REQUIRE(kv.validate().ok());
              ++rolled_back;
            } else {
              for (int32_t p = s.computed; p < s.computed + n; ++p) {
                slot(seq, p) = prefix_hash(std::span(s.tokens).first(static_cast<std::size_t>(p + 1)));
              }
              kv_step.commit();
              computed = true;
            }
          }
        }
        if (computed) {
          s.computed += n;
          kv.commit(seq, std::span(s.tokens).first(static_cast<std::size_t>(s.computed)));
        } else {
          CHECK(kv.num_tokens(seq) == slots_before);
          CHECK(kv.stats().num_sequences == static_cast<int32_t>(live.size()));
        }
      } else if (op == 7) {  // fork
        const SeqId child = next_seq++;
        REQUIRE(kv.fork(seq, child).ok());
        live[child] = s;
      } else if (op == 8) {  // drop a range
        const int32_t keep = kv.truncate(seq, static_cast<int32_t>(rng() % static_cast<uint32_t>(s.computed + 1)));
        s.computed = keep;
        s.tokens.resize(static_cast<std::size_t>(std::max(keep, 1)));
      } else {  // finish
        kv.release(seq, std::span(s.tokens).first(static_cast<std::size_t>(s.computed)));
        live.erase(it);
      }
    }
    // Every computed slot of every live sequence still holds its own history.
    for (const auto& [seq, s] : live) {
      for (int32_t p = 0; p < s.computed; ++p) {
        REQUIRE(slot(seq, p) == prefix_hash(std::span(s.tokens).first(static_cast<std::size_t>(p + 1))));
      }
    }
    const Status status = kv.validate();
    INFO("step " << step << ": " << status.message());
    REQUIRE(status.ok());
  }
  for (auto& [seq, s] : live) kv.release(seq, std::span(s.tokens).first(static_cast<std::size_t>(s.computed)));
  const KVStats stats = kv.stats();
  CHECK(stats.num_free_blocks + stats.num_evictable_blocks == stats.num_blocks);
  CHECK(verified_hits > 100);
  CHECK(rolled_back > 20);
  CHECK(kv.validate().ok());
}
