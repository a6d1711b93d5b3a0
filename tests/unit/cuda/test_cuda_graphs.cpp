// CUDA graphs for decode passes (CudaDevice::run_forward, "cuda_graphs": "on"): a forward recorded once
// and replayed gives the bits of the same forward run unrecorded with the same launch shapes
// ("plans"), over decode steps whose token ids, positions and block tables change between replays
// (every input the recording must not have baked in); a new batch size or table width records anew;
// a prefill pass is never recorded. The forward is a decoder layer in small: embedding, RMSNorm, the
// qkv GEMM, RoPE with the KV write, paged attention (split over keys), the output GEMM.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda_device.hpp"  // ops/src: the graph counters
#include "cuda_test_util.hpp"
#include "llaisys/model/forward_batch.hpp"
#include "llaisys/ops/attention.hpp"
#include "llaisys/ops/embedding.hpp"
#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/linear.hpp"
#include "llaisys/ops/pass.hpp"
#include "llaisys/ops/rms_norm.hpp"
#include "llaisys/ops/rope_kv.hpp"
#include "llaisys/ops/weights.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

namespace {

constexpr int64_t kVocab = 97, kHidden = 64, kQHeads = 4, kKvHeads = 2, kHeadDim = 32, kBlock = 16;
constexpr int64_t kQkv = (kQHeads + 2 * kKvHeads) * kHeadDim;

TensorView host_rows(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return TensorView(const_cast<float*>(v.data()), DType::f32, Shape{rows, cols});
}

// One device with its weights, KV pool and activations, running the small forward.
struct Rig {
  std::unique_ptr<ops::DeviceContext> ctx;
  ops::Tensor embed, norm;
  ops::LinearWeight qkv, out;
  std::unique_ptr<ops::Rope> rope;
  ops::KvCache kv;
  ops::Buffer work;

  explicit Rig(std::string_view graphs) {
    auto opened = ops::make_cuda_context({.device = 0, .graphs = graphs});
    REQUIRE(opened.ok());
    ctx = std::move(opened).value();
    const std::vector<float> table = random_floats(kVocab * kHidden, 1), gamma = random_floats(kHidden, 2, 0.5f, 1.5f);
    const std::vector<float> wqkv = random_floats(kQkv * kHidden, 3, -0.2f, 0.2f);
    const std::vector<float> wo = random_floats(kHidden * kQHeads * kHeadDim, 4, -0.2f, 0.2f);
    embed = std::move(ops::upload_matrix(*ctx, host_rows(table, kVocab, kHidden), nullptr)).value();
    norm = std::move(ops::upload_vector(*ctx, TensorView(const_cast<float*>(gamma.data()), DType::f32, Shape{kHidden})))
               .value();
    const TensorView q_parts[] = {host_rows(wqkv, kQkv, kHidden)};
    qkv = std::move(ops::prepare_linear(*ctx, q_parts, {}, nullptr)).value();
    const TensorView o_parts[] = {host_rows(wo, kHidden, kQHeads * kHeadDim)};
    out = std::move(ops::prepare_linear(*ctx, o_parts, {}, nullptr)).value();
    std::vector<double> inv_freq(kHeadDim / 2);
    for (std::size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / kHeadDim);
    rope = std::move(ctx->make_rope({.inv_freq = inv_freq}, 4096)).value();
    kv = std::move(ops::KvCache::create(*ctx, {.num_layers = 1, .num_kv_heads = kKvHeads, .head_dim = kHeadDim,
                                               .dtype = DType::bf16},
                                        {.num_blocks = 256, .block_size = static_cast<int32_t>(kBlock)}))
             .value();
    // x f32, h bf16, qkv f32, attn bf16, y f32: 64 rows of each at most. Filled with NaN (all bits
    // set, in f32 and bf16 alike): a row that some kernel of a pass (recorded or not) failed to write
    // before the next one read it makes the outputs NaN, which step() refuses, so "on" and "plans"
    // agreeing cannot come from both reading the same stale bytes.
    const std::size_t bytes = 64 * (kHidden * 4 + kHidden * 2 + kQkv * 4 + kQHeads * kHeadDim * 2 + kHidden * 4);
    work = std::move(ctx->allocate(bytes)).value();
    const std::vector<unsigned char> poison(bytes, 0xFF);
    REQUIRE(ctx->copy_from_host(work.data(), poison.data(), bytes).ok());
  }

