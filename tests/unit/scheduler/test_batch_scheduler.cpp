// BatchScheduler on the CPU with hand-made step results (no model): budgets, ordering, chunking,
// prefix-aware admission, preemption, forks with copy-on-write, aborts and failed steps.

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
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

// Every chunk that samples gets token 7; nothing finishes.
StepResult sample_all(const SchedulerOutput& out, TokenId token = 7) {
  StepResult result;
  for (const ScheduledChunk& chunk : out.chunks) {
    for (SeqId seq : chunk.sample_for) result.updates.push_back({.seq = seq, .token = token});
  }
  return result;
}

const ScheduledChunk* chunk_of(const SchedulerOutput& out, SeqId seq) {
  for (const ScheduledChunk& chunk : out.chunks) {
    if (chunk.seq == seq) return &chunk;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("chunked prefill under the token budget, decodes first") {
  BatchScheduler scheduler({.max_num_seqs = 8, .max_num_batched_tokens = 8, .max_context = 64},
                           {.num_blocks = 32, .block_size = 4});
  auto a = scheduler.add({.id = 1, .prompt = prompt_of(20)});
  REQUIRE(a.ok());
  const SeqId seq_a = a->front();

  SchedulerOutput out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].start_position == 0);
  CHECK(out.chunks[0].num_tokens() == 8);
  CHECK(out.chunks[0].sample_for.empty());
  CHECK(out.chunks[0].block_table.size() == 2);
  scheduler.update(sample_all(out));
  out = scheduler.schedule();
  CHECK(out.chunks[0].start_position == 8);
  scheduler.update(sample_all(out));
  out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].num_tokens() == 4);
  CHECK(out.chunks[0].completes_sequence);
  CHECK(out.chunks[0].sample_for == std::vector<SeqId>{seq_a});
  scheduler.update(sample_all(out));
  CHECK(scheduler.sequence(seq_a)->tokens.size() == 21);

  // A new long prompt arrives: the decode of A goes first, B gets the rest of the budget.
  auto b = scheduler.add({.id = 2, .prompt = prompt_of(20, 100)});
  REQUIRE(b.ok());
  out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 2);
  CHECK(out.chunks[0].seq == seq_a);
  CHECK(out.chunks[0].num_tokens() == 1);
  CHECK(out.chunks[0].token_ids == std::vector<TokenId>{7});
  CHECK(out.chunks[0].start_position == 20);
  CHECK(out.chunks[1].seq == b->front());
  CHECK(out.chunks[1].num_tokens() == 7);
  CHECK(out.num_batched_tokens == 8);
  scheduler.update(sample_all(out));
  CHECK(scheduler.kv().validate().ok());
}

TEST_CASE("admission matches the prefix cache first and counts hits") {
  BatchScheduler scheduler({.max_num_batched_tokens = 64, .max_context = 64}, {.num_blocks = 32, .block_size = 4});
  auto a = scheduler.add({.id = 1, .prompt = prompt_of(10)});
  SchedulerOutput out = scheduler.schedule();
  StepResult result = sample_all(out);
  result.updates[0].finish = SeqStatus::finished_stopped;
  scheduler.update(result);
  CHECK_FALSE(scheduler.has_unfinished());
  CHECK(scheduler.kv().stats().num_cached_blocks == 2);

  std::vector<TokenId> longer = prompt_of(10);
  longer.insert(longer.end(), {1, 2, 3});
  auto b = scheduler.add({.id = 2, .prompt = longer});
  out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].start_position == 8);
  CHECK(out.chunks[0].num_tokens() == 5);
  CHECK(scheduler.sequence(b->front())->num_cached_tokens == 8);
  scheduler.update(sample_all(out));
  // Another namespace (adapter) does not see those blocks.
  auto c = scheduler.add({.id = 3, .prompt = longer, .cache_namespace = "lora-x"});
  out = scheduler.schedule();
  const ScheduledChunk* chunk_c = chunk_of(out, c->front());
  REQUIRE(chunk_c != nullptr);
  CHECK(chunk_c->start_position == 0);
  const SchedulerStats stats = scheduler.stats();
  CHECK(stats.prefix_hit_tokens == 8);
  CHECK(stats.prefix_query_tokens == 10 + 13 + 13);
}

