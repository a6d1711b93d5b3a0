// paged_attention with AttentionParams (sliding window, soft cap) against a double-precision
// reference, on batches mixing prefill chunks and decode tokens, with the blocks before every
// token's window given back: -1 entries, whose block lies in an inaccessible page in front of the
// pool (a read faults), and entries left pointing at blocks overwritten with NaN (a use shows).

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "cpu/attention.hpp"
#include "cpu/paged_kv.hpp"
#include "kernel_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cpu;
using namespace llaisys::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr bf16_t kNaN16 = 0x7FC0;

// A KV pool of `count` elements behind at least `guard` elements of PROT_NONE pages: block -1 of
// the pool lies there, so reading it kills the test with SIGSEGV.
template <class T>
class GuardedPool {
 public:
  GuardedPool() = default;
  GuardedPool(std::size_t count, std::size_t guard) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    guard_bytes_ = (guard * sizeof(T) + page - 1) / page * page;
    bytes_ = guard_bytes_ + count * sizeof(T);
    void* base = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base != MAP_FAILED);
    REQUIRE(mprotect(base, guard_bytes_, PROT_NONE) == 0);
    base_ = static_cast<char*>(base);
    count_ = count;
  }
  GuardedPool(const GuardedPool&) = delete;
  GuardedPool& operator=(GuardedPool&& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(bytes_, other.bytes_);
    std::swap(guard_bytes_, other.guard_bytes_);
    std::swap(count_, other.count_);
    return *this;
  }
  ~GuardedPool() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  T* data() { return reinterpret_cast<T*>(base_ + guard_bytes_); }
  void fill(T value) { std::fill_n(data(), count_, value); }

 private:
  char* base_ = nullptr;
  std::size_t bytes_ = 0, guard_bytes_ = 0, count_ = 0;
};

// A sequence with `len` tokens in the cache whose positions query_from..len - 1 are in the batch
// (query_from = len - 1: a decode token; 0: a whole prefill; otherwise a prefill chunk).
struct SeqSpec {
  int64_t len;
  int64_t query_from;
};

const std::vector<SeqSpec> kMixedBatch = {{60, 59}, {41, 25}, {13, 0}, {23, 22}, {35, 30}};

struct WindowCase {
  int64_t head_dim, q_heads, kv_heads, block_size;
  std::vector<SeqSpec> seqs;
  int64_t num_blocks = 0;
  std::vector<std::vector<int32_t>> tables;        // as allocated, every block present
  std::vector<std::vector<float>> k_raw, v_raw;    // per sequence: [len, kv_heads * head_dim]
  std::vector<int32_t> positions, seq_indices;     // the query batch
  std::vector<float> q;                            // [tokens, q_heads * head_dim]
  // The pools, f32 and bf16, block -1 inaccessible.
  GuardedPool<float> k_f32, v_f32;
  GuardedPool<bf16_t> k_bf16, v_bf16;

