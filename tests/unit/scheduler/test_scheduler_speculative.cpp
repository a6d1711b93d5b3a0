// BatchScheduler's side of speculative decoding, with hand-made step results (no model): drafts
// scheduled after the last token, the rejected ones' slots and emptied blocks given back, only
// accepted tokens in the prefix cache, drafts dropped rather than preempting, back-off after misses.

#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/scheduler/batch_scheduler.hpp"

using namespace llaisys;

namespace {

// Proposes `next` tokens 100, 101, ... (capped by max_drafts) and counts its calls.
class FixedProposer final : public TokenProposer {
 public:
  void propose_tokens(std::span<const TokenId>, int32_t, int32_t max_drafts, std::vector<TokenId>& drafts) override {
    ++calls;
    for (int32_t i = 0; i < max_drafts; ++i) drafts.push_back(100 + i);
  }
  std::string_view method() const override { return "fixed"; }
  int calls = 0;
};

std::vector<TokenId> prompt_of(int32_t n) {
  std::vector<TokenId> tokens(static_cast<std::size_t>(n));
  std::iota(tokens.begin(), tokens.end(), 10);
  return tokens;
}

struct Fixture {
  std::shared_ptr<FixedProposer> proposer = std::make_shared<FixedProposer>();
  BatchScheduler scheduler;
  SeqId seq = -1;
  explicit Fixture(int32_t num_blocks, int32_t k = 4)
      : scheduler({.max_num_seqs = 4, .max_num_batched_tokens = 64, .max_context = 256, .proposer = proposer},
                  {.num_blocks = num_blocks, .block_size = 4}) {
    auto ids = scheduler.add({.id = 1, .prompt = prompt_of(6), .num_speculative_tokens = k});
    REQUIRE(ids.ok());
    seq = ids->front();
    const SchedulerOutput prefill = scheduler.schedule();
    REQUIRE(prefill.chunks.size() == 1);
    REQUIRE(prefill.chunks[0].num_draft_tokens == 0);  // a prompt is not speculated
    scheduler.update({.updates = {{.seq = seq, .token = 50}}});
  }
};

}  // namespace

TEST_CASE("speculative scheduler: a partial accept keeps the accepted tokens' K/V and gives the rest back") {
  Fixture f(32);
  const Sequence& s = *f.scheduler.sequence(f.seq);
  REQUIRE(s.num_tokens() == 7);
  const SchedulerOutput step = f.scheduler.schedule();
  REQUIRE(step.chunks.size() == 1);
  const ScheduledChunk& chunk = step.chunks[0];
  CHECK(chunk.num_draft_tokens == 4);
  CHECK(chunk.token_ids == std::vector<TokenId>{50, 100, 101, 102, 103});
  CHECK(chunk.start_position == 6);
  CHECK(f.scheduler.kv().num_tokens(f.seq) == 11);  // 6 computed + last token + 4 drafts
  CHECK(f.scheduler.kv().block_table(f.seq).size() == 3);
  // Drafts 100 and 101 accepted, then the model's own 7: three tokens.
  f.scheduler.update({.updates = {{.seq = f.seq, .token = 100, .extra_tokens = {101, 7}}}});
  CHECK(s.num_tokens() == 10);
  CHECK(s.num_computed_tokens == 9);
  CHECK(f.scheduler.kv().num_tokens(f.seq) == 9);
  CHECK(f.scheduler.kv().block_table(f.seq).size() == 3);
  CHECK(f.scheduler.stats().num_draft_tokens == 4);
  CHECK(f.scheduler.stats().num_accepted_draft_tokens == 2);
  REQUIRE(f.scheduler.kv().validate().ok());
  // Two full blocks of accepted tokens are cached; nothing of the rejected 102, 103.
  std::vector<TokenId> accepted = prompt_of(6);
  accepted.insert(accepted.end(), {50, 100, 101, 7});
  CHECK(f.scheduler.kv().peek_prefix(accepted, "") == 8);
}

TEST_CASE("speculative scheduler: rejecting every draft frees the blocks only drafts used") {
  Fixture f(32);
  const Sequence& s = *f.scheduler.sequence(f.seq);
  f.scheduler.schedule();
  CHECK(f.scheduler.kv().block_table(f.seq).size() == 3);
  const int32_t free_during = f.scheduler.kv().num_free_blocks();
  f.scheduler.update({.updates = {{.seq = f.seq, .token = 9}}});  // the first draft was wrong
  CHECK(s.num_tokens() == 8);
  CHECK(s.num_computed_tokens == 7);
  CHECK(f.scheduler.kv().num_tokens(f.seq) == 7);
  CHECK(f.scheduler.kv().block_table(f.seq).size() == 2);  // the third block held drafts only
  CHECK(f.scheduler.kv().num_free_blocks() == free_during + 1);
  CHECK(f.scheduler.stats().num_accepted_draft_tokens == 0);
  REQUIRE(f.scheduler.kv().validate().ok());
  // The block the drafts completed ([14 15 50 100]) was computed but 100 was rejected: not cached.
  std::vector<TokenId> drafted = prompt_of(6);
  drafted.insert(drafted.end(), {50, 100, 101, 102, 103, 0});
  CHECK(f.scheduler.kv().peek_prefix(drafted, "") == 4);
  // Back-off: the next decode step runs without drafts (and without asking the proposer).
  const int calls = f.proposer->calls;
  const SchedulerOutput next = f.scheduler.schedule();
  CHECK(next.chunks[0].num_draft_tokens == 0);
  CHECK(f.proposer->calls == calls);
  f.scheduler.update({.updates = {{.seq = f.seq, .token = 9}}});
  CHECK(f.scheduler.schedule().chunks[0].num_draft_tokens == 4);  // probing again
}

TEST_CASE("speculative scheduler: drafts that do not fit are dropped, nobody is preempted for them") {
  Fixture f(2);  // 8 slots: the sequence holds 6 computed + its last token
  const SchedulerOutput step = f.scheduler.schedule();
  REQUIRE(step.chunks.size() == 1);
  CHECK(step.preempted.empty());
  CHECK(step.chunks[0].num_draft_tokens == 1);  // the context (the pool's 8 slots) allows one draft
  f.scheduler.update({.updates = {{.seq = f.seq, .token = 100}}});
  REQUIRE(f.scheduler.kv().validate().ok());
  CHECK(f.scheduler.sequence(f.seq)->num_tokens() == 8);
}

TEST_CASE("speculative scheduler: a failed step rolls the drafts' slots back") {
  Fixture f(32);
  f.scheduler.schedule();
  CHECK(f.scheduler.kv().num_tokens(f.seq) == 11);
  f.scheduler.fail_step();
  CHECK(f.scheduler.kv().num_tokens(f.seq) == 6);
  CHECK(f.scheduler.sequence(f.seq)->num_tokens() == 7);
  REQUIRE(f.scheduler.kv().validate().ok());
  const SchedulerOutput again = f.scheduler.schedule();
  CHECK(again.chunks[0].token_ids.front() == 50);
}
