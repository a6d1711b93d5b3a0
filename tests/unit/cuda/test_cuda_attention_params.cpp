// cuda::paged_attention with AttentionParams (sliding window, softcap) against a float64 reference
// on the same cache contents, and plan_attention's window handling.
//
// Batches mix prefill tiles (a 37-token prefill from 0, continuation chunks of 9 and 20 tokens) and
// decode tokens (positions 700, 64, 0). Windows: 1, smaller than a block and not a multiple of it,
// between, and larger than every key; with and without softcap; f32 and bf16 caches, f32 and bf16
// outputs; planner-chosen and forced (small) splits. Block-table entries of blocks wholly before
// the window of a sequence's earliest batch token, and past its last key, are -1: the kernel must
// not need them (the reference asserts it never does). Plans are made for the call's window, for
// none (one plan for Gemma 2's local and global layers: the kernel skips what lies before the
// window) and for a larger window.
//
// Tolerance, per output row, against the exact (float64) attention of the same f32 inputs:
//   S  = max over visible keys of scale * sum_d |q_d k_d|
//   Es = (D + 2) u S + 4 u softcap   (f32 dot with fmaf: gamma_D; the scale product; the division,
//                                     tanhf (2 ulp) and product of the softcap, which propagates
//                                     input errors with slope <= 1)
//   |gpu - ref| <= 2 max|v| (2 Es + 2 u S + 8 u + (n + n / 16 + 16) u)
// The first terms bound the relative error of every softmax weight (numerator and denominator
// move by Es each; expf's 2 ulp and its argument's rounding, <= u |s - m| <= 2 u S summed over
// the convex weights); the last bounds the f32 accumulation of n keys (fmaf chains, the per-chunk
// rescaling, the split combine). The factor 2 is margin. With |q|, |k| <= 2 this is ~5e-4 at
// D = 128 (~1e-3 at D = 256), orders of magnitude above the typical error (the test prints the largest
// error / tolerance); a key wrongly in or out of a window of w keys moves the output by about
// |v - out| / w, ~2e-3 for w = 250 and far more for the small windows. bf16 output adds 2^-8 |ref|.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "cuda/attention.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

struct Case {
  int64_t q_heads, kv_heads, head_dim, block_size;
  DType kv_dtype;
  int64_t keys_per_split;  // 0: the planner's choice
  int32_t window;
  float softcap;
  int32_t plan_window = -1;  // the window the plan is made for; -1: the call's window
};

struct Run {
  int32_t seq, first, count;
};