  WindowCase(int64_t dim, int64_t q_heads_, int64_t kv_heads_, int64_t block_size_, std::vector<SeqSpec> seqs_)
      : head_dim(dim), q_heads(q_heads_), kv_heads(kv_heads_), block_size(block_size_), seqs(std::move(seqs_)) {
    const int64_t kw = kv_heads * head_dim;
    std::vector<int64_t> needed;
    for (const SeqSpec& s : seqs) {
      needed.push_back((s.len + block_size - 1) / block_size);
      num_blocks += needed.back();
    }
    num_blocks += 3;  // blocks nobody uses
    // A scrambled order: i -> 7i + 3 (mod n) is a permutation when 7 does not divide n.
    std::vector<int32_t> ids(static_cast<std::size_t>(num_blocks));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % ids.size());
    if (ids.size() % 7 == 0) std::iota(ids.rbegin(), ids.rend(), 0);
    // Round-robin over the sequences, so their blocks interleave.
    tables.resize(seqs.size());
    std::size_t next = 0;
    for (bool more = true; more;) {
      more = false;
      for (std::size_t s = 0; s < seqs.size(); ++s) {
        if (static_cast<int64_t>(tables[s].size()) < needed[s]) {
          tables[s].push_back(ids[next++]);
          more = true;
        }
      }
    }
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      const auto n = static_cast<std::size_t>(seqs[s].len * kw);
      k_raw.push_back(random_floats(n, static_cast<uint32_t>(100 + s), -2.0f, 2.0f));
      v_raw.push_back(random_floats(n, static_cast<uint32_t>(200 + s)));
      for (int64_t p = seqs[s].query_from; p < seqs[s].len; ++p) {
        positions.push_back(static_cast<int32_t>(p));
        seq_indices.push_back(static_cast<int32_t>(s));
      }
    }
    q = random_floats(positions.size() * static_cast<std::size_t>(q_heads * head_dim), 7, -2.0f, 2.0f);
    const auto pool_size = static_cast<std::size_t>(num_blocks * block_elements());
    const auto guard = static_cast<std::size_t>(block_elements());
    k_f32 = GuardedPool<float>(pool_size, guard);
    v_f32 = GuardedPool<float>(pool_size, guard);
    k_bf16 = GuardedPool<bf16_t>(pool_size, guard);
    v_bf16 = GuardedPool<bf16_t>(pool_size, guard);
  }

  int64_t num_tokens() const { return static_cast<int64_t>(positions.size()); }
  int64_t q_width() const { return q_heads * head_dim; }
  int64_t block_elements() const { return kv_heads * block_size * head_dim; }

  PagedKvLayer layer(DType dtype) {
    const bool half = dtype == DType::bf16;
    return {.k = half ? static_cast<void*>(k_bf16.data()) : k_f32.data(),
            .v = half ? static_cast<void*>(v_bf16.data()) : v_f32.data(),
            .block_size = block_size, .num_kv_heads = kv_heads, .head_dim = head_dim, .dtype = dtype};
  }

  // Fills the pools with NaN, writes every sequence's K and V (rounded to bf16 values first when
  // `rounded`, for the f32 pool), then gives back the blocks that lie wholly before the window of
  // all of a sequence's query tokens: overwritten with NaN, even ones also become -1 entries.
  // Returns the block tables to attend with.
  std::vector<std::vector<int32_t>> prepare(ThreadPool& pool, int32_t window, bool rounded = false) {
    k_f32.fill(kNaN);
    v_f32.fill(kNaN);
    k_bf16.fill(kNaN16);
    v_bf16.fill(kNaN16);
    const int64_t kw = kv_heads * head_dim;
    std::vector<const int32_t*> all_tables;
    for (const auto& t : tables) all_tables.push_back(t.data());
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      std::vector<int32_t> pos, idx;
      for (int64_t p = 0; p < seqs[s].len; ++p) {
        pos.push_back(static_cast<int32_t>(p));
        idx.push_back(static_cast<int32_t>(s));
      }
      const BatchSlots history{.num_tokens = seqs[s].len, .positions = pos.data(), .seq_indices = idx.data(),
                               .block_tables = all_tables.data()};
      std::vector<float> k = k_raw[s], v = v_raw[s];
      if (rounded) {
        for (float& x : k) x = bf16_to_f32(f32_to_bf16(x));
        for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
      }
      kv_cache_write({.pool = &pool, .isa = Isa::scalar}, layer(DType::f32), history, k.data(), kw, v.data(), kw);
      kv_cache_write({.pool = &pool, .isa = Isa::scalar}, layer(DType::bf16), history, k_raw[s].data(), kw,
                     v_raw[s].data(), kw);
    }
    std::vector<std::vector<int32_t>> attended = tables;
    if (window <= 0) return attended;
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      const int64_t window_start = std::max<int64_t>(0, seqs[s].query_from - window + 1);
      for (int64_t b = 0; (b + 1) * block_size <= window_start; ++b) {
        int32_t& entry = attended[s][static_cast<std::size_t>(b)];
        const int64_t at = entry * block_elements();
        std::fill_n(k_f32.data() + at, block_elements(), kNaN);
        std::fill_n(v_f32.data() + at, block_elements(), kNaN);
        std::fill_n(k_bf16.data() + at, block_elements(), kNaN16);
        std::fill_n(v_bf16.data() + at, block_elements(), kNaN16);
        if (b % 2 == 0) entry = -1;
      }
    }
    return attended;
  }

  // out[t] by the definition, in double, over K and V (rounded to bf16 values when `rounded`).
  std::vector<double> reference(const AttentionParams& params, bool rounded = false) const {
    const int64_t d = head_dim, group = q_heads / kv_heads, qw = q_width(), kw = kv_heads * d;
    auto value = [&](float x) { return static_cast<double>(rounded ? bf16_to_f32(f32_to_bf16(x)) : x); };
    std::vector<double> out(static_cast<std::size_t>(num_tokens() * qw));
    for (int64_t t = 0; t < num_tokens(); ++t) {
      const auto s = static_cast<std::size_t>(seq_indices[static_cast<std::size_t>(t)]);
      const int64_t p = positions[static_cast<std::size_t>(t)];
      const int64_t first = params.window > 0 ? std::max<int64_t>(0, p - params.window + 1) : 0;
      for (int64_t h = 0; h < q_heads; ++h) {
        const int64_t g = h / group;
        std::vector<double> scores;
        for (int64_t j = first; j <= p; ++j) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i) {
            dot += static_cast<double>(q[static_cast<std::size_t>(t * qw + h * d + i)]) *
                   value(k_raw[s][static_cast<std::size_t>(j * kw + g * d + i)]);
          }
          double score = dot * static_cast<double>(params.scale);
          if (params.softcap > 0.0f) {
            const double cap = params.softcap;
            score = cap * std::tanh(score / cap);
          }
          scores.push_back(score);
        }
        const double max = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& x : scores) sum += (x = std::exp(x - max));
        for (int64_t i = 0; i < d; ++i) {
          double acc = 0;
          for (std::size_t j = 0; j < scores.size(); ++j) {
            acc += scores[j] * value(v_raw[s][static_cast<std::size_t>((first + static_cast<int64_t>(j)) * kw + g * d + i)]);
          }
          out[static_cast<std::size_t>(t * qw + h * d + i)] = acc / sum;
        }
      }
    }
    return out;
  }

  // The batch's tokens first..first + count - 1.
  std::vector<float> run(const CpuContext& ctx, const PagedKvLayer& l, const std::vector<std::vector<int32_t>>& attended,
                         const AttentionParams& params, int64_t first, int64_t count) const {
    std::vector<const int32_t*> ptrs;
    for (const auto& t : attended) ptrs.push_back(t.data());
    const BatchSlots slots{.num_tokens = count, .positions = positions.data() + first,
                           .seq_indices = seq_indices.data() + first, .block_tables = ptrs.data()};
    std::vector<float> out(static_cast<std::size_t>(count * q_width()), kNaN);
    paged_attention(ctx, l, slots, q.data() + first * q_width(), q_width(), q_heads, params, out.data(), q_width());
    return out;
  }
  std::vector<float> run_all(const CpuContext& ctx, const PagedKvLayer& l,
                             const std::vector<std::vector<int32_t>>& attended, const AttentionParams& params) const {
    return run(ctx, l, attended, params, 0, num_tokens());
  }
};

