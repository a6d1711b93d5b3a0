// kv_cache_write + paged_attention against a double-precision causal attention, on scattered blocks.

#include <array>
#include <numeric>

#include <catch2/catch.hpp>

#include "cpu/attention.hpp"
#include "cpu/paged_kv.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

struct Setup {
  int64_t head_dim;
  int64_t q_heads, kv_heads, block_size = 4, num_blocks;
  int64_t len0, len1;
  // Two sequences, their blocks deliberately out of order and interleaved.
  std::vector<int32_t> table0, table1;
  std::vector<int32_t> positions, seqs;
  std::vector<float> q, k, v, k_cache, v_cache;
  std::vector<const int32_t*> tables;

  Setup(int64_t dim, int64_t q_heads_, int64_t kv_heads_, int64_t len0_, int64_t len1_)
      : head_dim(dim), q_heads(q_heads_), kv_heads(kv_heads_), len0(len0_), len1(len1_) {
    const int64_t blocks0 = (len0 + block_size - 1) / block_size, blocks1 = (len1 + block_size - 1) / block_size;
    num_blocks = blocks0 + blocks1 + 2;  // two blocks nobody uses
    std::vector<int32_t> ids(static_cast<std::size_t>(num_blocks));
    // A scrambled order: i -> 5i + 3 (mod n) is a permutation when 5 does not divide n.
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 5 + 3) % ids.size());
    if (ids.size() % 5 == 0) std::iota(ids.rbegin(), ids.rend(), 0);
    // Alternate between the sequences while both still need blocks.
    std::size_t next = 0;
    while (static_cast<int64_t>(table0.size()) < blocks0 || static_cast<int64_t>(table1.size()) < blocks1) {
      if (static_cast<int64_t>(table0.size()) < blocks0) table0.push_back(ids[next++]);
      if (static_cast<int64_t>(table1.size()) < blocks1) table1.push_back(ids[next++]);
    }
    for (int32_t p = 0; p < len0; ++p) { positions.push_back(p); seqs.push_back(0); }
    for (int32_t p = 0; p < len1; ++p) { positions.push_back(p); seqs.push_back(1); }
    const auto t = static_cast<std::size_t>(positions.size());
    q = random_floats(t * static_cast<std::size_t>(q_heads * dim), 1, -2.0f, 2.0f);
    k = random_floats(t * static_cast<std::size_t>(kv_heads * dim), 2, -2.0f, 2.0f);
    v = random_floats(t * static_cast<std::size_t>(kv_heads * dim), 3);
    k_cache.assign(static_cast<std::size_t>(num_blocks * kv_heads * block_size * dim), 1e30f);
    v_cache = k_cache;
    tables = {table0.data(), table1.data()};
  }
  PagedKvLayer layer() { return {.k = k_cache.data(), .v = v_cache.data(), .block_size = block_size, .num_kv_heads = kv_heads, .head_dim = head_dim}; }
  BatchSlots slots(int64_t first, int64_t count) const {
    return {.num_tokens = count, .positions = positions.data() + first, .seq_indices = seqs.data() + first, .block_tables = tables.data()};
  }
};