void run_case(Fixture& f, const Case& c, uint32_t seed) {
  const int64_t D = c.head_dim, bs = c.block_size;
  // Runs are consecutive in the batch; sequence 5 continues at 300 (crossing several blocks).
  const std::vector<Run> runs = {{0, 0, 37}, {1, 50, 9}, {2, 700, 1}, {3, 64, 1}, {4, 0, 1}, {5, 300, 20}};
  const int32_t num_seqs = 6;
  std::vector<int32_t> positions, seqs;
  std::vector<int32_t> seq_min(num_seqs, 1 << 30), seq_max(num_seqs, -1);
  for (const Run& r : runs) {
    for (int32_t i = 0; i < r.count; ++i) {
      positions.push_back(r.first + i);
      seqs.push_back(r.seq);
      seq_min[r.seq] = std::min(seq_min[r.seq], r.first + i);
      seq_max[r.seq] = std::max(seq_max[r.seq], r.first + i);
    }
  }
  const int64_t T = static_cast<int64_t>(positions.size());
  const int64_t max_pos = *std::max_element(seq_max.begin(), seq_max.end());
  const int64_t max_blocks = max_pos / bs + 1;
  const int64_t num_blocks = num_seqs * max_blocks;
  // Every sequence's blocks are a shuffled slice of the pool; freed blocks get -1.
  std::vector<int32_t> tables(static_cast<std::size_t>(num_blocks));
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), std::mt19937(seed));
  int64_t freed = 0;
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int64_t window_start = c.window > 0 ? std::max<int64_t>(0, seq_min[s] - c.window + 1) : 0;
    for (int64_t b = 0; b < max_blocks; ++b) {
      const bool before_window = (b + 1) * bs <= window_start;
      const bool past_end = b * bs > seq_max[s];
      if (before_window || past_end) {
        tables[static_cast<std::size_t>(s * max_blocks + b)] = -1;
        freed += before_window ? 1 : 0;
      }
    }
  }
  CAPTURE(freed);

  const std::size_t cache_size = static_cast<std::size_t>(num_blocks * c.kv_heads * bs * D);
  auto k_cache = random_floats(cache_size, seed + 1, -2.0f, 2.0f);
  auto v_cache = random_floats(cache_size, seed + 2, -1.0f, 1.0f);
  if (c.kv_dtype == DType::bf16) {
    k_cache = round_bf16(k_cache);
    v_cache = round_bf16(v_cache);
  }
  const auto q = random_floats(static_cast<std::size_t>(T * c.q_heads * D), seed + 3, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const cuda::AttentionParams params{.scale = scale, .softcap = c.softcap, .window = c.window};

  // float64 reference and per-row tolerance.
  const int64_t group = c.q_heads / c.kv_heads;
  const double u = kF32Eps;
  const double cap = static_cast<double>(c.softcap);
  std::vector<double> expected(static_cast<std::size_t>(T * c.q_heads * D));
  std::vector<double> tolerance(static_cast<std::size_t>(T * c.q_heads));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t p = positions[static_cast<std::size_t>(t)];
    const int32_t s = seqs[static_cast<std::size_t>(t)];
    const int32_t lo = c.window > 0 ? std::max(0, p - c.window + 1) : 0;
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t g = h / group;
      const float* qr = q.data() + (t * c.q_heads + h) * D;
      std::vector<double> score;
      std::vector<const float*> vrows;
      double S = 0.0;
      for (int32_t j = lo; j <= p; ++j) {
        const int32_t block = tables[static_cast<std::size_t>(s * max_blocks + j / bs)];
        REQUIRE(block >= 0);  // the test's own tables: a visible key is never in a freed block
        const int64_t off = ((block * c.kv_heads + g) * bs + j % bs) * D;
        double dot = 0.0, abs_dot = 0.0;
        for (int64_t d = 0; d < D; ++d) {
          dot += static_cast<double>(qr[d]) * static_cast<double>(k_cache[static_cast<std::size_t>(off + d)]);
          abs_dot += std::fabs(static_cast<double>(qr[d]) * static_cast<double>(k_cache[static_cast<std::size_t>(off + d)]));
        }
        double sc = dot * static_cast<double>(scale);
        if (cap > 0.0) sc = cap * std::tanh(sc / cap);
        score.push_back(sc);
        vrows.push_back(v_cache.data() + off);
        S = std::max(S, abs_dot * static_cast<double>(scale));
      }
      const double m = *std::max_element(score.begin(), score.end());
      double L = 0.0;
      for (double& sc : score) L += (sc = std::exp(sc - m));
      double* o = expected.data() + (t * c.q_heads + h) * D;
      for (std::size_t j = 0; j < score.size(); ++j) {
        for (int64_t d = 0; d < D; ++d) o[d] += score[j] / L * static_cast<double>(vrows[j][d]);
      }
      const double n = static_cast<double>(score.size());
      const double es = (static_cast<double>(D) + 2.0) * u * S + 4.0 * u * cap;
      // max |v| = 1.
      tolerance[static_cast<std::size_t>(t * c.q_heads + h)] =
          2.0 * (2.0 * es + 2.0 * u * S + 8.0 * u + (n + n / 16.0 + 16.0) * u);
    }
  }

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
  const int32_t plan_window = c.plan_window < 0 ? c.window : c.plan_window;
  auto plan = cuda::plan_attention(positions, seqs, c.q_heads, c.kv_heads, bs,
                                   cuda::AttentionParams{.window = plan_window}, 132, c.keys_per_split);
  REQUIRE(plan.ok());
  CAPTURE(plan_window, plan->max_splits, plan->keys_per_split, plan->tiles.size());
  cuda::AttentionWorkspace workspace;
  REQUIRE(workspace.prepare(*plan, c.q_heads, D, f.ctx.stream).ok());
  auto dout = to_device(std::vector<float>(expected.size(), NAN));
  auto dout16 = to_device(std::vector<bf16_t>(expected.size(), 0));
  REQUIRE(cuda::paged_attention(f.ctx, layer, batch, *plan, workspace, dq.data(), c.q_heads * D, c.q_heads, params,
                                dout.data(), c.q_heads * D)
              .ok());
  REQUIRE(cuda::paged_attention(f.ctx, layer, batch, *plan, workspace, dq.data(), c.q_heads * D, c.q_heads, params,
                                dout16.data(), c.q_heads * D)
              .ok());
  const auto got = to_host(dout);
  const auto got16 = from_bf16(to_host(dout16));

  double worst = 0.0;  // largest error / tolerance: printed, so the GPU run shows the margin
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double tol = tolerance[i / static_cast<std::size_t>(D)];
    const double err = std::fabs(static_cast<double>(got[i]) - expected[i]);
    const double err16 = std::fabs(static_cast<double>(got16[i]) - expected[i]);
    worst = std::max(worst, err / tol);
    INFO("element " << i << " (token " << i / static_cast<std::size_t>(c.q_heads * D) << ", position "
                    << positions[i / static_cast<std::size_t>(c.q_heads * D)] << "): gpu " << got[i] << ", bf16 "
                    << got16[i] << ", reference " << expected[i] << ", tolerance " << tol);
    REQUIRE(err <= tol);
    REQUIRE(err16 <= tol + kBf16Eps * std::fabs(expected[i]));
  }
  WARN("window " << c.window << " softcap " << c.softcap << ": max error / tolerance " << worst);
}

}  // namespace