// The largest |got - expected|; infinity where got is not finite (a NaN would slip through max()).
double max_error(const std::vector<float>& got, const std::vector<double>& expected) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - expected[i]));
  }
  return worst;
}

// Every token of the batch computed alone gives the bits it got in the mixed batch.
bool batch_invariant(const WindowCase& c, const CpuContext& ctx, const PagedKvLayer& l,
                     const std::vector<std::vector<int32_t>>& attended, const AttentionParams& params,
                     const std::vector<float>& mixed) {
  const auto qw = static_cast<std::ptrdiff_t>(c.q_width());
  for (int64_t t = 0; t < c.num_tokens(); ++t) {
    const std::vector<float> alone = c.run(ctx, l, attended, params, t, 1);
    if (!same_bits(alone, std::vector<float>(mixed.begin() + t * qw, mixed.begin() + (t + 1) * qw))) return false;
  }
  return true;
}

// head_dim, query heads, kv heads: the 64- and 128-dim fast paths (groups of 7: two passes of the
// multi-head weighted sum) and a head_dim with a tail.
const std::vector<std::array<int64_t, 3>> kHeadShapes = {{64, 14, 2}, {128, 8, 1}, {40, 6, 2}};

}  // namespace

TEST_CASE("windowed attention matches a double reference and reads nothing before the window", "[kernels][attention]") {
  ThreadPool pool(3);
  for (const auto& [dim, q_heads, kv_heads] : kHeadShapes) {
    // Block sizes below and at the lane count; windows of 1 key, not multiples of either block
    // size, equal to one, and longer than every sequence.
    for (int64_t block_size : {4, 16}) {
      WindowCase c(dim, q_heads, kv_heads, block_size, kMixedBatch);
      const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
      c.prepare(pool, 0);
      std::vector<std::vector<float>> unwindowed;  // per ISA, window 0
      for (Isa isa : supported_isas()) {
        unwindowed.push_back(c.run_all({.pool = &pool, .isa = isa}, c.layer(DType::f32), c.tables, {.scale = scale}));
      }
      for (int32_t window : {1, 3, 7, 16, 21, 1000}) {
        INFO("head_dim " << dim << ", " << q_heads << "/" << kv_heads << " heads, block size " << block_size
                         << ", window " << window);
        const std::vector<std::vector<int32_t>> attended = c.prepare(pool, window);
        // The test's own premise: some blocks were given back, both ways, for short windows.
        int64_t given_back = 0;
        for (const auto& t : attended) given_back += std::count(t.begin(), t.end(), -1);
        if (window <= 7) CHECK(given_back > 0);
        const AttentionParams params{.scale = scale, .window = window};
        const std::vector<double> expected = c.reference(params);
        std::vector<std::vector<float>> results;
        for (Isa isa : supported_isas()) {
          INFO("isa " << to_string(isa));
          const CpuContext ctx{.pool = &pool, .isa = isa};
          std::vector<float> out = c.run_all(ctx, c.layer(DType::f32), attended, params);
          CHECK(max_error(out, expected) < 2e-6);
          CHECK(batch_invariant(c, ctx, c.layer(DType::f32), attended, params, out));
          // A window longer than every sequence is no window at all, to the bit; a short one
          // changes the result.
          if (window == 1000) {
            CHECK(same_bits(out, unwindowed[results.size()]));
          } else {
            CHECK_FALSE(same_bits(out, unwindowed[results.size()]));
          }
          results.push_back(std::move(out));
        }
        for (const auto& r : results) CHECK(same_bits(r, results.front()));
      }
    }
  }
}

