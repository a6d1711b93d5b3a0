#include <cfloat>

#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

using launch::AttentionArgs;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 2;            // query rows (token, head) per warp
constexpr int kMaxRows = kWarps * kRowsPerWarp;
constexpr int kMaxDimsPerLane = 8;         // head_dim <= 256

// Shared memory: Q rows [kMaxRows][D], K [block_size][D + 1] (padded: lane j reads key j's element
// d, conflict-free), V [block_size][D].
__host__ __device__ inline int64_t shared_floats(int64_t block_size, int64_t head_dim) {
  return kMaxRows * head_dim + block_size * (head_dim + 1) + block_size * head_dim;
}

// K/V of one cached block are staged in 16-byte loads (8 bf16 or 4 f32 values; head_dim is a
// multiple of 32 and the cache base is 16-byte aligned: attention.cpp checks both), up to
// kLoadsInFlight of each per thread issued before any is converted, so a block costs about one
// memory round trip instead of one per element (a decode step reads a few blocks per CTA and is
// bound by that latency).
template <class KvT>
constexpr int kVec = static_cast<int>(16 / sizeof(KvT));
constexpr int kLoadsInFlight = 4;

template <class KvT>
__device__ __forceinline__ void store_vec(const uint4& word, float* dst) {
  KvT values[kVec<KvT>];
  static_assert(sizeof(values) == sizeof(uint4));
  memcpy(values, &word, sizeof(word));
#pragma unroll
  for (int u = 0; u < kVec<KvT>; ++u) dst[u] = detail::to_f32(values[u]);
}