// out[t] by the definition, in double.
std::vector<double> reference(const Setup& s) {
  const int64_t d = s.head_dim, group = s.q_heads / s.kv_heads, qw = s.q_heads * d, kw = s.kv_heads * d;
  const int64_t t_count = static_cast<int64_t>(s.positions.size());
  std::vector<double> out(static_cast<std::size_t>(t_count * qw));
  for (int64_t t = 0; t < t_count; ++t) {
    const int64_t first = s.seqs[static_cast<std::size_t>(t)] == 0 ? 0 : s.len0;  // tokens of this sequence start here
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const int64_t g = h / group;
      std::vector<double> scores;
      for (int64_t j = 0; j <= s.positions[static_cast<std::size_t>(t)]; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(s.q[static_cast<std::size_t>(t * qw + h * d + i)]) * static_cast<double>(s.k[static_cast<std::size_t>((first + j) * kw + g * d + i)]);
        scores.push_back(dot / std::sqrt(static_cast<double>(d)));
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& x : scores) sum += (x = std::exp(x - max));
      for (int64_t i = 0; i < d; ++i) {
        double acc = 0;
        for (std::size_t j = 0; j < scores.size(); ++j) acc += scores[j] * static_cast<double>(s.v[static_cast<std::size_t>((first + static_cast<int64_t>(j)) * kw + g * d + i)]);
        out[static_cast<std::size_t>(t * qw + h * d + i)] = acc / sum;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("paged attention matches causal attention in double precision on every ISA", "[kernels][attention]") {
  // head_dim, query heads, kv heads, the two sequences' lengths: the 64- and 128-dim fast paths
  // with groups of 1 to 8 heads (more than one pass of the multi-head weighted sum) and sequences
  // long enough for the rows fetched ahead, and a head_dim with a tail.
  const std::vector<std::array<int64_t, 5>> shapes = {
      {64, 6, 2, 10, 7}, {40, 6, 2, 10, 7}, {64, 14, 2, 41, 23}, {128, 8, 1, 37, 20}, {128, 4, 4, 21, 6}};
  for (const auto& [dim, q_heads, kv_heads, len0, len1] : shapes) {
    Setup s(dim, q_heads, kv_heads, len0, len1);
    INFO("head_dim " << dim << ", " << q_heads << " query heads, " << kv_heads << " kv heads, lengths " << len0 << " and " << len1);
    ThreadPool pool(3);
    const int64_t t = static_cast<int64_t>(s.positions.size()), qw = s.q_heads * dim, kw = s.kv_heads * dim;
    kv_cache_write({.pool = &pool, .isa = Isa::scalar}, s.layer(), s.slots(0, t), s.k.data(), kw, s.v.data(), kw);
    // Each K row landed in its slot: token 9 of the first sequence, kv head 1 (or 0), element 0.
    const int64_t head = kv_heads > 1 ? 1 : 0;
    CHECK(s.k_cache[static_cast<std::size_t>(s.layer().offset(s.table0[2], head, 1))] ==
          s.k[static_cast<std::size_t>(9 * kw + head * dim)]);
    const std::vector<double> expected = reference(s);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    std::vector<std::vector<float>> results;
    for (Isa isa : supported_isas()) {
      std::vector<float> out(static_cast<std::size_t>(t * qw));
      paged_attention({.pool = &pool, .isa = isa}, s.layer(), s.slots(0, t), s.q.data(), qw, s.q_heads, scale, out.data(), qw);
      INFO("isa " << to_string(isa));
      double worst = 0;
      for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(out[i]) - expected[i]));
      CHECK(worst < 2e-6);
      // The second sequence's tokens alone give the same bits.
      std::vector<float> alone(static_cast<std::size_t>(len1 * qw));
      paged_attention({.pool = &pool, .isa = isa}, s.layer(), s.slots(len0, len1), s.q.data() + len0 * qw, qw, s.q_heads,
                      scale, alone.data(), qw);
      CHECK(same_bits(alone, std::vector<float>(out.begin() + len0 * qw, out.end())));
      results.push_back(std::move(out));
    }
    for (const auto& r : results) CHECK(same_bits(r, results.front()));
  }
}

TEST_CASE("a bf16 KV cache rounds K and V once and attends exactly as over the rounded values", "[kernels][attention]") {
  const std::vector<std::array<int64_t, 5>> shapes = {{64, 14, 2, 41, 23}, {40, 6, 2, 10, 7}, {128, 8, 1, 37, 20}};
  for (const auto& [dim, q_heads, kv_heads, len0, len1] : shapes) {
    INFO("head_dim " << dim << ", " << q_heads << " query heads, " << kv_heads << " kv heads");
    Setup s(dim, q_heads, kv_heads, len0, len1);
    ThreadPool pool(2);
    const int64_t t = static_cast<int64_t>(s.positions.size()), qw = s.q_heads * dim, kw = s.kv_heads * dim;
    // The bf16 cache, written from the raw rows.
    std::vector<bf16_t> k16(s.k_cache.size(), 0xFFFF), v16(s.v_cache.size(), 0xFFFF);
    PagedKvLayer half = s.layer();
    half.k = k16.data();
    half.v = v16.data();
    half.dtype = DType::bf16;
    kv_cache_write({.pool = &pool, .isa = Isa::scalar}, half, s.slots(0, t), s.k.data(), kw, s.v.data(), kw);
    // Rounded to nearest even, once: every stored element is f32_to_bf16 of its input.
    const int64_t head = kv_heads > 1 ? 1 : 0;
    for (int64_t i = 0; i < dim; ++i) {
      const auto at = static_cast<std::size_t>(half.offset(s.table0[2], head, 1) + i);
      const auto from = static_cast<std::size_t>(9 * kw + head * dim + i);
      CHECK(k16[at] == f32_to_bf16(s.k[from]));
      CHECK(v16[at] == f32_to_bf16(s.v[from]));
    }
    // The f32 cache written from rows already rounded to bf16 values: the same function, in f32.
    std::vector<float> k_rounded(s.k.size()), v_rounded(s.v.size());
    for (std::size_t i = 0; i < s.k.size(); ++i) {
      k_rounded[i] = bf16_to_f32(f32_to_bf16(s.k[i]));
      v_rounded[i] = bf16_to_f32(f32_to_bf16(s.v[i]));
    }
    kv_cache_write({.pool = &pool, .isa = Isa::scalar}, s.layer(), s.slots(0, t), k_rounded.data(), kw, v_rounded.data(), kw);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    std::vector<float> raw_f32(static_cast<std::size_t>(t * qw));
    {
      // And with the unrounded f32 cache the result differs: the rounding really happened.
      Setup exact(dim, q_heads, kv_heads, len0, len1);
      kv_cache_write({.pool = &pool, .isa = Isa::scalar}, exact.layer(), exact.slots(0, t), exact.k.data(), kw, exact.v.data(), kw);
      paged_attention({.pool = &pool, .isa = Isa::scalar}, exact.layer(), exact.slots(0, t), exact.q.data(), qw,
                      exact.q_heads, scale, raw_f32.data(), qw);
    }
    for (Isa isa : supported_isas()) {
      INFO("isa " << to_string(isa));
      std::vector<float> from_bf16(static_cast<std::size_t>(t * qw)), from_rounded(from_bf16.size());
      paged_attention({.pool = &pool, .isa = isa}, half, s.slots(0, t), s.q.data(), qw, s.q_heads, scale,
                      from_bf16.data(), qw);
      paged_attention({.pool = &pool, .isa = isa}, s.layer(), s.slots(0, t), s.q.data(), qw, s.q_heads, scale,
                      from_rounded.data(), qw);
      CHECK(same_bits(from_bf16, from_rounded));
      CHECK_FALSE(same_bits(from_bf16, raw_f32));
      // Batch invariance within the setting.
      std::vector<float> alone(static_cast<std::size_t>(len1 * qw));
      paged_attention({.pool = &pool, .isa = isa}, half, s.slots(len0, len1), s.q.data() + len0 * qw, qw, s.q_heads,
                      scale, alone.data(), qw);
      CHECK(same_bits(alone, std::vector<float>(from_bf16.begin() + len0 * qw, from_bf16.end())));
    }
  }
}