TEST_CASE("a prompt that cannot fit is ignored with its reason") {
  BatchScheduler scheduler({.max_context = 16}, {.num_blocks = 8, .block_size = 4});
  auto too_long = scheduler.add({.id = 1, .prompt = prompt_of(16)});
  REQUIRE(too_long.ok());
  SchedulerOutput out = scheduler.schedule();
  CHECK(out.chunks.empty());
  REQUIRE(out.finished.size() == 1);
  CHECK(out.finished[0].status == SeqStatus::finished_ignored);
  CHECK(out.finished[0].detail == "the prompt has 16 tokens but the context holds 16 including at least one generated token");
  CHECK_FALSE(scheduler.has_unfinished());

  BatchScheduler small({.max_context = 64}, {.num_blocks = 2, .block_size = 4});
  REQUIRE(small.add({.id = 2, .prompt = prompt_of(8)}).ok());
  out = small.schedule();
  REQUIRE(out.finished.size() == 1);
  CHECK(out.finished[0].detail == "the prompt needs 3 KV blocks but the cache has 2 blocks of 4 tokens");
  CHECK(small.max_sequence_tokens() == 8);

  CHECK_FALSE(small.add({.id = 3, .prompt = {}}).ok());
  CHECK_FALSE(small.add({.id = 4, .prompt = prompt_of(2), .n = 0}).ok());

  // A cache of 2^32 tokens (65,536 blocks of 65,536): more than int32 counts, not fewer.
  BatchScheduler huge({.max_context = 2147483647}, {.num_blocks = 1 << 16, .block_size = 1 << 16});
  CHECK(huge.max_sequence_tokens() == 2147483647);
  REQUIRE(huge.add({.id = 5, .prompt = prompt_of(8)}).ok());
  out = huge.schedule();
  CHECK(out.finished.empty());
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].num_tokens() == 8);
}

TEST_CASE("out of blocks: the newest running sequence is preempted and recomputed later") {
  // 6 blocks of 2 tokens; two sequences with 4-token prompts decode until the pool runs dry.
  BatchScheduler scheduler({.max_num_batched_tokens = 64, .max_context = 64}, {.num_blocks = 6, .block_size = 2});
  const SeqId a = scheduler.add({.id = 1, .prompt = prompt_of(4, 10)})->front();
  const SeqId b = scheduler.add({.id = 2, .prompt = prompt_of(4, 50)})->front();
  SchedulerOutput out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 2);
  scheduler.update(sample_all(out));
  bool saw_preemption = false;
  for (int step = 0; step < 8 && !saw_preemption; ++step) {
    out = scheduler.schedule();
    if (!out.preempted.empty()) {
      saw_preemption = true;
      CHECK(out.preempted == std::vector<SeqId>{b});
      CHECK(scheduler.sequence(b)->status == SeqStatus::preempted);
      CHECK(scheduler.sequence(b)->num_computed_tokens == 0);
      CHECK(chunk_of(out, a) != nullptr);
      CHECK(chunk_of(out, b) == nullptr);
    }
    scheduler.update(sample_all(out));
    REQUIRE(scheduler.kv().validate().ok());
  }
  REQUIRE(saw_preemption);
  const std::vector<TokenId> b_tokens = scheduler.sequence(b)->tokens;
  // Finish A; B comes back, recomputing what it had from the cache where it can.
  StepResult finish_a;
  finish_a.updates.push_back({.seq = a, .finish = SeqStatus::finished_aborted});
  out = scheduler.schedule();
  scheduler.update(finish_a);
  out = scheduler.schedule();
  const ScheduledChunk* chunk_b = chunk_of(out, b);
  REQUIRE(chunk_b != nullptr);
  CHECK(chunk_b->start_position + chunk_b->num_tokens() == static_cast<int32_t>(b_tokens.size()));
  CHECK(chunk_b->start_position > 0);  // its computed blocks were cached when it was preempted
  CHECK(chunk_b->sample_for == std::vector<SeqId>{b});
  CHECK(scheduler.stats().num_preemptions == 1);
  scheduler.update(sample_all(out));
  REQUIRE(scheduler.kv().validate().ok());
}

