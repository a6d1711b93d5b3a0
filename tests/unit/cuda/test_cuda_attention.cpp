// cuda::paged_attention against cpu::paged_attention on the same cache contents.
//
// Batches: a mixed prefill (two sequences of different lengths, one a continuation chunk) plus
// decode tokens with long contexts, so both the tiled prefill path and split-K (with its combine
// kernel) run; GQA groups of 1, 4 and 7 (qwen2-7b's 28 / 4); f32 and bf16 caches (the CPU cache
// holds the bf16 values as f32, so both see the same keys and values).
//
// Tolerance: each score q.k differs by at most 2 D u sum_d |q_d k_d| between summation orders
// (scaled), the exponentials by a few ulp (expf vs the canonical polynomial), and the output is a
// convex combination of V rows: |gpu - cpu| <= max|v| (2 max_score_error + 16 u) + 64 u max|v|.
// With |q|, |k| <= 2 and D <= 128 this is about 1e-4; a wrong key, mask or split merge is O(1e-1).
// bf16 output adds its rounding, 2^-8 |cpu|.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "cpu/attention.hpp"
#include "cpu/paged_kv.hpp"
#include "cuda/attention.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

struct Case {
  int64_t q_heads, kv_heads, head_dim, block_size;
  DType kv_dtype;
  int64_t keys_per_split;  // 0: the planner's choice
};

