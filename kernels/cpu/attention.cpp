#include "attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>
#include <vector>

#include "simd.hpp"
#include "softcap.hpp"

namespace llaisys::cpu {
namespace {

using simd::kLanes;

// The K and V rows a task reads, as f32: the layer's own rows, or an f32 copy of a bf16 layer's.
struct F32Rows {
  const float* k;
  const float* v;
  int64_t head_dim;
};

// One kv head of one token: the `group` query heads that share it.
struct GroupTask {
  const float* q;         // [group, head_dim]
  float* out;             // [group, head_dim]
  const int64_t* rows;    // [num_keys]: where the i-th attended key's row starts in F32Rows::k and ::v
  int64_t num_keys;       // the attended keys, first..position
  int64_t group;
};

// The keys a token at `position` attends: [first, end).
struct KeyRange {
  int64_t first;
  int64_t end;
};

KeyRange attended_keys(int32_t position, int32_t window) {
  const int64_t end = static_cast<int64_t>(position) + 1;
  return {.first = window > 0 ? std::max<int64_t>(0, end - window) : 0, .end = end};
}

// rows[i] = kv.offset(table[j / block_size], kv_head, j % block_size) for the keys j = first + i,
// i < count, block by block (no division per key: every head of the group and both K and V reuse
// them). Reads the table entries of the blocks holding those keys only.
void fill_rows(const PagedKvLayer& kv, const int32_t* table, int64_t kv_head, int64_t first, int64_t count,
               int64_t* rows) {
  const int64_t end = first + count;
  for (int64_t j = first; j < end;) {
    const int64_t slot = j % kv.block_size;
    const int64_t base = kv.offset(table[j / kv.block_size], kv_head, slot);
    const int64_t run = std::min(kv.block_size - slot, end - j);
    for (int64_t i = 0; i < run; ++i) rows[j - first + i] = base + i * kv.head_dim;
    j += run;
  }
}

// One bf16 row widened (exactly) to f32.
void widen_row(const bf16_t* in, float* out, int64_t d) {
  for (int64_t i = 0; i < d; ++i) out[i] = bf16_to_f32(in[i]);
}

// The same, 16 elements per instruction (the same exact values).
LLAISYS_TARGET_AVX512 void widen_row_avx512(const bf16_t* in, float* out, int64_t d) {
  for (int64_t i = 0; i < d; i += 16) {
    const __mmask16 mask = simd::tail_mask(d - i);
    const __m256i bits = _mm256_maskz_loadu_epi16(mask, in + i);
    _mm512_mask_storeu_ps(out + i, mask, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16)));
  }
}

// The K and V rows of a bf16 layer's task (rows[] from fill_rows), widened to f32 one after
// another: key j's K row at k + j * head_dim, its V row at v + j * head_dim.
void widen_rows(Isa isa, const PagedKvLayer& kv, int64_t num_keys, const int64_t* rows, float* k, float* v) {
  const auto widen = isa == Isa::avx512 ? &widen_row_avx512 : &widen_row;
  const auto* k16 = static_cast<const bf16_t*>(kv.k);
  const auto* v16 = static_cast<const bf16_t*>(kv.v);
  const int64_t d = kv.head_dim;
  for (int64_t j = 0; j < num_keys; ++j) {
    widen(k16 + rows[j], k + j * d, d);
    widen(v16 + rows[j], v + j * d, d);
  }
}

// At most this many keys widened at once for the next tasks (a task's own keys always are): a
// long prefill on one thread widens its keys in pieces instead of all at once.
constexpr int64_t kMaxWidenedKeys = 8192;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

float max_of(const float* s, int64_t n) {
  float m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, s[j]);
  return m;
}

// ---- scalar -------------------------------------------------------------------------------------

float dot_scalar(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) lanes[i % kLanes] = std::fma(a[i], b[i], lanes[i % kLanes]);
  simd::finish_lanes(lanes, n);
  return simd::reduce_lanes(lanes);
}