TEST_CASE("n choices prefill once, fork, and copy the shared partial block on first write") {
  BatchScheduler scheduler({.max_num_batched_tokens = 64, .max_context = 64}, {.num_blocks = 16, .block_size = 4});
  auto ids = scheduler.add({.id = 1, .prompt = prompt_of(6), .n = 3});
  REQUIRE(ids->size() == 3);
  SchedulerOutput out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].sample_for == *ids);
  StepResult result;
  for (std::size_t c = 0; c < 3; ++c) result.updates.push_back({.seq = (*ids)[c], .token = static_cast<TokenId>(c)});
  scheduler.update(result);
  CHECK(scheduler.num_running() == 3);
  for (std::size_t c = 0; c < 3; ++c) {
    CHECK(scheduler.sequence((*ids)[c])->tokens.back() == static_cast<TokenId>(c));
    CHECK(scheduler.sequence((*ids)[c])->num_computed_tokens == 6);
  }
  REQUIRE(scheduler.kv().validate().ok());
  out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 3);
  CHECK(out.block_copies.size() == 2);  // two of the three copy block 1; the last writes in place
  for (const BlockCopy& copy : out.block_copies) CHECK(copy.src == out.chunks[2].block_table[1]);
  CHECK(out.chunks[0].block_table[0] == out.chunks[1].block_table[0]);  // full block stays shared
  scheduler.update(sample_all(out));
  REQUIRE(scheduler.kv().validate().ok());
}

TEST_CASE("max_num_seqs counts the choices a request will fork into") {
  BatchScheduler scheduler({.max_num_seqs = 3, .max_num_batched_tokens = 64, .max_context = 64},
                           {.num_blocks = 32, .block_size = 4});
  REQUIRE(scheduler.add({.id = 1, .prompt = prompt_of(4), .n = 2}).ok());
  REQUIRE(scheduler.add({.id = 2, .prompt = prompt_of(4, 40), .n = 2}).ok());
  REQUIRE(scheduler.add({.id = 3, .prompt = prompt_of(4, 80)}).ok());
  SchedulerOutput out = scheduler.schedule();
  CHECK(out.chunks.size() == 1);  // request 2 (2 seats) waits, and request 3 may not overtake it
  CHECK(scheduler.num_waiting() == 2);
}

TEST_CASE("finish_request frees every block now, wherever the request is") {
  BatchScheduler scheduler({.max_num_batched_tokens = 6, .max_context = 64}, {.num_blocks = 16, .block_size = 4});
  const SeqId decoding = scheduler.add({.id = 1, .prompt = prompt_of(3)})->front();
  SchedulerOutput out = scheduler.schedule();
  scheduler.update(sample_all(out));
  const SeqId prefilling = scheduler.add({.id = 2, .prompt = prompt_of(12, 50)})->front();
  const SeqId queued = scheduler.add({.id = 3, .prompt = prompt_of(5, 90)})->front();
  out = scheduler.schedule();  // 1 decodes, 2 prefills 5 of 12, 3 waits (budget)
  REQUIRE(chunk_of(out, prefilling) != nullptr);
  REQUIRE(chunk_of(out, queued) == nullptr);
  scheduler.update(sample_all(out));
  CHECK(scheduler.sequence(decoding)->status == SeqStatus::running);
  for (RequestId id : {1, 2, 3}) {
    std::vector<FinishedSeq> finished = scheduler.finish_request(id, SeqStatus::finished_aborted, "client left");
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].status == SeqStatus::finished_aborted);
    CHECK(finished[0].detail == "client left");
    REQUIRE(scheduler.kv().validate().ok());
  }
  CHECK(scheduler.finish_request(1, SeqStatus::finished_aborted, "").empty());
  const KVStats kv = scheduler.kv().stats();
  CHECK(kv.num_sequences == 0);
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
  CHECK_FALSE(scheduler.has_unfinished());
}

TEST_CASE("a failed step leaves the block tables and the cache as they were") {
  BatchScheduler scheduler({.max_num_batched_tokens = 64, .max_context = 64}, {.num_blocks = 16, .block_size = 4});
  const SeqId a = scheduler.add({.id = 1, .prompt = prompt_of(7)})->front();
  SchedulerOutput out = scheduler.schedule();
  scheduler.update(sample_all(out));
  const KVStats before = scheduler.kv().stats();
  const std::vector<BlockId> table(scheduler.kv().block_table(a).begin(), scheduler.kv().block_table(a).end());
  out = scheduler.schedule();  // decode at position 7 grows the table to 2 blocks... then fails
  scheduler.fail_step();
  const KVStats after = scheduler.kv().stats();
  CHECK(after.num_free_blocks == before.num_free_blocks);
  CHECK(after.num_cached_blocks == before.num_cached_blocks);
  CHECK(std::equal(table.begin(), table.end(), scheduler.kv().block_table(a).begin(), scheduler.kv().block_table(a).end()));
  CHECK(scheduler.sequence(a)->num_computed_tokens == 7);
  REQUIRE(scheduler.kv().validate().ok());
  // The same step can simply be scheduled again.
  out = scheduler.schedule();
  REQUIRE(out.chunks.size() == 1);
  CHECK(out.chunks[0].start_position == 7);
}

