// `llaisys-bench kv`: the cost of one prefix-cache eviction as the cache grows. For each size a
// RadixCache holds that many cached blocks, none locked (every sequence released): groups of 4
// sequences of 4 blocks sharing their first block, inserted oldest first. Each evict(1) frees the
// least recently used leaf. A sample times a batch of consecutive evict(1) calls (one call is too
// short for the clock) and the cache is refilled (untimed) after each batch, so its size stays put.
// Printed: the median and 99th percentile microseconds per call at each size, and the ratio of the
// largest size's median to the smallest's (about 1 when eviction does not depend on the size).

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "llaisys/kv/block_pool.hpp"
#include "llaisys/kv/radix_cache.hpp"

namespace llaisys::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kSeqsPerGroup = 4;
constexpr int32_t kBlocksPerSeq = 4;  // the first shared by the group
constexpr int32_t kBlocksPerGroup = 1 + kSeqsPerGroup * (kBlocksPerSeq - 1);

struct KvBenchOptions {
  std::vector<int32_t> sizes = {1000, 10000, 100000};
  int32_t samples = 500;
  int32_t batch = 16;  // evict(1) calls per sample
  int32_t block_size = 16;
};

struct EvictTiming {
  int32_t cached_blocks = 0;
  int32_t nodes = 0;
  double median_us = 0;
  double p99_us = 0;
};

// Fills a cache with groups of released sequences, each block's tokens distinct from every other's.
class CacheFiller {
 public:
  CacheFiller(RadixCache& cache, BlockPool& pool, int32_t block_size)
      : cache_(cache), pool_(pool), block_size_(block_size) {}

  // Inserts one group; false (nothing inserted) when the pool cannot hold its sequences.
  bool add_group() {
    if (pool_.num_free() < kBlocksPerGroup + kBlocksPerSeq) return false;
    const std::vector<TokenId> shared = fresh_tokens(1);
    for (int32_t s = 0; s < kSeqsPerGroup; ++s) {
      std::vector<TokenId> tokens = shared;
      const std::vector<TokenId> own = fresh_tokens(kBlocksPerSeq - 1);
      tokens.insert(tokens.end(), own.begin(), own.end());
      std::vector<BlockId> blocks;
      pool_.allocate(kBlocksPerSeq, blocks);
      cache_.insert(cache_.root(""), tokens, blocks);
      for (BlockId block : blocks) pool_.release(block);  // the sequence finishes: only the cache holds them
    }
    return true;
  }

 private:
  std::vector<TokenId> fresh_tokens(int32_t num_blocks) {
    std::vector<TokenId> tokens(static_cast<std::size_t>(num_blocks * block_size_));
    for (TokenId& t : tokens) t = next_token_++;
    return tokens;
  }

  RadixCache& cache_;
  BlockPool& pool_;
  int32_t block_size_;
  TokenId next_token_ = 0;
};

double percentile(std::vector<double> values, double q) {
  const auto k = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

EvictTiming time_evictions(int32_t target_blocks, const KvBenchOptions& o) {
  // Room for the target plus one group in flight.
  BlockPool pool(target_blocks + kBlocksPerGroup + kBlocksPerSeq);
  RadixCache cache(o.block_size, pool);
  CacheFiller filler(cache, pool, o.block_size);
  while (cache.num_cached_blocks() + kBlocksPerGroup <= target_blocks && filler.add_group()) {
  }
  EvictTiming timing{.cached_blocks = cache.num_cached_blocks(), .nodes = cache.num_nodes()};
  std::vector<double> micros;
  micros.reserve(static_cast<std::size_t>(o.samples));
  for (int32_t sample = 0; sample < o.samples; ++sample) {
    int32_t freed = 0;
    const auto start = Clock::now();
    for (int32_t c = 0; c < o.batch; ++c) freed += cache.evict(1);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / o.batch);
    if (freed == 0) break;
    while (cache.num_cached_blocks() + kBlocksPerGroup <= target_blocks && filler.add_group()) {
    }
  }
  timing.median_us = percentile(micros, 0.5);
  timing.p99_us = percentile(micros, 0.99);
  return timing;
}

int run_kv_bench(const KvBenchOptions& o) {
  fmt::print("kv: RadixCache::evict(1) on a cache of released sequences ({} blocks of {} tokens each, "
             "{} per group sharing the first); {} samples of {} calls per size, refilled between samples\n",
             kBlocksPerSeq, o.block_size, kSeqsPerGroup, o.samples, o.batch);
  fmt::print("{:>14} {:>10} {:>14} {:>12}\n", "cached blocks", "nodes", "median us", "p99 us");
  std::vector<EvictTiming> timings;
  for (int32_t size : o.sizes) {
    timings.push_back(time_evictions(size, o));
    const EvictTiming& t = timings.back();
    fmt::print("{:>14} {:>10} {:>14.3f} {:>12.3f}\n", t.cached_blocks, t.nodes, t.median_us, t.p99_us);
  }
  if (timings.size() >= 2 && timings.front().median_us > 0) {
    fmt::print("median ratio {} / {} blocks: {:.2f}x\n", timings.back().cached_blocks,
               timings.front().cached_blocks, timings.back().median_us / timings.front().median_us);
  }
  return 0;
}

}  // namespace

void add_kv_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<KvBenchOptions>();
  CLI::App* cmd = app.add_subcommand("kv", "prefix-cache eviction cost against the number of cached blocks");
  cmd->add_option("--sizes", o->sizes, "cached blocks per run, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(100, 1 << 24));
  cmd->add_option("--samples", o->samples, "timed samples per size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--batch", o->batch, "evict(1) calls per sample")->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--block-size", o->block_size, "tokens per block")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->callback([o, &exit_code] { exit_code = run_kv_bench(*o); });
}

}  // namespace llaisys::bench