// k_s[j][d] (row stride D + 1), v_s[j][d] (row stride D) <- the block's first num_vecs * kVec values.
template <class KvT>
__device__ __forceinline__ void stage_kv(const KvT* __restrict__ k_src, const KvT* __restrict__ v_src, int num_vecs,
                                         int D, float* k_s, float* v_s) {
  const auto* k4 = reinterpret_cast<const uint4*>(k_src);
  const auto* v4 = reinterpret_cast<const uint4*>(v_src);
  for (int first = static_cast<int>(threadIdx.x); first < num_vecs; first += kThreads * kLoadsInFlight) {
    uint4 kw[kLoadsInFlight], vw[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int i = first + u * kThreads;
      if (i < num_vecs) {
        kw[u] = __ldg(k4 + i);
        vw[u] = __ldg(v4 + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int i = first + u * kThreads;
      if (i < num_vecs) {
        const int e = i * kVec<KvT>, j = e / D, d = e % D;
        store_vec<KvT>(kw[u], k_s + j * (D + 1) + d);
        store_vec<KvT>(vw[u], v_s + e);
      }
    }
  }
}

// grid: (tiles, kv heads, splits). Each warp owns up to kRowsPerWarp query rows (row = warp +
// kWarps * r); lane l keeps the accumulator of dims l, l + 32, ... For every 32 keys of a cached
// block, lane j computes key j's score for the row (full dot product against the Q row in shared
// memory, then scale and softcap), the warp takes the chunk's max and sum, and the accumulators are
// updated from V. The tile's keys start at its earliest token's window start rounded down to a
// block (launch::tile_key_begin, as plan_attention); each row masks its own window.
template <class KvT, class OutT>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionArgs a, const KvT* k_cache, const KvT* v_cache) {
  const AttentionTile tile = a.tiles[blockIdx.x];
  const int split = static_cast<int>(blockIdx.z);
  if (split >= tile.num_splits) return;
  const int64_t kv_head = blockIdx.y;
  const int64_t D = a.head_dim;
  const int dims_per_lane = static_cast<int>(D / 32);
  const int rows = tile.num_tokens * static_cast<int>(a.group);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // Splits are cut from the plan's window start; nothing before the call's own window start is
  // read (a plan made without a window serves windowed layers too: its splits wholly before the
  // window stream nothing and write empty partials). Same values in every thread.
  int32_t plan_begin = 0, own_begin = 0;
  if (a.window > 0) {  // (plan_window > 0 implies window > 0: attention.cpp)
    int32_t min_position = a.batch.positions[tile.first_token];
    for (int i = 1; i < tile.num_tokens; ++i) min_position = min(min_position, a.batch.positions[tile.first_token + i]);
    plan_begin = launch::tile_key_begin(min_position, a.plan_window, a.block_size);
    own_begin = launch::tile_key_begin(min_position, a.window, a.block_size);
  }
  const int32_t split_begin = plan_begin + split * a.keys_per_split;
  const int32_t key_begin = max(split_begin, own_begin);
  const int32_t key_end = min(tile.num_keys, split_begin + a.keys_per_split);

  extern __shared__ float shared[];
  float* q_s = shared;
  float* k_s = q_s + kMaxRows * D;
  float* v_s = k_s + a.block_size * (D + 1);

  for (int64_t i = threadIdx.x; i < rows * D; i += kThreads) {
    const int64_t row = i / D, d = i % D;
    const int64_t token = tile.first_token + row / a.group;
    const int64_t head = kv_head * a.group + row % a.group;
    q_s[i] = a.q[token * a.q_stride + head * D + d];
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kMaxDimsPerLane];
  int32_t pos[kRowsPerWarp], lo[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) acc[r][i] = 0.0f;
    const int row = warp + kWarps * r;
    pos[r] = row < rows ? a.batch.positions[tile.first_token + row / a.group] : -1;
    // First visible key of the row: p - window + 1 (may be negative: everything from 0).
    lo[r] = a.window > 0 ? pos[r] - a.window + 1 : 0;
  }

  const int32_t* table = a.batch.block_tables + static_cast<int64_t>(tile.seq) * a.batch.max_blocks_per_seq;
  for (int32_t block_start = key_begin; block_start < key_end; block_start += static_cast<int32_t>(a.block_size)) {
    const int64_t block = table[block_start / a.block_size];
    // A freed block (-1) is never dereferenced. The plan never reaches one unless the caller freed
    // a block inside some token's window; its keys are then skipped (CTA-uniform branch).
    if (block < 0) continue;
    const int n = min(static_cast<int>(a.block_size), key_end - block_start);
    __syncthreads();  // the previous block's K/V are no longer read (and Q is loaded)
    const int64_t base = ((block * a.num_kv_heads + kv_head) * a.block_size) * D;
    stage_kv(k_cache + base, v_cache + base, static_cast<int>(n * D / kVec<KvT>), static_cast<int>(D), k_s, v_s);
    __syncthreads();
    for (int sub = 0; sub < n; sub += 32) {
      const int count = min(32, n - sub);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int row = warp + kWarps * r;
        if (row >= rows) continue;  // warp-uniform
        const int32_t key = block_start + sub + lane;
        float score = -INFINITY;
        if (lane < count && key <= pos[r] && key >= lo[r]) {
          const float* qr = q_s + row * D;
          const float* kr = k_s + (sub + lane) * (D + 1);
          // Four interleaved partial sums (d mod 4) added in a fixed order: the chain of dependent
          // FMAs is a quarter as long, and every row still sums in the same order.
          float dot4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          for (int64_t d = 0; d < D; d += 4) {
#pragma unroll
            for (int u = 0; u < 4; ++u) dot4[u] = fmaf(qr[d + u], kr[d + u], dot4[u]);
          }
          const float dot = __fadd_rn(__fadd_rn(dot4[0], dot4[1]), __fadd_rn(dot4[2], dot4[3]));
          score = __fmul_rn(dot, a.scale);
          if (a.softcap > 0.0f) score = __fmul_rn(a.softcap, tanhf(__fdiv_rn(score, a.softcap)));
        }
        const float chunk_max = detail::warp_max(score);
        if (chunk_max == -INFINITY) continue;  // no visible key in this chunk for the row
        const float m_new = fmaxf(m[r], chunk_max);
        const float correction = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
        const float p = score == -INFINITY ? 0.0f : expf(score - m_new);
        l[r] = l[r] * correction + detail::warp_sum(p);
#pragma unroll
        for (int i = 0; i < kMaxDimsPerLane; ++i) acc[r][i] *= correction;
        for (int jj = 0; jj < count; ++jj) {
          const float pj = __shfl_sync(0xffffffffu, p, jj);
          const float* vr = v_s + (sub + jj) * D;
#pragma unroll
          for (int i = 0; i < kMaxDimsPerLane; ++i) {
            if (i < dims_per_lane) acc[r][i] = fmaf(pj, vr[lane + 32 * i], acc[r][i]);
          }
        }
        m[r] = m_new;
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp + kWarps * r;
    if (row >= rows) continue;
    const int64_t t_local = row / a.group;
    const int64_t token = tile.first_token + t_local;
    const int64_t head = kv_head * a.group + row % a.group;
    if (tile.num_splits == 1) {
      OutT* o = static_cast<OutT*>(a.out) + token * a.out_stride + head * D;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
      for (int i = 0; i < kMaxDimsPerLane; ++i) {
        if (i < dims_per_lane) o[lane + 32 * i] = detail::from_f32<OutT>(acc[r][i] * inv);
      }
    } else {
      const int64_t prow = tile.partial_offset + (t_local * a.num_q_heads + head) * tile.num_splits + split;
#pragma unroll
      for (int i = 0; i < kMaxDimsPerLane; ++i) {
        if (i < dims_per_lane) a.partial_acc[prow * D + lane + 32 * i] = acc[r][i];
      }
      if (lane == 0) {
        a.partial_ml[prow * 2] = m[r];
        a.partial_ml[prow * 2 + 1] = l[r];
      }
    }
  }
}

// grid: (tiles, q heads); combines the splits of every token of a split tile:
//   M = max_s m_s,  L = sum_s l_s e^(m_s - M),  out = sum_s acc_s e^(m_s - M) / L.
template <class OutT>
__global__ void combine_kernel(AttentionArgs a) {
  const AttentionTile tile = a.tiles[blockIdx.x];
  if (tile.num_splits <= 1) return;
  const int64_t head = blockIdx.y;
  const int64_t D = a.head_dim;
  for (int64_t t_local = 0; t_local < tile.num_tokens; ++t_local) {
    const int64_t first = tile.partial_offset + (t_local * a.num_q_heads + head) * tile.num_splits;
    float M = -INFINITY;
    for (int s = 0; s < tile.num_splits; ++s) M = fmaxf(M, a.partial_ml[(first + s) * 2]);
    float L = 0.0f;
    for (int s = 0; s < tile.num_splits; ++s) {
      const float ms = a.partial_ml[(first + s) * 2];
      if (ms != -INFINITY) L += a.partial_ml[(first + s) * 2 + 1] * expf(ms - M);
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    OutT* o = static_cast<OutT*>(a.out) + (tile.first_token + t_local) * a.out_stride + head * D;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      float sum = 0.0f;
      for (int s = 0; s < tile.num_splits; ++s) {
        const float ms = a.partial_ml[(first + s) * 2];
        if (ms != -INFINITY) sum = fmaf(a.partial_acc[(first + s) * D + d], expf(ms - M), sum);
      }
      o[d] = detail::from_f32<OutT>(sum * inv);
    }
  }
}

template <class KvT, class OutT>
cudaError_t run(cudaStream_t stream, const AttentionArgs& args, int64_t num_tiles, int32_t max_splits,
                const void* k_cache, const void* v_cache) {
  const auto bytes = static_cast<int>(shared_floats(args.block_size, args.head_dim) * sizeof(float));
  const auto kernel = attention_kernel<KvT, OutT>;
  if (bytes > 48 * 1024) {
    const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (error != cudaSuccess) return error;
  }
  const dim3 grid(static_cast<unsigned>(num_tiles), static_cast<unsigned>(args.num_kv_heads),
                  static_cast<unsigned>(max_splits));
  kernel<<<grid, kThreads, bytes, stream>>>(args, static_cast<const KvT*>(k_cache), static_cast<const KvT*>(v_cache));
  if (max_splits > 1) {
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) return error;
    combine_kernel<OutT><<<dim3(static_cast<unsigned>(num_tiles), static_cast<unsigned>(args.num_q_heads)), 128, 0,
                           stream>>>(args);
  }
  return cudaGetLastError();
}

}  // namespace

int64_t launch::attention_shared_bytes(int64_t block_size, int64_t head_dim) {
  return shared_floats(block_size, head_dim) * static_cast<int64_t>(sizeof(float));
}

cudaError_t launch::paged_attention(cudaStream_t stream, const AttentionArgs& args, int64_t num_tiles,
                                    int32_t max_splits, const void* k_cache, const void* v_cache, bool cache_bf16,
                                    bool out_bf16) {
  if (cache_bf16) {
    return out_bf16 ? run<__nv_bfloat16, __nv_bfloat16>(stream, args, num_tiles, max_splits, k_cache, v_cache)
                    : run<__nv_bfloat16, float>(stream, args, num_tiles, max_splits, k_cache, v_cache);
  }
  return out_bf16 ? run<float, __nv_bfloat16>(stream, args, num_tiles, max_splits, k_cache, v_cache)
                  : run<float, float>(stream, args, num_tiles, max_splits, k_cache, v_cache);
}

}  // namespace llaisys::cuda