TEST_CASE("cuda paged attention with sliding window and softcap matches a float64 reference",
          "[cuda][attention]") {
  Fixture f;
  const Case cases[] = {
      {4, 2, 64, 16, DType::f32, 0, 5, 0.0f},          // window smaller than a block
      {14, 2, 64, 16, DType::bf16, 0, 100, 0.0f},      // group 7, window not a block multiple
      {28, 4, 128, 16, DType::bf16, 0, 4096, 50.0f},   // window larger than every key, Gemma 2's cap
      {8, 8, 128, 32, DType::f32, 64, 37, 1.5f},       // forced small splits, softcap well inside tanh's bend
      {8, 2, 96, 8, DType::bf16, 32, 250, 0.0f},       // head_dim 96, block 8, split window
      {16, 1, 256, 16, DType::f32, 0, 1, 0.0f},        // window 1: only the token itself
      {8, 4, 128, 16, DType::f32, 0, 0, 1.5f},         // no window, softcap only
      {16, 8, 256, 16, DType::bf16, 48, 61, 30.0f},    // Gemma-2-like head_dim 256, group 2
      {32, 8, 128, 16, DType::bf16, 0, 17, 0.0f},      // Mistral-like group 4, window just over a block
      // One plan per pass for all layers: made without a window (the kernel skips the splits
      // wholly before the call's window, -1 entries there) or for a larger window.
      {8, 2, 128, 16, DType::bf16, 32, 45, 0.0f, 0},
      {16, 8, 256, 16, DType::f32, 0, 61, 30.0f, 0},
      {8, 4, 64, 16, DType::f32, 64, 20, 0.0f, 300},
  };
  uint32_t seed = 2000;
  for (const Case& c : cases) {
    CAPTURE(c.q_heads, c.kv_heads, c.head_dim, c.block_size, to_string(c.kv_dtype), c.keys_per_split, c.window,
            c.softcap, c.plan_window);
    run_case(f, c, seed);
    seed += 10;
  }
}