// s[j] <- exp(s[j] - max); returns their canonical sum.
float exp_sum_scalar(float* s, int64_t n, float max) {
  float lanes[kLanes] = {};
  for (int64_t j = 0; j < n; ++j) {
    s[j] = simd::exp_canonical(s[j] - max);
    lanes[j % kLanes] = lanes[j % kLanes] + s[j];
  }
  simd::finish_lanes(lanes, n);
  return simd::reduce_lanes(lanes);
}

// The soft cap over each head's score row (`stride` apart), before the max.
void cap_scores(Isa isa, const GroupTask& task, float softcap, float* scores, int64_t stride) {
  if (softcap <= 0.0f) return;
  for (int64_t h = 0; h < task.group; ++h) softcap_row(isa, scores + h * stride, task.num_keys, softcap);
}

void attend_scalar(const F32Rows& kv, const GroupTask& task, const AttentionParams& params, float* scores) {
  const int64_t d = kv.head_dim;
  const int64_t stride = round_up(task.num_keys, kLanes);
  const float scale = params.scale;
  for (int64_t j = 0; j < task.num_keys; ++j) {
    const float* k = kv.k + task.rows[j];
    for (int64_t h = 0; h < task.group; ++h) scores[h * stride + j] = dot_scalar(task.q + h * d, k, d) * scale;
  }
  cap_scores(Isa::scalar, task, params.softcap, scores, stride);
  for (int64_t h = 0; h < task.group; ++h) {
    float* s = scores + h * stride;
    const float sum = exp_sum_scalar(s, task.num_keys, max_of(s, task.num_keys));
    float* out = task.out + h * d;
    std::fill(out, out + d, 0.0f);
    for (int64_t j = 0; j < task.num_keys; ++j) {
      const float* v = kv.v + task.rows[j];
      for (int64_t i = 0; i < d; ++i) out[i] = std::fma(s[j], v[i], out[i]);
    }
    for (int64_t i = 0; i < d; ++i) out[i] = out[i] / sum;
  }
}

// ---- AVX2 ---------------------------------------------------------------------------------------

LLAISYS_TARGET_AVX2 float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
  }
  if (i < n) {
    alignas(32) float ta[16] = {}, tb[16] = {};
    for (int64_t j = i; j < n; ++j) {
      ta[j - i] = a[j];
      tb[j - i] = b[j];
    }
    lo = _mm256_fmadd_ps(_mm256_load_ps(ta), _mm256_load_ps(tb), lo);
    hi = _mm256_fmadd_ps(_mm256_load_ps(ta + 8), _mm256_load_ps(tb + 8), hi);
  }
  return simd::reduce_lanes_avx2(lo, hi);
}

// `s` has room for a multiple of 16 entries; entries past n are overwritten with 0.
LLAISYS_TARGET_AVX2 float exp_sum_avx2(float* s, int64_t n, float max) {
  for (int64_t j = n; j < round_up(n, kLanes); ++j) s[j] = -INFINITY;  // exp -> 0
  const __m256 m = _mm256_set1_ps(max);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __m256 e_lo = simd::exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
    const __m256 e_hi = simd::exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), m));
    _mm256_storeu_ps(s + j, e_lo);
    _mm256_storeu_ps(s + j + 8, e_hi);
    lo = _mm256_add_ps(lo, e_lo);
    hi = _mm256_add_ps(hi, e_hi);
  }
  return simd::reduce_lanes_avx2(lo, hi);
}

