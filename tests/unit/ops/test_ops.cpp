// The ops layer on the CPU (llaisys/ops/*.hpp): shapes checked once with messages naming the op and
// the argument, weights prepared as the device reads them, and each op against an independent
// float64 reference (the kernels' own suites check ISA paths and batch invariance in depth).

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cpu/cpu_isa.hpp"
#include "cpu/linear_int8.hpp"
#include "cpu/quant.hpp"
#include "llaisys/model/forward_batch.hpp"
#include "llaisys/ops/activation.hpp"
#include "llaisys/ops/argmax.hpp"
#include "llaisys/ops/attention.hpp"
#include "llaisys/ops/elementwise.hpp"
#include "llaisys/ops/embedding.hpp"
#include "llaisys/ops/kv_cache.hpp"
#include "llaisys/ops/linear.hpp"
#include "llaisys/ops/rms_norm.hpp"
#include "llaisys/ops/rope_kv.hpp"

using namespace llaisys;

// The references are float64 expressions over the f32 inputs: every promotion is intended.
#pragma GCC diagnostic ignored "-Wdouble-promotion"

namespace {

std::unique_ptr<ops::DeviceContext> cpu_context() {
  auto ctx = ops::make_cpu_context({.num_threads = 2});
  REQUIRE(ctx.ok());
  return std::move(ctx).value();
}

std::vector<float> random_values(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TensorView rows(std::vector<float>& v, int64_t r, int64_t c) { return TensorView(v.data(), DType::f32, Shape{r, c}); }

}  // namespace

TEST_CASE("ops: the CPU context refuses unknown settings by name", "[ops]") {
  CHECK_THAT(ops::make_cpu_context({.isa = "sse9"}).status().message(),
             Catch::Contains("option isa: expected auto, avx512, avx2 or scalar, got \"sse9\""));
  CHECK_THAT(ops::make_cpu_context({.matmul = "fp8"}).status().message(),
             Catch::Contains("option matmul: expected f32, bf16, int8 or auto"));
  auto ctx = ops::make_cpu_context({.num_threads = 3, .isa = "scalar"});
  REQUIRE(ctx.ok());
  CHECK((*ctx)->device() == Device::cpu());
  CHECK((*ctx)->activation_dtype() == DType::f32);
  CHECK_THAT((*ctx)->describe(), Catch::Contains("3 threads, isa scalar, matmul f32"));
  CHECK_THAT((*ctx)->describe(), !Catch::Contains("int8"));
}

TEST_CASE("ops: matmul auto takes the int8 mode for Q8_0/Q4_0/Q5_0 weights only where the CPU runs it", "[ops]") {
  const std::string int8 = "int8 for Q8_0/Q4_0/Q5_0 weights";
  auto named = ops::make_cpu_context({.num_threads = 1, .isa = "scalar", .matmul = "int8"});
  REQUIRE(named.ok());
  CHECK_THAT((*named)->describe(), Catch::Contains(int8));  // asked for: its scalar form anywhere
  auto exact = ops::make_cpu_context({.num_threads = 1, .matmul = "f32"});
  REQUIRE(exact.ok());
  CHECK_THAT((*exact)->describe(), !Catch::Contains(int8));
  if (!cpu::isa_supported(cpu::Isa::avx512) || !cpu::int8dot::supported()) {
    WARN("this CPU lacks AVX512-VNNI, VBMI or BITALG: matmul auto stays exact here");
    auto automatic = ops::make_cpu_context({.num_threads = 1, .matmul = "auto"});
    REQUIRE(automatic.ok());
    CHECK_THAT((*automatic)->describe(), !Catch::Contains(int8));
    return;
  }
  auto automatic = ops::make_cpu_context({.num_threads = 1, .isa = "avx512", .matmul = "auto"});
  REQUIRE(automatic.ok());
  CHECK_THAT((*automatic)->describe(), Catch::Contains(int8));
  auto avx2 = ops::make_cpu_context({.num_threads = 1, .isa = "avx2", .matmul = "auto"});  // scalar int8 would be slow
  REQUIRE(avx2.ok());
  CHECK_THAT((*avx2)->describe(), !Catch::Contains(int8));
}

TEST_CASE("ops: linear over fused parts with biases equals a float64 reference, shapes checked once", "[ops]") {
  auto ctx = cpu_context();
  const int64_t m = 5, k = 40, n1 = 24, n2 = 8;
  std::vector<float> w1 = random_values(n1 * k, 1), w2 = random_values(n2 * k, 2);
  std::vector<float> b1 = random_values(n1, 3), b2 = random_values(n2, 4);
  std::vector<float> x = random_values(m * k, 5);
  const TensorView matrices[] = {rows(w1, n1, k), rows(w2, n2, k)};
  const TensorView biases[] = {TensorView(b1.data(), DType::f32, Shape{n1}), TensorView(b2.data(), DType::f32, Shape{n2})};
  auto weight = ops::prepare_linear(*ctx, matrices, biases, nullptr);
  REQUIRE(weight.ok());
  CHECK(weight->out_features == n1 + n2);
  CHECK(weight->bytes() == static_cast<uint64_t>((n1 + n2) * k * 4));
  std::vector<float> y((m * (n1 + n2)), 0.0f);
  REQUIRE(ops::linear(*ctx, rows(x, m, k), *weight, rows(y, m, n1 + n2)).ok());
  double max_error = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n1 + n2; ++j) {
      const float* w = j < n1 ? &w1[static_cast<std::size_t>(j * k)] : &w2[static_cast<std::size_t>((j - n1) * k)];
      double want = j < n1 ? b1[static_cast<std::size_t>(j)] : b2[static_cast<std::size_t>(j - n1)];
      for (int64_t c = 0; c < k; ++c) want += static_cast<double>(x[static_cast<std::size_t>(i * k + c)]) * w[c];
      max_error = std::max(max_error, std::abs(want - y[static_cast<std::size_t>(i * (n1 + n2) + j)]));
    }
  }
  CHECK(max_error < 1e-4);

  // Every argument is checked before anything runs, by name.
  std::vector<float> short_y(m * 4);
  CHECK_THAT(ops::linear(*ctx, rows(x, m, k), *weight, rows(short_y, m, 4)).message(),
             Catch::Contains("linear: y must be [5, 32]"));
  CHECK_THAT(ops::linear(*ctx, rows(x, m * 2, k / 2), *weight, rows(y, m, n1 + n2)).message(),
             Catch::Contains("linear: x must be [-1, 40]"));
  std::vector<uint16_t> half(static_cast<std::size_t>(m * k));
  CHECK_THAT(ops::linear(*ctx, TensorView(half.data(), DType::bf16, Shape{m, k}), *weight, rows(y, m, n1 + n2)).message(),
             Catch::Contains("linear: x must be f32"));
  CHECK(ops::linear(*ctx, TensorView(x.data(), DType::f32, Shape{m, k}, Device::cuda(0)), *weight,
                    rows(y, m, n1 + n2)).code() == ErrorCode::invalid_argument);
  const TensorView transposed(x.data(), DType::f32, Shape{k, m}, Shape{1, k}, Device::cpu());
  CHECK_THAT(ops::linear(*ctx, transposed, *weight, rows(y, m, n1 + n2)).message(),
             Catch::Contains("rows of contiguous elements"));
}

