#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "common.cuh"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int kThreads = 256;

struct Best {
  float value;
  int32_t index;  // -1: none
};

// The better of two candidates: larger value, then lower index; NaN never wins (it never gets in).
struct BetterOf {
  __device__ Best operator()(const Best& a, const Best& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (a.value > b.value) return a;
    if (b.value > a.value) return b;
    return a.index < b.index ? a : b;
  }
};

// argmax as llaisys::argmax: the first index of the maximum, comparisons with > (so a NaN at
// index 0 wins by default, NaN elsewhere never does, and an all -inf row gives 0).
__global__ void argmax_kernel(const float* logits, int64_t stride, int64_t vocab, int32_t* tokens) {
  using BlockReduce = cub::BlockReduce<Best, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * stride;
  Best best{-INFINITY, -1};
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = row[i];
    if (best.index < 0 ? v > -INFINITY : v > best.value) best = Best{v, static_cast<int32_t>(i)};
  }
  const Best winner = BlockReduce(temp).Reduce(best, BetterOf{});
  if (threadIdx.x == 0) {
    const bool first_wins = winner.index < 0 || isnan(row[0]) || !(winner.value > row[0]);
    tokens[blockIdx.x] = first_wins ? 0 : winner.index;
  }
}

__global__ void iota_rows_kernel(int32_t* ids, int64_t stride, int64_t vocab) {
  int32_t* row = ids + static_cast<int64_t>(blockIdx.y) * stride;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    row[i] = static_cast<int32_t>(i);
  }
}

using BlockScanD = cub::BlockScan<double, kThreads>;
using BlockReduceD = cub::BlockReduce<double, kThreads>;
using BlockReduceI = cub::BlockReduce<int, kThreads>;

struct SampleShared {
  union {
    typename BlockScanD::TempStorage scan;
    typename BlockReduceD::TempStorage reduce_d;
    typename BlockReduceI::TempStorage reduce_i;
  } temp;
  double broadcast_d;
  int broadcast_i;
};

// The candidates' weights w_i = exp(scaled_i - max) over sorted positions [first, first + n).
struct Weights {
  const float* sorted;
  int64_t first;
  float inv_temperature;
  float max_scaled;
  __device__ double operator()(int64_t i) const {
    return static_cast<double>(expf(sorted[first + i] * inv_temperature - max_scaled));
  }
};

__device__ double block_sum(SampleShared& s, const Weights& w, int64_t n) {
  double partial = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) partial += w(i);
  const double total = BlockReduceD(s.temp.reduce_d).Sum(partial);
  if (threadIdx.x == 0) s.broadcast_d = total;
  __syncthreads();
  const double result = s.broadcast_d;
  __syncthreads();
  return result;
}

// The first i in [0, n) whose inclusive prefix weight is >= target (reach) or > target (!reach);
// n - 1 when none is (rounding).
__device__ int64_t first_prefix(SampleShared& s, const Weights& w, int64_t n, double target, bool reach) {
  double running = 0.0;
  for (int64_t base = 0; base < n; base += kThreads) {
    const int64_t i = base + threadIdx.x;
    const double x = i < n ? w(i) : 0.0;
    double inclusive = 0.0, chunk_total = 0.0;
    BlockScanD(s.temp.scan).InclusiveSum(x, inclusive, chunk_total);
    __syncthreads();
    const double prefix = running + inclusive;
    const bool hit = i < n && (reach ? prefix >= target : prefix > target);
    const int candidate = hit ? static_cast<int>(threadIdx.x) : kThreads;
    const int found = BlockReduceI(s.temp.reduce_i).Reduce(candidate, ::cuda::minimum<int>{});
    if (threadIdx.x == 0) s.broadcast_i = found;
    __syncthreads();
    const int winner = s.broadcast_i;
    __syncthreads();
    if (winner < kThreads) return base + winner;
    running += chunk_total;
  }
  return n - 1;
}