LLAISYS_TARGET_AVX2 void attend_avx2(const F32Rows& kv, const GroupTask& task, const AttentionParams& params,
                                     float* scores) {
  const int64_t d = kv.head_dim;
  const int64_t stride = round_up(task.num_keys, kLanes);
  const float scale = params.scale;
  for (int64_t j = 0; j < task.num_keys; ++j) {
    const float* k = kv.k + task.rows[j];
    for (int64_t h = 0; h < task.group; ++h) scores[h * stride + j] = dot_avx2(task.q + h * d, k, d) * scale;
  }
  cap_scores(Isa::avx2, task, params.softcap, scores, stride);
  for (int64_t h = 0; h < task.group; ++h) {
    float* s = scores + h * stride;
    const float sum = exp_sum_avx2(s, task.num_keys, max_of(s, task.num_keys));
    float* out = task.out + h * d;
    std::fill(out, out + d, 0.0f);
    for (int64_t j = 0; j < task.num_keys; ++j) {
      const float* v = kv.v + task.rows[j];
      const __m256 e = _mm256_set1_ps(s[j]);
      int64_t i = 0;
      for (; i + 8 <= d; i += 8) _mm256_storeu_ps(out + i, _mm256_fmadd_ps(e, _mm256_loadu_ps(v + i), _mm256_loadu_ps(out + i)));
      for (; i < d; ++i) out[i] = std::fma(s[j], v[i], out[i]);
    }
    for (int64_t i = 0; i < d; ++i) out[i] = out[i] / sum;
  }
}

// ---- AVX-512 ------------------------------------------------------------------------------------

// A sequence's K and V rows are contiguous only within a block (and head): each task walks a few
// short runs the hardware prefetcher barely starts on, so the rows this many keys ahead are
// fetched by hand.
constexpr int64_t kPrefetchKeys = 16;

inline void prefetch_rows(const float* base, const int64_t* rows, int64_t count, int64_t d) {
  for (int64_t r = 0; r < count; ++r) {
    const char* row = reinterpret_cast<const char*>(base + rows[r]);
    for (int64_t b = 0; b < d * static_cast<int64_t>(sizeof(float)); b += 64) _mm_prefetch(row + b, _MM_HINT_T0);
  }
}

LLAISYS_TARGET_AVX512 float dot_avx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i), _mm512_maskz_loadu_ps(mask, b + i), acc);
  }
  return simd::reduce_lanes_avx512(acc);
}

LLAISYS_TARGET_AVX512 float exp_sum_avx512(float* s, int64_t n, float max) {
  const __m512 m = _mm512_set1_ps(max);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 mask = simd::tail_mask(n - j);
    const __m512 e = _mm512_maskz_mov_ps(mask, simd::exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, s + j), m)));
    _mm512_mask_storeu_ps(s + j, mask, e);
    acc = _mm512_add_ps(acc, e);
  }
  return simd::reduce_lanes_avx512(acc);
}

// out_h = sum_j s_h[j] v_j for H heads at once and a head_dim of exactly 16 * C: each V row is
// loaded once for all H heads, and the H * C accumulator chains are independent, so the FMA
// latency no longer paces the loop. Each element still sums over j in order (the canonical order).
template <int C, int H>
LLAISYS_TARGET_AVX512 void weighted_values_avx512(const F32Rows& kv, const GroupTask& task, const float* s,
                                                  int64_t s_stride, float* out) {
  __m512 acc[H][C];
#pragma GCC unroll 16
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[h][c] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < task.num_keys; ++j) {
    const float* v = kv.v + task.rows[j];
    if (j + kPrefetchKeys < task.num_keys) prefetch_rows(kv.v, task.rows + j + kPrefetchKeys, 1, 16 * C);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m512 vc = _mm512_loadu_ps(v + 16 * c);
#pragma GCC unroll 16
      for (int h = 0; h < H; ++h) acc[h][c] = _mm512_fmadd_ps(_mm512_set1_ps(s[h * s_stride + j]), vc, acc[h][c]);
    }
  }
#pragma GCC unroll 16
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + h * 16 * C + 16 * c, acc[h][c]);
  }
}

// Heads in passes of at most 24 accumulators (6 heads of 64 dims, 3 of 128), the rest of the 32
// vector registers holding the V row and the weights.
template <int C, int... H>
LLAISYS_TARGET_AVX512 void weighted_values_heads_avx512(const F32Rows& kv, const GroupTask& task, const float* s,
                                                        int64_t s_stride, std::integer_sequence<int, H...>) {
  constexpr int kMaxHeads = sizeof...(H);
  using Pass = void (*)(const F32Rows&, const GroupTask&, const float*, int64_t, float*);
  constexpr Pass kPasses[] = {&weighted_values_avx512<C, H + 1>...};
  const int64_t d = 16 * C;
  for (int64_t h = 0; h < task.group; h += kMaxHeads) {
    const int64_t heads = std::min<int64_t>(kMaxHeads, task.group - h);
    kPasses[heads - 1](kv, task, s + h * s_stride, s_stride, task.out + h * d);
  }
}