  // Runs one pass and returns y [t, hidden] (f32) of the tokens asked for as outputs (all of them).
  std::vector<float> step(const ForwardBatch& batch) {
    const int64_t t = batch.num_tokens();
    auto pass = ctx->begin_pass(batch, {.num_q_heads = kQHeads, .num_kv_heads = kKvHeads, .head_dim = kHeadDim,
                                        .block_size = kBlock, .rope = rope.get()});
    REQUIRE(pass.ok());
    const Device dev = ctx->device();
    auto* base = static_cast<std::byte*>(work.data());
    auto* x = reinterpret_cast<float*>(base);
    auto* h = base + 64 * kHidden * 4;
    auto* qkv_rows = reinterpret_cast<float*>(h + 64 * kHidden * 2);
    auto* attn = reinterpret_cast<std::byte*>(qkv_rows + 64 * kQkv);
    auto* y = reinterpret_cast<float*>(attn + 64 * kQHeads * kHeadDim * 2);
    auto view = [&](void* p, DType dtype, int64_t cols) {
      return TensorView(p, dtype, Shape{t, cols}, Shape{cols, 1}, dev);
    };
    auto heads = [&](int64_t offset, int64_t n) {
      return TensorView(qkv_rows + offset, DType::f32, Shape{t, n, kHeadDim}, Shape{kQkv, kHeadDim, 1}, dev);
    };
    const ops::Pass& p = **pass;
    const auto forward = [&]() -> Status {
      LLAISYS_RETURN_IF_ERROR(ops::embedding(*ctx, p, embed, view(x, DType::f32, kHidden)));
      LLAISYS_RETURN_IF_ERROR(ops::rms_norm(*ctx, view(x, DType::f32, kHidden), norm, 1e-6f, view(h, DType::bf16, kHidden)));
      LLAISYS_RETURN_IF_ERROR(ops::linear(*ctx, view(h, DType::bf16, kHidden), qkv, view(qkv_rows, DType::f32, kQkv)));
      LLAISYS_RETURN_IF_ERROR(ops::rope_write_kv(*ctx, p, kv.layer(0), heads(0, kQHeads), heads(kQHeads * kHeadDim, kKvHeads),
                                                 heads((kQHeads + kKvHeads) * kHeadDim, kKvHeads)));
      LLAISYS_RETURN_IF_ERROR(ops::attention(*ctx, p, kv.layer(0), heads(0, kQHeads), {.scale = 0.17f},
                                             view(attn, DType::bf16, kQHeads * kHeadDim)));
      return ops::linear(*ctx, view(attn, DType::bf16, kQHeads * kHeadDim), out, view(y, DType::f32, kHidden));
    };
    const ops::ForwardKey key{.activations = work.data(), .kv_cache = kv.layer(0).k, .num_outputs = t,
                              .output_width = kHidden};
    REQUIRE(ctx->run_forward(key, forward).ok());
    std::vector<float> result(static_cast<std::size_t>(t * kHidden));
    REQUIRE(ctx->copy_to_host(result.data(), y, result.size() * sizeof(float)).ok());
    REQUIRE(std::all_of(result.begin(), result.end(), [](float v) { return std::isfinite(v); }));
    return result;
  }