TEST_CASE("window 1 attends to the token's own value row only", "[kernels][attention]") {
  ThreadPool pool(2);
  WindowCase c(40, 4, 2, 4, kMixedBatch);
  const std::vector<std::vector<int32_t>> attended = c.prepare(pool, 1);
  const int64_t d = c.head_dim, kw = c.kv_heads * d;
  for (Isa isa : supported_isas()) {
    const std::vector<float> out = c.run_all({.pool = &pool, .isa = isa}, c.layer(DType::f32), attended,
                                             {.scale = 0.5f, .softcap = 2.0f, .window = 1});
    // One key: its weight is exp(0) / exp(0) = 1, so out_h is v_p exactly.
    for (int64_t t = 0; t < c.num_tokens(); ++t) {
      const auto s = static_cast<std::size_t>(c.seq_indices[static_cast<std::size_t>(t)]);
      const int64_t p = c.positions[static_cast<std::size_t>(t)];
      for (int64_t h = 0; h < c.q_heads; ++h) {
        const int64_t g = h / (c.q_heads / c.kv_heads);
        for (int64_t i = 0; i < d; ++i) {
          CHECK(out[static_cast<std::size_t>(t * c.q_width() + h * d + i)] ==
                c.v_raw[s][static_cast<std::size_t>(p * kw + g * d + i)]);
        }
      }
    }
  }
}