LLAISYS_TARGET_AVX512 void weighted_values_any_avx512(const F32Rows& kv, const GroupTask& task, const float* s,
                                                      float* out) {
  const int64_t d = kv.head_dim;
  std::fill(out, out + d, 0.0f);
  for (int64_t j = 0; j < task.num_keys; ++j) {
    const float* v = kv.v + task.rows[j];
    const __m512 e = _mm512_set1_ps(s[j]);
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 mask = simd::tail_mask(d - i);
      _mm512_mask_storeu_ps(out + i, mask,
                            _mm512_fmadd_ps(e, _mm512_maskz_loadu_ps(mask, v + i), _mm512_maskz_loadu_ps(mask, out + i)));
    }
  }
}

// Scores of 4 consecutive keys for one head: the 4 dot products (each in the canonical order, as
// dot_avx512) reduced together, which costs a third of 4 separate reductions.
LLAISYS_TARGET_AVX512 void dot4_avx512(const float* q, const float* const (&k)[4], int64_t n, float scale,
                                       float* out) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::tail_mask(n - i);
    const __m512 qv = _mm512_maskz_loadu_ps(mask, q + i);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[c] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(mask, k[c] + i), acc[c]);
  }
  float sums[4];
  simd::reduce4_lanes_avx512(acc[0], acc[1], acc[2], acc[3], sums);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) out[c] = sums[c] * scale;
}

// dot4_avx512 for every head of the group over the same 4 keys of 64 dims: the keys are loaded
// once into 16 registers instead of once per head (same products, same order, same bits).
LLAISYS_TARGET_AVX512 void dot4_heads64_avx512(const float* q, int64_t group, const float* const (&k)[4], float scale,
                                               float* scores, int64_t stride) {
  __m512 keys[4][4];
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) keys[c][i] = _mm512_loadu_ps(k[c] + 16 * i);
  }
  for (int64_t h = 0; h < group; ++h) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512 qv = _mm512_loadu_ps(q + h * 64 + 16 * i);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) acc[c] = _mm512_fmadd_ps(qv, keys[c][i], acc[c]);
    }
    float sums[4];
    simd::reduce4_lanes_avx512(acc[0], acc[1], acc[2], acc[3], sums);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) scores[h * stride + c] = sums[c] * scale;
  }
}

// The same for 2 keys of 128 dims (their 16 vectors fill the registers 4 keys of 64 do): each key's
// dot product in the canonical order, as dot4_avx512 computes it.
LLAISYS_TARGET_AVX512 void dot2_heads128_avx512(const float* q, int64_t group, const float* k0, const float* k1,
                                                float scale, float* scores, int64_t stride) {
  __m512 keys[2][8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    keys[0][i] = _mm512_loadu_ps(k0 + 16 * i);
    keys[1][i] = _mm512_loadu_ps(k1 + 16 * i);
  }
  for (int64_t h = 0; h < group; ++h) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const __m512 qv = _mm512_loadu_ps(q + h * 128 + 16 * i);
      acc0 = _mm512_fmadd_ps(qv, keys[0][i], acc0);
      acc1 = _mm512_fmadd_ps(qv, keys[1][i], acc1);
    }
    float sums[4];
    simd::reduce4_lanes_avx512(acc0, acc1, acc0, acc1, sums);
    scores[h * stride] = sums[0] * scale;
    scores[h * stride + 1] = sums[1] * scale;
  }
}