TEST_CASE("ops: quantized matrices are read in place on the CPU, as their dequantization", "[ops]") {
  auto ctx = cpu_context();
  const int64_t m = 3, k = 256, n1 = 20, n2 = 12, vocab = 6;
  const std::vector<float> v1 = random_values(n1 * k, 21, 0.1f), v2 = random_values(n2 * k, 22, 0.1f);
  std::vector<uint8_t> q1(static_cast<std::size_t>(dtype_bytes(DType::q4_k, n1 * k)));
  std::vector<uint8_t> q2(static_cast<std::size_t>(dtype_bytes(DType::q8_0, n2 * k)));
  cpu::quantize(DType::q4_k, v1.data(), n1 * k, q1.data());
  cpu::quantize(DType::q8_0, v2.data(), n2 * k, q2.data());
  std::vector<float> d1(v1.size()), d2(v2.size());
  cpu::dequantize(DType::q4_k, q1.data(), n1 * k, d1.data());
  cpu::dequantize(DType::q8_0, q2.data(), n2 * k, d2.data());
  std::vector<float> b1 = random_values(n1, 23), b2 = random_values(n2, 24);
  const TensorView biases[] = {TensorView(b1.data(), DType::f32, Shape{n1}), TensorView(b2.data(), DType::f32, Shape{n2})};
  const TensorView quantized[] = {TensorView(q1.data(), DType::q4_k, Shape{n1, k}), TensorView(q2.data(), DType::q8_0, Shape{n2, k})};
  const TensorView dense[] = {rows(d1, n1, k), rows(d2, n2, k)};
  auto wq = ops::prepare_linear(*ctx, quantized, biases, nullptr);
  auto wd = ops::prepare_linear(*ctx, dense, biases, nullptr);
  REQUIRE(wq.ok());
  REQUIRE(wd.ok());
  CHECK(wq->parts[0].view.data() == q1.data());  // in place
  CHECK(wq->bytes() == q1.size() + q2.size());
  std::vector<float> x = random_values(m * k, 25), yq(m * (n1 + n2)), yd(yq.size());
  REQUIRE(ops::linear(*ctx, rows(x, m, k), *wq, rows(yq, m, n1 + n2)).ok());
  REQUIRE(ops::linear(*ctx, rows(x, m, k), *wd, rows(yd, m, n1 + n2)).ok());
  CHECK(std::memcmp(yq.data(), yd.data(), yq.size() * sizeof(float)) == 0);

  // A quantized table (embedding, tied lm head) is kept in place too.
  auto table = ops::upload_matrix(*ctx, TensorView(q2.data(), DType::q8_0, Shape{vocab, k}), nullptr);
  REQUIRE(table.ok());
  CHECK(table->view.data() == q2.data());
  std::vector<float> logits(m * vocab), want(m * vocab);
  REQUIRE(ops::linear(*ctx, rows(x, m, k), ops::linear_weight_of(*table), rows(logits, m, vocab)).ok());
  REQUIRE(ops::linear(*ctx, rows(x, m, k), ops::linear_weight_of(ops::Tensor{.view = rows(d2, vocab, k), .owner = nullptr}),
                      rows(want, m, vocab)).ok());
  CHECK(std::memcmp(logits.data(), want.data(), logits.size() * sizeof(float)) == 0);

  // Refused by name: a dtype no kernel reads, rows that are not whole blocks.
  std::vector<int32_t> ints(64);
  CHECK_THAT(ops::upload_matrix(*ctx, TensorView(ints.data(), DType::i32, Shape{8, 8}), nullptr).status().message(),
             Catch::Contains("dtype i32 cannot be read by the kernels"));
  const Status partial = ops::upload_matrix(*ctx, TensorView(q2.data(), DType::q8_0, Shape{4, 48}), nullptr).status();
  CHECK(partial.code() == ErrorCode::invalid_argument);
  CHECK_THAT(partial.message(), Catch::Contains("whole 32-element blocks"));
}