void run_case(Fixture& f, const Case& c, uint32_t seed) {
  const int64_t D = c.head_dim, bs = c.block_size;
  // (sequence, first position, tokens): prefills of 37 and 9 tokens (the second continues at 50),
  // then decode tokens at positions 700, 64 and 0.
  struct Run { int32_t seq, first, count; };
  const std::vector<Run> runs = {{0, 0, 37}, {1, 50, 9}, {2, 700, 1}, {3, 64, 1}, {4, 0, 1}};
  const int32_t num_seqs = 5;
  std::vector<int32_t> positions, seqs;
  int64_t max_pos = 0;
  for (const Run& r : runs) {
    for (int32_t i = 0; i < r.count; ++i) {
      positions.push_back(r.first + i);
      seqs.push_back(r.seq);
      max_pos = std::max<int64_t>(max_pos, r.first + i);
    }
  }
  const int64_t T = static_cast<int64_t>(positions.size());
  const int64_t max_blocks = max_pos / bs + 1;
  const int64_t num_blocks = num_seqs * max_blocks;
  // Every sequence's blocks are a shuffled slice of the pool.
  std::vector<int32_t> pool(static_cast<std::size_t>(num_blocks));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), std::mt19937(seed));
  const std::vector<int32_t>& tables = pool;  // [num_seqs, max_blocks]

  const std::size_t cache_size = num_blocks * c.kv_heads * bs * D;
  auto k_cache = random_floats(cache_size, seed + 1, -2.0f, 2.0f);
  auto v_cache = random_floats(cache_size, seed + 2, -1.0f, 1.0f);
  if (c.kv_dtype == DType::bf16) {
    k_cache = round_bf16(k_cache);
    v_cache = round_bf16(v_cache);
  }
  const auto q = random_floats(static_cast<std::size_t>(T * c.q_heads * D), seed + 3, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));

  std::vector<const int32_t*> table_ptrs;
  for (int32_t s = 0; s < num_seqs; ++s) table_ptrs.push_back(tables.data() + s * max_blocks);
  std::vector<float> expected(static_cast<std::size_t>(T * c.q_heads * D));
  cpu::paged_attention(f.cpu, {.k = k_cache.data(), .v = v_cache.data(), .block_size = bs, .num_kv_heads = c.kv_heads,
                               .head_dim = D},
                       {.num_tokens = T, .positions = positions.data(), .seq_indices = seqs.data(),
                        .block_tables = table_ptrs.data()},
                       q.data(), c.q_heads * D, c.q_heads, scale, expected.data(), c.q_heads * D);

  cuda::DeviceBuffer<float> kc32, vc32;
  cuda::DeviceBuffer<bf16_t> kc16, vc16;
  cuda::DeviceKvLayer layer{.dtype = c.kv_dtype, .num_blocks = num_blocks, .block_size = bs,
                            .num_kv_heads = c.kv_heads, .head_dim = D};
  if (c.kv_dtype == DType::f32) {
    kc32 = to_device(k_cache);
    vc32 = to_device(v_cache);
    layer.k = kc32.data();
    layer.v = vc32.data();
  } else {
    kc16 = to_device(to_bf16(k_cache));
    vc16 = to_device(to_bf16(v_cache));
    layer.k = kc16.data();
    layer.v = vc16.data();
  }
  auto dpos = to_device(positions);
  auto dseq = to_device(seqs);
  auto dtables = to_device(tables);
  auto dq = to_device(q);
  const cuda::DeviceBatch batch{.num_tokens = T, .positions = dpos.data(), .seq_indices = dseq.data(),
                                .block_tables = dtables.data(), .max_blocks_per_seq = max_blocks};
  auto plan = cuda::plan_attention(positions, seqs, c.q_heads, c.kv_heads, bs, 132, c.keys_per_split);
  REQUIRE(plan.ok());
  CAPTURE(plan->max_splits, plan->keys_per_split, plan->tiles.size());
  cuda::AttentionWorkspace workspace;
  REQUIRE(workspace.prepare(*plan, c.q_heads, D, f.ctx.stream).ok());
  auto dout = to_device(std::vector<float>(expected.size(), NAN));
  auto dout16 = to_device(std::vector<bf16_t>(expected.size(), 0));
  REQUIRE(cuda::paged_attention(f.ctx, layer, batch, *plan, workspace, dq.data(), c.q_heads * D, c.q_heads, scale,
                                dout.data(), c.q_heads * D)
              .ok());
  REQUIRE(cuda::paged_attention(f.ctx, layer, batch, *plan, workspace, dq.data(), c.q_heads * D, c.q_heads, scale,
                                dout16.data(), c.q_heads * D)
              .ok());
  const auto got = to_host(dout);
  const auto got16 = from_bf16(to_host(dout16));

  // max |v| = 1, |q|, |k| <= 2: sum_d |q_d k_d| <= 4 D.
  const double score_error = 2.0 * static_cast<double>(D) * kF32Eps * 4.0 * static_cast<double>(D) * static_cast<double>(scale);
  const double tolerance = 2.0 * score_error + 80.0 * kF32Eps;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i << " (token " << i / static_cast<std::size_t>(c.q_heads * D) << ")");
    REQUIRE(abs_diff(got[i], expected[i]) <= tolerance);
    REQUIRE(abs_diff(got16[i], expected[i]) <= tolerance + kBf16Eps * mag(expected[i]));
  }
}

}  // namespace

TEST_CASE("cuda paged attention matches cpu paged attention (prefill + decode, GQA, split-K)", "[cuda][attention]") {
  Fixture f;
  const Case cases[] = {
      {4, 2, 64, 16, DType::f32, 0},     // tiny-qwen2 shape
      {14, 2, 64, 16, DType::bf16, 0},   // qwen2-0.5b: group 7
      {28, 4, 128, 16, DType::bf16, 0},  // qwen2-7b
      {8, 8, 128, 32, DType::f32, 64},   // no GQA, forced small splits (prefill tiles split too)
      {8, 2, 96, 8, DType::bf16, 32},    // head_dim 96, block 8
      {16, 1, 256, 16, DType::f32, 0},   // group 16 (one token per tile), head_dim 256
  };
  uint32_t seed = 1000;
  for (const Case& c : cases) {
    CAPTURE(c.q_heads, c.kv_heads, c.head_dim, c.block_size, to_string(c.kv_dtype), c.keys_per_split);
    run_case(f, c, seed);
    seed += 10;
  }
}