LLAISYS_TARGET_AVX512 void attend_avx512(const F32Rows& kv, const GroupTask& task, const AttentionParams& params,
                                         float* scores) {
  const int64_t d = kv.head_dim;
  const int64_t stride = round_up(task.num_keys, kLanes);
  const float scale = params.scale;
  auto key = [&](int64_t j) { return kv.k + task.rows[j]; };
  int64_t j = 0;
  for (; j + 4 <= task.num_keys; j += 4) {
    const float* const keys[4] = {key(j), key(j + 1), key(j + 2), key(j + 3)};
    if (j + kPrefetchKeys + 4 <= task.num_keys) prefetch_rows(kv.k, task.rows + j + kPrefetchKeys, 4, d);
    if (d == 64) {
      dot4_heads64_avx512(task.q, task.group, keys, scale, scores + j, stride);
    } else if (d == 128) {
      dot2_heads128_avx512(task.q, task.group, keys[0], keys[1], scale, scores + j, stride);
      dot2_heads128_avx512(task.q, task.group, keys[2], keys[3], scale, scores + j + 2, stride);
    } else {
      for (int64_t h = 0; h < task.group; ++h) dot4_avx512(task.q + h * d, keys, d, scale, scores + h * stride + j);
    }
  }
  for (; j < task.num_keys; ++j) {
    const float* k = key(j);
    for (int64_t h = 0; h < task.group; ++h) scores[h * stride + j] = dot_avx512(task.q + h * d, k, d) * scale;
  }
  cap_scores(Isa::avx512, task, params.softcap, scores, stride);
  float* sums = scores + task.group * stride;  // the caller leaves room for them
  for (int64_t h = 0; h < task.group; ++h) {
    float* s = scores + h * stride;
    sums[h] = exp_sum_avx512(s, task.num_keys, max_of(s, task.num_keys));
  }
  if (d == 64) {
    weighted_values_heads_avx512<4>(kv, task, scores, stride, std::make_integer_sequence<int, 6>{});
  } else if (d == 128) {
    weighted_values_heads_avx512<8>(kv, task, scores, stride, std::make_integer_sequence<int, 3>{});
  } else {
    for (int64_t h = 0; h < task.group; ++h) weighted_values_any_avx512(kv, task, scores + h * stride, task.out + h * d);
  }
  for (int64_t h = 0; h < task.group; ++h) {
    float* out = task.out + h * d;
    for (int64_t i = 0; i < d; ++i) out[i] = out[i] / sums[h];
  }
}

}  // namespace