TEST_CASE("ops: Q4_1, Q5_0 and Q5_1 matrices are read in place too, as their dequantization", "[ops]") {
  auto ctx = cpu_context();
  const int64_t m = 2, k = 96, n = 7;
  const DType dtypes[] = {DType::q4_1, DType::q5_0, DType::q5_1};
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<std::vector<float>> dense;
  std::vector<TensorView> quantized, dense_views;
  for (std::size_t i = 0; i < std::size(dtypes); ++i) {
    const std::vector<float> values = random_values(n * k, static_cast<uint32_t>(31 + i), 0.1f);
    blocks.emplace_back(static_cast<std::size_t>(dtype_bytes(dtypes[i], n * k)));
    dense.emplace_back(values.size());
    cpu::quantize(dtypes[i], values.data(), n * k, blocks.back().data());
    cpu::dequantize(dtypes[i], blocks.back().data(), n * k, dense.back().data());
  }
  for (std::size_t i = 0; i < std::size(dtypes); ++i) {
    quantized.emplace_back(blocks[i].data(), dtypes[i], Shape{n, k});
    dense_views.push_back(rows(dense[i], n, k));
  }
  auto wq = ops::prepare_linear(*ctx, quantized, {}, nullptr);
  auto wd = ops::prepare_linear(*ctx, dense_views, {}, nullptr);
  REQUIRE(wq.ok());
  REQUIRE(wd.ok());
  CHECK(wq->parts[1].view.data() == blocks[1].data());  // in place
  std::vector<float> x = random_values(m * k, 35), yq(m * 3 * n), yd(yq.size());
  REQUIRE(ops::linear(*ctx, rows(x, m, k), *wq, rows(yq, m, 3 * n)).ok());
  REQUIRE(ops::linear(*ctx, rows(x, m, k), *wd, rows(yd, m, 3 * n)).ok());
  CHECK(std::memcmp(yq.data(), yd.data(), yq.size() * sizeof(float)) == 0);
}

