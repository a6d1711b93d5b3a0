// BatchScheduler over a windowed KV store (no model): blocks before the window go back after every
// step, scheduled block tables hold kNoBlock only before each chunk's window, forks and preemption
// keep working, and the invariants hold after every step.

#include <algorithm>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/scheduler/batch_scheduler.hpp"

using namespace llaisys;

namespace {

std::vector<TokenId> prompt_of(int32_t n, TokenId first = 10) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// Every sampling chunk gets token 7; a sequence finishes (length) once it holds `length` tokens.
StepResult sample_all(const BatchScheduler& scheduler, const SchedulerOutput& out, int32_t length) {
  StepResult result;
  for (const ScheduledChunk& chunk : out.chunks) {
    for (SeqId seq : chunk.sample_for) {
      const Sequence* s = scheduler.sequence(seq);
      const bool done = s != nullptr && s->num_tokens() + 1 >= length;
      result.updates.push_back(
          {.seq = seq, .token = 7, .finish = done ? SeqStatus::finished_length_capped : SeqStatus::running});
    }
  }
  return result;
}

// What validate_forward_batch asks of a windowed table: kNoBlock only before the chunk's window.
void check_chunk_tables(const SchedulerOutput& out, int32_t window, int32_t block_size) {
  for (const ScheduledChunk& chunk : out.chunks) {
    const int32_t first_read = std::max(0, chunk.start_position - window + 1) / block_size;
    for (std::size_t b = 0; b < chunk.block_table.size(); ++b) {
      INFO("sequence " << chunk.seq << " entry " << b << " chunk at " << chunk.start_position);
      if (static_cast<int32_t>(b) >= first_read) REQUIRE(chunk.block_table[b] >= 0);
      else REQUIRE(chunk.block_table[b] >= kNoBlock);
    }
  }
}

}  // namespace

TEST_CASE("window: a long decode holds about two windows of blocks, then one") {
  constexpr int32_t kWindow = 12, kBlock = 4;
  auto run = [](int32_t window, int32_t& peak, int32_t& late_peak) {
    BatchScheduler scheduler({.max_num_seqs = 4, .max_num_batched_tokens = 16, .max_context = 512},
                             {.num_blocks = 128, .block_size = kBlock, .sliding_window = window});
    REQUIRE(scheduler.add({.id = 1, .prompt = prompt_of(10)}).ok());
    peak = late_peak = 0;
    while (scheduler.has_unfinished()) {
      const SchedulerOutput out = scheduler.schedule();
      check_chunk_tables(out, window > 0 ? window : 1 << 30, kBlock);
      const int32_t used = scheduler.stats().kv.num_used_blocks();  // with the step's new blocks
      peak = std::max(peak, used);
      if (!out.chunks.empty() && out.chunks[0].start_position > 2 * kWindow + kBlock) {
        late_peak = std::max(late_peak, used);
      }
      scheduler.update(sample_all(scheduler, out, 300));
      const Status status = scheduler.kv().validate();
      INFO(status.message());
      REQUIRE(status.ok());
    }
  };
  int32_t peak = 0, late_peak = 0;
  run(kWindow, peak, late_peak);
  // The cached first window (3 blocks) until it falls out, plus the window and the block being filled.
  CHECK(peak <= 2 * (kWindow / kBlock) + 1);
  CHECK(late_peak <= kWindow / kBlock + 1);
  run(0, peak, late_peak);
  CHECK(peak >= 300 / kBlock);  // without the window everything stays
}

TEST_CASE("window: chunked prefill of a long prompt gives back blocks between chunks") {
  BatchScheduler scheduler({.max_num_seqs = 4, .max_num_batched_tokens = 8, .max_context = 512},
                           {.num_blocks = 64, .block_size = 4, .sliding_window = 6});
  auto ids = scheduler.add({.id = 1, .prompt = prompt_of(40)});
  REQUIRE(ids.ok());
  const SeqId seq = ids->front();
  for (int step = 0; step < 5; ++step) {
    const SchedulerOutput out = scheduler.schedule();
    REQUIRE(out.chunks.size() == 1);
    CHECK(out.chunks[0].start_position == 8 * step);
    check_chunk_tables(out, 6, 4);
    scheduler.update(sample_all(scheduler, out, 100));
    REQUIRE(scheduler.kv().validate().ok());
  }
  // 40 computed: blocks ending before position 35 went back (8 of them).
  CHECK(scheduler.kv().num_released_blocks(seq) == (40 - 5) / 4);
  CHECK(scheduler.stats().kv.num_window_released_blocks == (40 - 5) / 4);
}