void paged_attention(const CpuContext& ctx, const PagedKvLayer& layer, const BatchSlots& batch, const float* q,
                     int64_t q_stride, int64_t num_q_heads, const AttentionParams& params, float* out,
                     int64_t out_stride) {
  const int64_t group = num_q_heads / layer.num_kv_heads;
  const int64_t num_tasks = batch.num_tokens * layer.num_kv_heads;
  const int64_t d = layer.head_dim;
  // Tells this call's widened rows from an earlier call's (the cache may have changed since).
  static std::atomic<uint64_t> calls{0};
  const uint64_t call = calls.fetch_add(1, std::memory_order_relaxed) + 1;
  // kv head by kv head, last tokens first: in a causal prefill later tokens have more keys, and
  // handing out the longest tasks first lets the dynamic chunks even out the threads; a thread's
  // consecutive tasks share a kv head (and, in a prefill, a sequence).
  auto kv_head_of = [&](int64_t task_index) { return task_index / batch.num_tokens; };
  auto token_of = [&](int64_t task_index) { return batch.num_tokens - 1 - task_index % batch.num_tokens; };
  auto table_of = [&](int64_t t) { return batch.block_tables[batch.seq_indices[t]]; };
  auto keys_of = [&](int64_t t) { return attended_keys(batch.positions[t], params.window); };
  auto work = [&](int64_t begin, int64_t end) {
    // Scores of the group's heads, one row per head padded to 16 entries.
    thread_local std::vector<float> scores;
    // Where each attended key's K and V rows start (fill_rows).
    thread_local std::vector<int64_t> rows;
    // A bf16 layer's rows, widened to f32 (widen_rows) for one sequence and kv head of one call:
    // the keys [first, end), key j at (j - first) * head_dim. A prefill's later tasks of that
    // sequence and head reuse them.
    thread_local std::vector<float> wide_k;
    thread_local std::vector<float> wide_v;
    thread_local struct {
      uint64_t call = 0;
      const int32_t* table = nullptr;
      int64_t kv_head = -1;
      KeyRange keys{0, 0};
    } wide;
    for (int64_t task_index = begin; task_index < end; ++task_index) {
      const int64_t g = kv_head_of(task_index);
      const int64_t t = token_of(task_index);
      const KeyRange keys = keys_of(t);
      const int64_t num_keys = keys.end - keys.first;
      const int32_t* table = table_of(t);
      if (rows.size() < static_cast<std::size_t>(num_keys)) rows.resize(static_cast<std::size_t>(num_keys));
      F32Rows kv{.k = static_cast<const float*>(layer.k), .v = static_cast<const float*>(layer.v), .head_dim = d};
      if (layer.dtype != DType::bf16) {
        fill_rows(layer, table, g, keys.first, num_keys, rows.data());
      } else {
        if (wide.call != call || wide.table != table || wide.kv_head != g || keys.first < wide.keys.first ||
            keys.end > wide.keys.end) {
          // Widen this task's keys together with those of the thread's next tasks on the same
          // sequence and kv head, as long as their key ranges overlap (so every widened key is
          // attended by one of them, and no block outside their windows is read).
          KeyRange widen = keys;
          for (int64_t next = task_index + 1; next < end && kv_head_of(next) == g; ++next) {
            const int64_t t_next = token_of(next);
            if (table_of(t_next) != table) break;
            const KeyRange other = keys_of(t_next);
            const KeyRange merged{.first = std::min(widen.first, other.first), .end = std::max(widen.end, other.end)};
            if (other.first > widen.end || other.end < widen.first || merged.end - merged.first > kMaxWidenedKeys) break;
            widen = merged;
          }
          const int64_t count = widen.end - widen.first;
          const auto floats = static_cast<std::size_t>(count * d);
          if (wide_k.size() < floats) {
            wide_k.resize(floats);
            wide_v.resize(floats);
          }
          if (rows.size() < static_cast<std::size_t>(count)) rows.resize(static_cast<std::size_t>(count));
          fill_rows(layer, table, g, widen.first, count, rows.data());
          widen_rows(ctx.isa, layer, count, rows.data(), wide_k.data(), wide_v.data());
          wide = {.call = call, .table = table, .kv_head = g, .keys = widen};
        }
        // Widened rows are contiguous.
        const int64_t offset = keys.first - wide.keys.first;
        for (int64_t i = 0; i < num_keys; ++i) rows[static_cast<std::size_t>(i)] = (offset + i) * d;
        kv = {.k = wide_k.data(), .v = wide_v.data(), .head_dim = d};
      }
      const GroupTask task{.q = q + t * q_stride + g * group * d,
                           .out = out + t * out_stride + g * group * d,
                           .rows = rows.data(),
                           .num_keys = num_keys,
                           .group = group};
      // The scores of the group's heads, then their exp sums.
      const std::size_t need = static_cast<std::size_t>(group * round_up(task.num_keys, kLanes) + group);
      if (scores.size() < need) scores.resize(need);
      switch (ctx.isa) {
        case Isa::avx512: attend_avx512(kv, task, params, scores.data()); break;
        case Isa::avx2: attend_avx2(kv, task, params, scores.data()); break;
        case Isa::scalar: attend_scalar(kv, task, params, scores.data()); break;
      }
    }
  };
  // Work of one task: a dot product and a weighted sum over head_dim per attended key and head
  // (the soft cap adds a tanh per score; the mean number of keys stands for all tasks).
  int64_t keys = 0;
  for (int64_t t = 0; t < batch.num_tokens; ++t) {
    const KeyRange range = keys_of(t);
    keys += range.end - range.first;
  }
  const int64_t per_key = 2 * d + (params.softcap > 0.0f ? 32 : 0);
  const int64_t work_per_task = group * per_key * std::max<int64_t>(1, keys / std::max<int64_t>(1, batch.num_tokens));
  ctx.pool->parallel_for(num_tasks, 1, work, work_per_task);
}

}  // namespace llaisys::cpu