TEST_CASE("a failed step undoes its copy-on-write: the retried step copies again") {
  BatchScheduler scheduler({.max_num_batched_tokens = 64, .max_context = 64}, {.num_blocks = 16, .block_size = 4});
  // 6 tokens: the second block is partial, and n = 2 shares it after the fork.
  const std::vector<SeqId> ids = scheduler.add({.id = 1, .prompt = prompt_of(6), .n = 2}).value();
  SchedulerOutput out = scheduler.schedule();
  scheduler.update(sample_all(out));  // prefill, first token, fork
  REQUIRE(scheduler.kv().validate().ok());
  REQUIRE(ids.size() == 2);
  std::vector<std::vector<BlockId>> tables;
  for (SeqId id : ids) tables.emplace_back(scheduler.kv().block_table(id).begin(), scheduler.kv().block_table(id).end());
  CHECK(tables[0] == tables[1]);  // both choices on the same blocks
  const KVStats before = scheduler.kv().stats();

  out = scheduler.schedule();  // both decode into the shared partial block: one of them copies it
  REQUIRE(out.block_copies.size() == 1);
  const BlockCopy copy = out.block_copies[0];
  scheduler.fail_step();
  REQUIRE(scheduler.kv().validate().ok());
  for (std::size_t c = 0; c < 2; ++c) {
    const auto table = scheduler.kv().block_table(ids[c]);
    CHECK(std::equal(table.begin(), table.end(), tables[c].begin(), tables[c].end()));
  }
  CHECK(scheduler.kv().stats().num_free_blocks == before.num_free_blocks);

  // The retried step must copy again: the copy of the failed pass may never have been made.
  out = scheduler.schedule();
  REQUIRE(out.block_copies.size() == 1);
  CHECK(out.block_copies[0].src == copy.src);
  scheduler.update(sample_all(out));
  REQUIRE(scheduler.kv().validate().ok());
  CHECK(scheduler.kv().block_table(ids[0])[1] != scheduler.kv().block_table(ids[1])[1]);
}

TEST_CASE("more choices than max_num_seqs can never run: ignored, not stuck") {
  BatchScheduler scheduler({.max_num_seqs = 2, .max_context = 64}, {.num_blocks = 16, .block_size = 4});
  REQUIRE(scheduler.add({.id = 1, .prompt = prompt_of(4), .n = 3}).ok());
  SchedulerOutput out = scheduler.schedule();
  CHECK(out.chunks.empty());
  REQUIRE(out.finished.size() == 3);
  CHECK(out.finished[0].detail == "3 choices cannot run at once with max_num_seqs 2");
  CHECK_FALSE(scheduler.has_unfinished());
}