TEST_CASE("ops: rms_norm by rows and per head, with Gemma's (1 + w)", "[ops]") {
  auto ctx = cpu_context();
  const int64_t t = 3, heads = 4, d = 16;
  std::vector<float> w_host = random_values(d, 7, 0.5f);
  auto plain = ops::upload_vector(*ctx, TensorView(w_host.data(), DType::f32, Shape{d}));
  auto offset = ops::upload_vector(*ctx, TensorView(w_host.data(), DType::f32, Shape{d}), 1.0f);
  REQUIRE(plain.ok());
  REQUIRE(offset.ok());
  CHECK(offset->view.data_as<const float>()[0] == w_host[0] + 1.0f);

  std::vector<float> x = random_values(t * heads * d, 8, 3.0f);
  std::vector<float> by_rows(x.size());
  REQUIRE(ops::rms_norm(*ctx, rows(x, t * heads, d), *plain, 1e-6f, rows(by_rows, t * heads, d)).ok());
  for (int64_t r = 0; r < t * heads; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < d; ++i) sum += static_cast<double>(x[static_cast<std::size_t>(r * d + i)]) * x[static_cast<std::size_t>(r * d + i)];
    const double inv = 1.0 / std::sqrt(sum / d + 1e-6);
    for (int64_t i = 0; i < d; ++i) {
      const std::size_t at = static_cast<std::size_t>(r * d + i);
      CHECK(by_rows[at] == Approx(x[at] * inv * w_host[static_cast<std::size_t>(i)]).margin(1e-5));
    }
  }
  // The same rows as [tokens, heads, head_dim], in place: bit for bit what the row norm gives.
  std::vector<float> heads_x = x;
  const TensorView view(heads_x.data(), DType::f32, Shape{t, heads, d});
  REQUIRE(ops::rms_norm(*ctx, view, *plain, 1e-6f, view).ok());
  CHECK(std::memcmp(heads_x.data(), by_rows.data(), x.size() * sizeof(float)) == 0);
  std::vector<float> other(x.size());
  CHECK_THAT(ops::rms_norm(*ctx, view, *plain, 1e-6f, TensorView(other.data(), DType::f32, Shape{t, heads, d})).message(),
             Catch::Contains("per-head norms are in place"));
  CHECK_THAT(ops::rms_norm(*ctx, rows(x, t, heads * d), *plain, 1e-6f, rows(by_rows, t, heads * d)).message(),
             Catch::Contains("rms_norm: weight must be f32 [64]"));
}

TEST_CASE("ops: gated activations, soft cap, add, scale and argmax against float64", "[ops]") {
  auto ctx = cpu_context();
  const int64_t r = 3, w = 37;
  std::vector<float> gate = random_values(r * w, 9, 6.0f), up = random_values(r * w, 10, 2.0f);
  for (ops::Activation act : {ops::Activation::silu, ops::Activation::gelu_tanh}) {
    INFO(ops::to_string(act));
    std::vector<float> out(gate.size());
    REQUIRE(ops::gated_activation(*ctx, act, rows(gate, r, w), rows(up, r, w), rows(out, r, w)).ok());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double g = gate[i];
      const double a = act == ops::Activation::silu
                           ? g / (1.0 + std::exp(-g))
                           : 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
      CHECK(out[i] == Approx(a * up[i]).margin(2e-6).epsilon(1e-5));
    }
  }
  CHECK(ops::parse_activation("gelu_pytorch_tanh") == ops::Activation::gelu_tanh);
  CHECK(ops::parse_activation("swish") == ops::Activation::silu);
  CHECK_FALSE(ops::parse_activation("gelu").has_value());

  std::vector<float> logits = random_values(r * w, 11, 80.0f);
  const std::vector<float> raw = logits;
  REQUIRE(ops::softcap(*ctx, rows(logits, r, w), 30.0f).ok());
  for (std::size_t i = 0; i < raw.size(); ++i) CHECK(logits[i] == Approx(30.0 * std::tanh(raw[i] / 30.0)).margin(1e-5));
  CHECK_THAT(ops::softcap(*ctx, rows(logits, r, w), 0.0f).message(), Catch::Contains("softcap: cap must be positive"));

  std::vector<float> y = raw, x = up;
  REQUIRE(ops::add(*ctx, rows(y, r, w), rows(x, r, w)).ok());
  REQUIRE(ops::scale(*ctx, rows(y, r, w), 16.0f).ok());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == (raw[i] + x[i]) * 16.0f);

  std::vector<float> ties{1.0f, 5.0f, 5.0f, -2.0f, 0.0f, NAN, 9.0f, 9.0f};
  std::vector<int32_t> ids(2, -7);
  REQUIRE(ops::argmax(*ctx, rows(ties, 2, 4), TensorView(ids.data(), DType::i32, Shape{2, 1})).ok());
  CHECK(ids == std::vector<int32_t>{1, 2});  // the lower index on ties; NaN never chosen after index 0
}