  ops::CudaDevice::GraphStats stats() const { return static_cast<const ops::CudaDevice&>(*ctx).graph_stats(); }
};

// Sequences s = 0..n-1, sequence s owning blocks 32 s .. 32 s + 31 (contexts of up to 512 tokens).
struct Batch {
  std::vector<TokenId> tokens;
  std::vector<int32_t> positions, seqs, outputs, lens;
  std::vector<std::vector<BlockId>> tables;
  std::vector<const BlockId*> table_ptrs;
  ForwardBatch view() {
    table_ptrs.clear();
    for (const auto& t : tables) table_ptrs.push_back(t.data());
    return ForwardBatch{.token_ids = tokens, .positions = positions, .seq_indices = seqs, .block_tables = table_ptrs,
                        .block_table_lens = lens, .output_token_indices = outputs};
  }
};

// Every sequence of `lengths[s]` tokens so far adds one token (a decode pass); lengths grow by one.
Batch decode_batch(std::vector<int32_t>& lengths, uint32_t seed) {
  Batch b;
  std::mt19937 rng(seed);
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const int32_t p = lengths[s]++;
    b.tokens.push_back(static_cast<TokenId>(rng() % kVocab));
    b.positions.push_back(p);
    b.seqs.push_back(static_cast<int32_t>(s));
    b.outputs.push_back(static_cast<int32_t>(s));
    const int32_t blocks = p / static_cast<int32_t>(kBlock) + 1;
    std::vector<BlockId> table(static_cast<std::size_t>(blocks));
    std::iota(table.begin(), table.end(), static_cast<BlockId>(32 * s));
    b.tables.push_back(std::move(table));
    b.lens.push_back(blocks);
  }
  return b;
}

// One prefill pass of `length` tokens per sequence.
Batch prefill_batch(std::vector<int32_t>& lengths, int32_t length, uint32_t seed) {
  Batch b;
  std::mt19937 rng(seed);
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const int32_t blocks = (length + static_cast<int32_t>(kBlock) - 1) / static_cast<int32_t>(kBlock);
    std::vector<BlockId> table(static_cast<std::size_t>(blocks));
    std::iota(table.begin(), table.end(), static_cast<BlockId>(32 * s));
    b.tables.push_back(std::move(table));
    b.lens.push_back(blocks);
    for (int32_t p = 0; p < length; ++p) {
      b.tokens.push_back(static_cast<TokenId>(rng() % kVocab));
      b.positions.push_back(p);
      b.seqs.push_back(static_cast<int32_t>(s));
      b.outputs.push_back(static_cast<int32_t>(b.tokens.size() - 1));
    }
    lengths[s] = length;
  }
  return b;
}

}  // namespace

TEST_CASE("cuda graphs: replayed decode passes give the bits of unrecorded ones", "[cuda][graphs]") {
  Rig on("on"), plans("plans");
  std::vector<int32_t> len_on(3, 0), len_plans(3, 0);
  // A prefill (not recorded), then 3 sequences decoding from 12 to 300 tokens: table widths 16 (up to
  // 256 keys) then 32, so two recordings of batch size 3 and ~285 replays with new ids, positions
  // and tables each time; then 2 of the sequences alone (a third recording).
  {
    Batch a = prefill_batch(len_on, 12, 5), b = prefill_batch(len_plans, 12, 5);
    CHECK(on.step(a.view()) == plans.step(b.view()));
  }
  CHECK(on.stats().recorded == 0);
  int steps = 0;
  while (len_on[0] < 300) {
    Batch a = decode_batch(len_on, static_cast<uint32_t>(100 + steps)), b = decode_batch(len_plans, static_cast<uint32_t>(100 + steps));
    const std::vector<float> got = on.step(a.view()), want = plans.step(b.view());
    INFO("step " << steps << " position " << len_on[0] - 1);
    REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    ++steps;
  }
  CHECK(on.stats().recorded == 2);
  CHECK(on.stats().replayed == steps - 2);
  CHECK(plans.stats().recorded == 0);
  len_on.resize(2);
  len_plans.resize(2);
  for (int i = 0; i < 5; ++i) {
    Batch a = decode_batch(len_on, 900u + static_cast<uint32_t>(i)), b = decode_batch(len_plans, 900u + static_cast<uint32_t>(i));
    REQUIRE(on.step(a.view()) == plans.step(b.view()));
  }
  CHECK(on.stats().recorded == 3);
  CHECK(on.stats().replayed == steps - 2 + 4);
}

TEST_CASE("cuda graphs: an unknown cuda_graphs value is refused by name", "[cuda][graphs][host]") {
  // The value is checked before the device is looked for: the same answer with or without one.
  const auto opened = ops::make_cuda_context({.device = 0, .graphs = "yes"});
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().code() == ErrorCode::invalid_argument);
  CHECK_THAT(opened.status().message(), Catch::Contains("option cuda_graphs") && Catch::Contains("\"yes\""));
}