// One block per row; rows with temperature <= 0 keep the argmax already written.
__global__ void sample_kernel(const float* sorted_logits, const int32_t* sorted_ids, int64_t stride, int64_t vocab,
                              const RowSampling* params, int32_t* tokens) {
  __shared__ SampleShared s;
  const RowSampling p = params[blockIdx.x];
  if (!(p.temperature > 0.0f)) return;
  const float* sorted = sorted_logits + static_cast<int64_t>(blockIdx.x) * stride;
  const int32_t* ids = sorted_ids + static_cast<int64_t>(blockIdx.x) * stride;
  // +NaN sorts first (bit order): skip it. The scan is short unless the row is broken.
  if (threadIdx.x == 0) {
    int64_t first = 0;
    while (first < vocab && isnan(sorted[first])) ++first;
    s.broadcast_i = static_cast<int>(first);
  }
  __syncthreads();
  const int64_t first = s.broadcast_i;
  __syncthreads();
  if (first >= vocab) return;
  const float inv_temperature = 1.0f / p.temperature;
  const float max_scaled = sorted[first] * inv_temperature;
  if (!isfinite(max_scaled)) return;  // the CPU falls back to argmax too
  const float floor = p.min_p > 0.0f ? max_scaled + logf(p.min_p) : -INFINITY;
  // Candidates: the sorted prefix with scaled >= floor and > -inf (-NaN, last, fails both).
  int count = 0;
  for (int64_t i = first + threadIdx.x; i < vocab; i += kThreads) {
    const float scaled = sorted[i] * inv_temperature;
    count += (scaled >= floor && scaled > -INFINITY) ? 1 : 0;
  }
  const int total_count = BlockReduceI(s.temp.reduce_i).Sum(count);
  if (threadIdx.x == 0) s.broadcast_i = total_count;
  __syncthreads();
  int64_t n = s.broadcast_i;
  __syncthreads();
  if (p.top_k > 0 && p.top_k < n) n = p.top_k;
  const Weights w{sorted, first, inv_temperature, max_scaled};
  if (p.top_p < 1.0f) {
    const double total = block_sum(s, w, n);
    n = first_prefix(s, w, n, static_cast<double>(p.top_p) * total, true) + 1;
  }
  const double total = block_sum(s, w, n);
  const int64_t chosen = first_prefix(s, w, n, p.uniform * total, false);
  if (threadIdx.x == 0) tokens[blockIdx.x] = ids[first + chosen];
}

}  // namespace

cudaError_t launch::argmax_rows(cudaStream_t stream, const float* logits, int64_t stride, int64_t num_rows,
                                int64_t vocab, int32_t* tokens) {
  argmax_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(logits, stride, vocab, tokens);
  return cudaGetLastError();
}

cudaError_t launch::sort_temp_bytes(std::size_t* bytes, int64_t num_rows, int64_t stride) {
  return cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, *bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), static_cast<int>(num_rows * stride),
      static_cast<int>(num_rows), static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr));
}

cudaError_t launch::sample_rows(cudaStream_t stream, const float* logits, int64_t stride, int64_t num_rows,
                                int64_t vocab, const RowSampling* params, int32_t* ids, float* sorted_logits,
                                int32_t* sorted_ids, const int32_t* offsets, void* sort_temp,
                                std::size_t sort_temp_bytes, int32_t* tokens) {
  unsigned x_blocks = detail::blocks_for(vocab, kThreads);
  if (x_blocks > 64) x_blocks = 64;
  iota_rows_kernel<<<dim3(x_blocks, static_cast<unsigned>(num_rows)), kThreads, 0, stream>>>(ids, stride, vocab);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  error = cub::DeviceSegmentedRadixSort::SortPairsDescending(
      sort_temp, sort_temp_bytes, logits, sorted_logits, ids, sorted_ids, static_cast<int>(num_rows * stride),
      static_cast<int>(num_rows), offsets, offsets + num_rows, 0, 32, stream);
  if (error != cudaSuccess) return error;
  sample_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(sorted_logits, sorted_ids, stride, vocab,
                                                                          params, tokens);
  return cudaGetLastError();
}

}  // namespace llaisys::cuda