TEST_CASE("soft-capped attention, with and without a window, matches a double reference", "[kernels][attention]") {
  ThreadPool pool(3);
  for (const auto& [dim, q_heads, kv_heads] : kHeadShapes) {
    WindowCase c(dim, q_heads, kv_heads, 4, kMixedBatch);
    for (int32_t window : {0, 7, 20}) {
      // Scores of a few units (q . k has a standard deviation of about 1.3 sqrt(head_dim)): a cap
      // of 3 changes them a lot.
      const AttentionParams params{.scale = 0.25f, .softcap = 3.0f, .window = window};
      INFO("head_dim " << dim << ", " << q_heads << "/" << kv_heads << " heads, window " << window);
      const std::vector<std::vector<int32_t>> attended = c.prepare(pool, window);
      const std::vector<double> expected = c.reference(params);
      AttentionParams uncapped = params;
      uncapped.softcap = 0.0f;
      const std::vector<double> expected_uncapped = c.reference(uncapped);
      std::vector<std::vector<float>> results;
      for (Isa isa : supported_isas()) {
        INFO("isa " << to_string(isa));
        const CpuContext ctx{.pool = &pool, .isa = isa};
        std::vector<float> out = c.run_all(ctx, c.layer(DType::f32), attended, params);
        CHECK(max_error(out, expected) < 4e-6);
        CHECK(max_error(out, expected_uncapped) > 1e-2);  // the cap is really applied
        CHECK(max_error(c.run_all(ctx, c.layer(DType::f32), attended, uncapped), expected_uncapped) < 4e-6);
        CHECK(batch_invariant(c, ctx, c.layer(DType::f32), attended, params, out));
        results.push_back(std::move(out));
      }
      for (const auto& r : results) CHECK(same_bits(r, results.front()));
    }
  }
}

TEST_CASE("a windowed bf16 KV cache attends exactly as an f32 cache of the rounded values", "[kernels][attention]") {
  // One thread: its widened rows are reused across the tokens of a prefill chunk and must be
  // re-widened between sequences and windows; three: the tasks split between threads.
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (const auto& [dim, q_heads, kv_heads] : kHeadShapes) {
      WindowCase c(dim, q_heads, kv_heads, 4, kMixedBatch);
      for (const AttentionParams params : {AttentionParams{.scale = 0.125f, .window = 5},
                                           AttentionParams{.scale = 0.25f, .softcap = 3.0f, .window = 18},
                                           AttentionParams{.scale = 0.125f, .window = 0}}) {
        INFO(threads << " threads, head_dim " << dim << ", " << q_heads << "/" << kv_heads << " heads, window "
                     << params.window << ", softcap " << params.softcap);
        // The bf16 pool rounds the raw rows, the f32 pool holds them rounded already.
        const std::vector<std::vector<int32_t>> attended = c.prepare(pool, params.window, /*rounded=*/true);
        const std::vector<double> expected = c.reference(params, /*rounded=*/true);
        std::vector<std::vector<float>> results;
        for (Isa isa : supported_isas()) {
          INFO("isa " << to_string(isa));
          const CpuContext ctx{.pool = &pool, .isa = isa};
          std::vector<float> from_bf16 = c.run_all(ctx, c.layer(DType::bf16), attended, params);
          CHECK(same_bits(from_bf16, c.run_all(ctx, c.layer(DType::f32), attended, params)));
          CHECK(max_error(from_bf16, expected) < 4e-6);
          CHECK(batch_invariant(c, ctx, c.layer(DType::bf16), attended, params, from_bf16));
          results.push_back(std::move(from_bf16));
        }
        for (const auto& r : results) CHECK(same_bits(r, results.front()));
      }
    }
  }
}

TEST_CASE("the float-scale form of paged_attention is AttentionParams with only the scale", "[kernels][attention]") {
  ThreadPool pool(2);
  WindowCase c(64, 8, 2, 16, kMixedBatch);
  const std::vector<std::vector<int32_t>> attended = c.prepare(pool, 0);
  std::vector<const int32_t*> ptrs;
  for (const auto& t : attended) ptrs.push_back(t.data());
  const BatchSlots slots{.num_tokens = c.num_tokens(), .positions = c.positions.data(),
                         .seq_indices = c.seq_indices.data(), .block_tables = ptrs.data()};
  for (Isa isa : supported_isas()) {
    std::vector<float> out(c.q.size());
    paged_attention({.pool = &pool, .isa = isa}, c.layer(DType::f32), slots, c.q.data(), c.q_width(), c.q_heads, 0.125f,
                    out.data(), c.q_width());
    CHECK(same_bits(out, c.run_all({.pool = &pool, .isa = isa}, c.layer(DType::f32), attended, {.scale = 0.125f})));
    CHECK(max_error(out, c.reference({.scale = 0.125f})) < 2e-6);
  }
}