TEST_CASE("ops: a pass through embedding, rope_write_kv and windowed, soft-capped attention", "[ops]") {
  auto ctx = cpu_context();
  const int64_t vocab = 11, hidden = 8, q_heads = 2, kv_heads = 1, d = 8, block = 4;
  std::vector<float> table = random_values(vocab * hidden, 12);
  auto embed = ops::upload_matrix(*ctx, rows(table, vocab, hidden), nullptr);
  REQUIRE(embed.ok());
  auto rope = ctx->make_rope({.inv_freq = {1.0, 0.1, 0.01, 0.001}}, 64);
  REQUIRE(rope.ok());
  auto cache = ops::KvCache::create(*ctx, {.num_layers = 1, .num_kv_heads = 1, .head_dim = 8, .dtype = DType::f32},
                                    {.num_blocks = 8, .block_size = 4});
  REQUIRE(cache.ok());
  const Status too_big = ops::KvCache::create(*ctx, {.num_layers = 1, .num_kv_heads = 1, .head_dim = 8},
                                              {.num_blocks = 1 << 30, .block_size = 1 << 20}).status();
  CHECK(too_big.code() == ErrorCode::out_of_memory);
  CHECK_THAT(too_big.message(), Catch::Contains("blocks fit"));

  // One sequence of 10 tokens at positions 0..9, blocks 5, 2, 7.
  const int64_t t = 10;
  std::vector<TokenId> tokens{1, 4, 2, 9, 3, 3, 0, 10, 6, 5};
  std::vector<int32_t> positions(t), seqs(t, 0);
  for (int64_t i = 0; i < t; ++i) positions[static_cast<std::size_t>(i)] = static_cast<int32_t>(i);
  const std::vector<BlockId> table_ids{5, 2, 7};
  const BlockId* tables[] = {table_ids.data()};
  const int32_t lens[] = {3};
  const int32_t outputs[] = {9};
  ForwardBatch batch{.token_ids = tokens, .positions = positions, .seq_indices = seqs, .block_tables = tables,
                     .block_table_lens = lens, .output_token_indices = outputs};
  auto pass = ctx->begin_pass(batch, {.num_q_heads = q_heads, .num_kv_heads = kv_heads, .head_dim = d,
                                      .block_size = block, .rope = rope->get()});
  REQUIRE(pass.ok());
  std::vector<float> x(static_cast<std::size_t>(t * hidden));
  REQUIRE(ops::embedding(*ctx, **pass, *embed, rows(x, t, hidden)).ok());
  CHECK(std::memcmp(x.data() + hidden, table.data() + 4 * hidden, hidden * sizeof(float)) == 0);
  for (DType dtype : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1}) {
    // A quantized table: each row as dequantize() gives it.
    const int64_t wide = 32;
    const std::vector<float> values = random_values(vocab * wide, 14);
    std::vector<uint8_t> blocks(static_cast<std::size_t>(dtype_bytes(dtype, vocab * wide)));
    cpu::quantize(dtype, values.data(), vocab * wide, blocks.data());
    std::vector<float> rows_want(values.size());
    cpu::dequantize(dtype, blocks.data(), vocab * wide, rows_want.data());
    auto qtable = ops::upload_matrix(*ctx, TensorView(blocks.data(), dtype, Shape{vocab, wide}), nullptr);
    REQUIRE(qtable.ok());
    std::vector<float> xq(static_cast<std::size_t>(t * wide));
    REQUIRE(ops::embedding(*ctx, **pass, *qtable, rows(xq, t, wide)).ok());
    for (int64_t i = 0; i < t; ++i) {
      INFO(to_string(dtype));
      CHECK(std::memcmp(xq.data() + i * wide, rows_want.data() + tokens[static_cast<std::size_t>(i)] * wide,
                        wide * sizeof(float)) == 0);
    }
  }

  std::vector<float> qkv = random_values(static_cast<std::size_t>(t * (q_heads + 2 * kv_heads) * d), 13);
  const int64_t width = (q_heads + 2 * kv_heads) * d;
  auto heads = [&](int64_t offset, int64_t n) {
    return TensorView(qkv.data() + offset, DType::f32, Shape{t, n, d}, Shape{width, d, 1}, Device::cpu());
  };
  const std::vector<float> before = qkv;
  REQUIRE(ops::rope_write_kv(*ctx, **pass, cache->layer(0), heads(0, q_heads), heads(q_heads * d, 1),
                             heads((q_heads + 1) * d, 1)).ok());
  const float scale = 0.3f, cap = 2.0f;
  const int32_t window = 5;
  std::vector<float> out(static_cast<std::size_t>(t * q_heads * d));
  REQUIRE(ops::attention(*ctx, **pass, cache->layer(0), heads(0, q_heads),
                         {.scale = scale, .softcap = cap, .window = window}, rows(out, t, q_heads * d)).ok());
  // Reference: rotate with the same frequencies in double, then windowed, soft-capped softmax.
  auto rotated = [&](int64_t token, int64_t col) {
    std::vector<double> v(static_cast<std::size_t>(d));
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = static_cast<double>(token) * std::pow(0.1, static_cast<double>(i));
      const double a = before[static_cast<std::size_t>(token * width + col + i)];
      const double b = before[static_cast<std::size_t>(token * width + col + i + d / 2)];
      v[static_cast<std::size_t>(i)] = a * std::cos(angle) - b * std::sin(angle);
      v[static_cast<std::size_t>(i + d / 2)] = b * std::cos(angle) + a * std::sin(angle);
    }
    return v;
  };
  double max_error = 0;
  for (int64_t p = 0; p < t; ++p) {
    for (int64_t h = 0; h < q_heads; ++h) {
      const std::vector<double> q = rotated(p, h * d);
      const int64_t first = std::max<int64_t>(0, p - window + 1);
      std::vector<double> s;
      for (int64_t j = first; j <= p; ++j) {
        const std::vector<double> k = rotated(j, q_heads * d);
        double dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += q[static_cast<std::size_t>(i)] * k[static_cast<std::size_t>(i)];
        s.push_back(cap * std::tanh(dot * scale / cap));
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - m));
      for (int64_t i = 0; i < d; ++i) {
        double want = 0;
        for (int64_t j = first; j <= p; ++j) {
          want += s[static_cast<std::size_t>(j - first)] / sum * before[static_cast<std::size_t>(j * width + (q_heads + 1) * d + i)];
        }
        max_error = std::max(max_error, std::abs(want - out[static_cast<std::size_t>(p * q_heads * d + h * d + i)]));
      }
    }
  }
  CHECK(max_error < 1e-5);
  std::vector<float> gathered(hidden);
  REQUIRE(ops::gather_rows(*ctx, **pass, rows(x, t, hidden), rows(gathered, 1, hidden)).ok());
  CHECK(std::memcmp(gathered.data(), x.data() + 9 * hidden, hidden * sizeof(float)) == 0);
  CHECK_THAT(ops::attention(*ctx, **pass, cache->layer(0), heads(0, q_heads), {.scale = -1.0f}, rows(out, t, q_heads * d)).message(),
             Catch::Contains("attention: scale -1"));

  // copy_blocks moves every layer's K and V of a block.
  REQUIRE(cache->copy_blocks(*ctx, std::vector<BlockCopy>{{.src = 5, .dst = 1}}).ok());
  const ops::KvLayer layer = cache->layer(0);
  const auto* k = static_cast<const float*>(layer.k);
  CHECK(std::memcmp(k + 1 * block * d, k + 5 * block * d, block * d * sizeof(float)) == 0);
  CHECK(cache->copy_blocks(*ctx, std::vector<BlockCopy>{{.src = 8, .dst = 1}}).code() == ErrorCode::invalid_argument);
}