TEST_CASE("plan_attention with a window: splits start at each tile's window start", "[cuda][attention][host]") {
  // Decode at 30,000 with a 4,096-key window (Mistral): sized on the window, not the context.
  {
    auto plan = cuda::plan_attention(std::vector<int32_t>{30000}, std::vector<int32_t>{0}, 32, 8, 16,
                                     cuda::AttentionParams{.window = 4096}, 132);
    REQUIRE(plan.ok());
    CHECK(plan->window == 4096);
    const int64_t begin = (30000 - 4096 + 1) / 16 * 16;  // 25,904
    const int64_t span = 30001 - begin;
    const auto& tile = plan->tiles.at(0);
    CHECK(static_cast<int64_t>(tile.num_splits) * plan->keys_per_split >= span);
    CHECK(static_cast<int64_t>(tile.num_splits - 1) * plan->keys_per_split < span);
    CHECK(plan->keys_per_split <= 256);  // without the window it would be ~912
  }
  // Mixed batch, forced split size 32: every tile's splits cover exactly [begin, num_keys).
  const std::vector<int32_t> positions = {0, 1, 2, 3, 4, 5, 6, 7, 8, 900, 40, 41, 42, 3};
  const std::vector<int32_t> seqs = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 3};
  for (const int32_t window : {0, 1, 5, 16, 33, 100, 5000}) {
    CAPTURE(window);
    auto plan = cuda::plan_attention(positions, seqs, 8, 2, 16, cuda::AttentionParams{.window = window}, 132, 32);
    REQUIRE(plan.ok());
    REQUIRE(plan->keys_per_split == 32);
    int64_t rows = 0;
    for (const auto& tile : plan->tiles) {
      int32_t min_pos = positions[static_cast<std::size_t>(tile.first_token)];
      for (int32_t i = 0; i < tile.num_tokens; ++i) {
        min_pos = std::min(min_pos, positions[static_cast<std::size_t>(tile.first_token + i)]);
      }
      const int64_t first = window > 0 ? std::max<int64_t>(0, min_pos - window + 1) : 0;
      const int64_t begin = first / 16 * 16;
      const int64_t span = tile.num_keys - begin;
      CHECK(tile.num_splits == (span + 31) / 32);
      if (tile.num_splits > 1) {
        CHECK(tile.partial_offset == rows);
        rows += static_cast<int64_t>(tile.num_tokens) * 8 * tile.num_splits;
      }
    }
    CHECK(rows == plan->partial_rows);
  }
  CHECK(cuda::plan_attention(positions, seqs, 8, 2, 16, cuda::AttentionParams{.window = -1}, 132).status().code() ==
        ErrorCode::invalid_argument);
}

TEST_CASE("paged_attention rejects bad params and a plan made for a smaller window", "[cuda][attention][host]") {
  // Rejected before any CUDA call: runs without a device (null stream, no buffers).
  const cuda::CudaContext ctx{};
  const cuda::DeviceKvLayer layer{.dtype = DType::f32, .num_blocks = 4, .block_size = 16, .num_kv_heads = 2,
                                  .head_dim = 64};
  const std::vector<int32_t> positions = {0, 1};
  const std::vector<int32_t> seqs = {0, 0};
  const cuda::DeviceBatch batch{.num_tokens = 2};
  auto plan = cuda::plan_attention(positions, seqs, 4, 2, 16, cuda::AttentionParams{.window = 8}, 132);
  REQUIRE(plan.ok());
  const cuda::AttentionWorkspace workspace;
  float* out = nullptr;
  auto call = [&](const cuda::AttentionParams& params) {
    return cuda::paged_attention(ctx, layer, batch, *plan, workspace, nullptr, 4 * 64, 4, params, out, 4 * 64);
  };
  const Status no_window = call({.scale = 0.125f, .window = 0});  // the plan's splits skip keys it needs
  CHECK(no_window.code() == ErrorCode::invalid_argument);
  CHECK(no_window.message().find("window") != std::string::npos);
  CHECK(call({.scale = 0.125f, .window = 9}).code() == ErrorCode::invalid_argument);
  CHECK(call({.scale = 0.125f, .softcap = -1.0f, .window = 8}).code() == ErrorCode::invalid_argument);
  CHECK(call({.scale = 0.125f, .softcap = NAN, .window = 8}).code() == ErrorCode::invalid_argument);
  CHECK(call({.scale = INFINITY, .window = 8}).code() == ErrorCode::invalid_argument);
  CHECK(call({.scale = 0.125f, .window = -3}).code() == ErrorCode::invalid_argument);
  // The float-scale overload (no window) against a windowed plan.
  CHECK(cuda::paged_attention(ctx, layer, batch, *plan, workspace, nullptr, 4 * 64, 4, 0.125f, out, 4 * 64).code() ==
        ErrorCode::invalid_argument);
}