// Random requests (shared prefixes, n = 2 forks, a pool small enough to preempt and evict); a
// quarter of the steps fail. A failed step leaves every sequence it did not preempt as it was
// (block table, computed tokens, queue), sequences it admitted wait again, and scheduled again it
// gives the same chunks unless its scheduling preempted or evicted. The invariants hold throughout.
TEST_CASE("random workload: failed steps roll back and are scheduled again the same way") {
  BatchScheduler scheduler({.max_num_seqs = 6, .max_num_batched_tokens = 16, .max_context = 64},
                           {.num_blocks = 24, .block_size = 4});
  std::mt19937 rng(17);
  const std::vector<std::vector<TokenId>> prefixes = {prompt_of(9, 10), prompt_of(6, 40), prompt_of(13, 70)};
  RequestId next_request = 1;
  std::vector<SeqId> all_seqs;
  int64_t failed = 0, retried_same = 0, admissions_undone = 0;
  auto sample = [&](const SchedulerOutput& out) {
    StepResult result;
    for (const ScheduledChunk& chunk : out.chunks) {
      for (SeqId seq : chunk.sample_for) {
        const bool done = scheduler.sequence(seq)->num_tokens() + 1 >= 30 || rng() % 16 == 0;
        result.updates.push_back({.seq = seq,
                                  .token = static_cast<TokenId>(rng() % 5),
                                  .finish = done ? SeqStatus::finished_stopped : SeqStatus::running});
      }
    }
    return result;
  };
  for (int step = 0; step < 3000 && (step < 2000 || scheduler.has_unfinished()); ++step) {
    if (step < 2000 && rng() % 3 == 0) {
      std::vector<TokenId> prompt = prefixes[rng() % prefixes.size()];
      for (int i = static_cast<int>(rng() % 6); i > 0; --i) prompt.push_back(static_cast<TokenId>(rng() % 5));
      auto ids = scheduler.add({.id = next_request++, .prompt = prompt, .n = 1 + static_cast<int32_t>(rng() % 2)});
      REQUIRE(ids.ok());
      all_seqs.insert(all_seqs.end(), ids->begin(), ids->end());
    }
    struct Before {
      std::vector<BlockId> table;
      int32_t num_computed_tokens;
      SeqStatus status;
    };
    std::map<SeqId, Before> before;
    for (SeqId id : all_seqs) {
      if (const Sequence* s = scheduler.sequence(id)) {
        const auto table = scheduler.kv().block_table(id);
        before[id] = {.table = {table.begin(), table.end()},
                      .num_computed_tokens = s->num_computed_tokens,
                      .status = s->status};
      }
    }
    const SchedulerStats stats_before = scheduler.stats();
    const SchedulerOutput out = scheduler.schedule();
    REQUIRE(scheduler.kv().validate().ok());
    if (out.empty() || rng() % 4 != 0) {
      scheduler.update(sample(out));
      const Status status = scheduler.kv().validate();
      INFO("step " << step << ": " << status.message());
      REQUIRE(status.ok());
      continue;
    }
    ++failed;
    const int64_t evicted = scheduler.stats().kv.num_evicted_blocks - stats_before.kv.num_evicted_blocks;
    scheduler.fail_step();
    const Status status = scheduler.kv().validate();
    INFO("step " << step << ": " << status.message());
    REQUIRE(status.ok());
    const std::set<SeqId> preempted(out.preempted.begin(), out.preempted.end());
    for (const auto& [id, was] : before) {
      INFO("sequence " << id);
      const Sequence* s = scheduler.sequence(id);
      REQUIRE(s != nullptr);
      if (preempted.contains(id)) {
        CHECK(s->status == SeqStatus::preempted);
        CHECK_FALSE(scheduler.kv().contains(id));
        continue;
      }
      CHECK(s->status == was.status);
      CHECK(s->num_computed_tokens == was.num_computed_tokens);
      if (was.status != SeqStatus::running && chunk_of(out, id) != nullptr) ++admissions_undone;
      const auto table = scheduler.kv().block_table(id);
      CHECK(std::equal(table.begin(), table.end(), was.table.begin(), was.table.end()));
    }
    const SchedulerStats stats_after = scheduler.stats();
    CHECK(stats_after.num_running == stats_before.num_running - static_cast<int32_t>(preempted.size()));
    CHECK(stats_after.num_waiting == stats_before.num_waiting + static_cast<int32_t>(preempted.size()));
    CHECK(stats_after.prefix_query_tokens == stats_before.prefix_query_tokens);
    CHECK(stats_after.prefix_hit_tokens == stats_before.prefix_hit_tokens);
    if (!preempted.empty() || evicted > 0) continue;
    const SchedulerOutput retry = scheduler.schedule();
    REQUIRE(retry.chunks.size() == out.chunks.size());
    for (std::size_t c = 0; c < out.chunks.size(); ++c) {
      CHECK(retry.chunks[c].seq == out.chunks[c].seq);
      CHECK(retry.chunks[c].start_position == out.chunks[c].start_position);
      CHECK(retry.chunks[c].token_ids == out.chunks[c].token_ids);
      CHECK(retry.chunks[c].sample_for == out.chunks[c].sample_for);
    }
    CHECK(retry.block_copies.size() == out.block_copies.size());
    ++retried_same;
    scheduler.update(sample(retry));
    REQUIRE(scheduler.kv().validate().ok());
  }
  CHECK_FALSE(scheduler.has_unfinished());
  CHECK(failed > 100);
  CHECK(retried_same > 50);
  CHECK(admissions_undone > 20);
  CHECK(scheduler.stats().num_preemptions > 0);
  CHECK(scheduler.stats().kv.num_evicted_blocks > 0);
  const KVStats kv = scheduler.stats().kv;
  CHECK(kv.num_free_blocks + kv.num_evictable_blocks == kv.num_blocks);
}