TEST_CASE("window: n choices fork after the window moved, sharing its given-back entries") {
  BatchScheduler scheduler({.max_num_seqs = 8, .max_num_batched_tokens = 64, .max_context = 512},
                           {.num_blocks = 64, .block_size = 4, .sliding_window = 6});
  auto ids = scheduler.add({.id = 1, .prompt = prompt_of(30), .n = 3});
  REQUIRE(ids.ok());
  SchedulerOutput out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].sample_for.size() == 3);
  scheduler.update(sample_all(scheduler, out, 60));
  REQUIRE(scheduler.kv().validate().ok());
  for (SeqId id : *ids) {
    CHECK(scheduler.kv().num_released_blocks(id) == (30 - 5) / 4);
    CHECK(scheduler.kv().block_table(id)[0] == kNoBlock);
  }
  int copies = 0;
  while (scheduler.has_unfinished()) {
    out = scheduler.schedule();
    copies += static_cast<int>(out.block_copies.size());
    check_chunk_tables(out, 6, 4);
    scheduler.update(sample_all(scheduler, out, 60));
    REQUIRE(scheduler.kv().validate().ok());
  }
  CHECK(copies == 2);  // the shared partial block, copied by two of the three
  const KVStats kv = scheduler.stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
}

TEST_CASE("window: preemption releases a windowed sequence and recomputes it") {
  // 12 blocks of 4 for four sequences of up to 40 tokens: without giving back they would need 40.
  BatchScheduler scheduler({.max_num_seqs = 4, .max_num_batched_tokens = 32, .max_context = 48},
                           {.num_blocks = 12, .block_size = 4, .sliding_window = 8});
  for (RequestId id = 1; id <= 4; ++id) {
    REQUIRE(scheduler.add({.id = id, .prompt = prompt_of(6 + static_cast<int32_t>(id), static_cast<TokenId>(id * 50))}).ok());
  }
  int steps = 0;
  while (scheduler.has_unfinished() && steps < 2000) {
    ++steps;
    const SchedulerOutput out = scheduler.schedule();
    check_chunk_tables(out, 8, 4);
    scheduler.update(sample_all(scheduler, out, 40));
    const Status status = scheduler.kv().validate();
    INFO(status.message());
    REQUIRE(status.ok());
  }
  CHECK_FALSE(scheduler.has_unfinished());
  CHECK(scheduler.stats().num_preemptions > 0);
  CHECK(scheduler.stats().kv.num_window_released_blocks > 0);
  const KVStats kv = scheduler.stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
}

TEST_CASE("window: a failed step leaves the given-back entries as they were") {
  BatchScheduler scheduler({.max_num_seqs = 4, .max_num_batched_tokens = 8, .max_context = 512},
                           {.num_blocks = 64, .block_size = 4, .sliding_window = 6});
  auto ids = scheduler.add({.id = 1, .prompt = prompt_of(20)});
  REQUIRE(ids.ok());
  for (int step = 0; step < 3; ++step) {
    const SchedulerOutput out = scheduler.schedule();
    scheduler.update(sample_all(scheduler, out, 100));
  }
  const SeqId seq = ids->front();
  const std::vector<BlockId> before(scheduler.kv().block_table(seq).begin(), scheduler.kv().block_table(seq).end());
  const int32_t free_before = scheduler.kv().num_free_blocks();
  const SchedulerOutput failed = scheduler.schedule();
  REQUIRE_FALSE(failed.chunks.empty());
  scheduler.fail_step();
  CHECK(std::equal(before.begin(), before.end(), scheduler.kv().block_table(seq).begin(),
                   scheduler.kv().block_table(seq).end()));
  CHECK(scheduler.kv().num_free_blocks() == free_before);
  REQUIRE(scheduler.kv().validate().ok());
  const SchedulerOutput retried = scheduler.schedule();
  REQUIRE(retried.chunks.size() == failed.chunks.size());
  CHECK(retried.chunks[0].block_table == failed.chunks[0].block_table);
  scheduler.update(sample_all(scheduler, retried, 100));
  CHECK(scheduler.kv().validate().ok());
}