TEST_CASE("plan_attention tiles, splits and rejects bad input", "[cuda][attention][host]") {
  // Host-only, but part of this suite: what the kernels rely on.
  const std::vector<int32_t> positions = {0, 1, 2, 3, 4, 900, 5};
  const std::vector<int32_t> seqs = {0, 0, 0, 0, 0, 1, 2};
  auto plan = cuda::plan_attention(positions, seqs, 8, 2, 16, 132);  // group 4: 4 tokens per tile
  REQUIRE(plan.ok());
  REQUIRE(plan->tiles.size() == 4);
  CHECK(plan->tiles[0].num_tokens == 4);
  CHECK(plan->tiles[1].first_token == 4);
  CHECK(plan->tiles[1].num_keys == 5);
  CHECK(plan->tiles[2].num_keys == 901);
  CHECK(plan->keys_per_split % 16 == 0);
  int64_t rows = 0;
  for (const auto& t : plan->tiles) {
    CHECK(static_cast<int64_t>(t.num_splits) * plan->keys_per_split >= t.num_keys);
    if (t.num_splits > 1) {
      CHECK(t.partial_offset == rows);
      rows += static_cast<int64_t>(t.num_tokens) * 8 * t.num_splits;
    }
  }
  CHECK(rows == plan->partial_rows);
  CHECK(cuda::plan_attention(positions, seqs, 8, 3, 16, 132).status().code() == ErrorCode::invalid_argument);
  CHECK(cuda::plan_attention(positions, std::vector<int32_t>{0}, 8, 2, 16, 132).status().code() ==
        ErrorCode::invalid_argument);
  CHECK(cuda::plan_attention(std::vector<int32_t>{-1}, std::vector<int32_t>{0}, 8, 2, 16, 132).status().code() ==
        ErrorCode::invalid_argument);
}

TEST_CASE("plan_attention with a key capacity: the launch shape depends on the batch size only", "[cuda][attention][host]") {
  // A captured decode pass (CUDA graphs) replays one launch shape for every batch of its size and
  // key capacity: max_splits, keys_per_split and partial_capacity must not move with the positions,
  // and every tile must still be covered by its own splits within max_splits.
  const int64_t capacity = 512, q_heads = 8, kv_heads = 2, block = 16;
  const std::vector<int32_t> seqs = {0, 1, 2};
  std::optional<cuda::AttentionPlan> first;
  for (const std::vector<int32_t>& positions : {std::vector<int32_t>{0, 5, 9}, std::vector<int32_t>{300, 17, 511},
                                               std::vector<int32_t>{511, 511, 511}, std::vector<int32_t>{40, 41, 42}}) {
    auto plan = cuda::plan_attention(positions, seqs, q_heads, kv_heads, block, cuda::AttentionParams{}, 132, 0, capacity);
    REQUIRE(plan.ok());
    REQUIRE(plan->tiles.size() == 3);
    if (!first) first = *plan;
    CHECK(plan->max_splits == first->max_splits);
    CHECK(plan->keys_per_split == first->keys_per_split);
    CHECK(plan->partial_capacity == first->partial_capacity);
    CHECK(static_cast<int64_t>(plan->max_splits) * plan->keys_per_split >= capacity);
    CHECK(plan->partial_capacity == 3 * q_heads * plan->max_splits);
    int64_t rows = 0;
    for (const auto& t : plan->tiles) {
      CHECK(t.num_splits <= plan->max_splits);
      CHECK(static_cast<int64_t>(t.num_splits) * plan->keys_per_split >= t.num_keys);
      if (t.num_splits > 1) rows += static_cast<int64_t>(t.num_tokens) * q_heads * t.num_splits;
    }
    CHECK(rows == plan->partial_rows);
    CHECK(plan->partial_rows <= plan->partial_capacity);
  }
  CHECK(first->max_splits > 1);  // 3 tiles x 2 kv heads leave 132 SMs room for several splits
  // A tile past the capacity is refused rather than given splits the launch shape lacks.
  CHECK(cuda::plan_attention(std::vector<int32_t>{512}, std::vector<int32_t>{0}, q_heads, kv_heads, block,
                             cuda::AttentionParams{}, 132, 0, capacity)
            .status()
            .code() == ErrorCode::invalid_argument);
}
