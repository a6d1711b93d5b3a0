#include "sampling.hpp"

#include <algorithm>
#include <limits>

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {

Status sample_tokens(const CudaContext& ctx, const float* logits, int64_t logits_stride, int64_t num_rows,
                     int64_t vocab, std::span<const RowSampling> params, SamplingWorkspace& workspace,
                     int32_t* tokens) {
  if (num_rows < 0 || vocab <= 0 || logits_stride < vocab || static_cast<int64_t>(params.size()) != num_rows ||
      num_rows * logits_stride > std::numeric_limits<int32_t>::max() ||
      (num_rows > 0 && (logits == nullptr || tokens == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "sample_tokens: bad shape");
  }
  if (num_rows == 0) return {};
  for (const RowSampling& p : params) {
    if (!(p.uniform >= 0.0 && p.uniform < 1.0) || p.top_k < 0 || !(p.top_p > 0.0f && p.top_p <= 1.0f) ||
        !(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
      return make_error(ErrorCode::invalid_argument, "sample_tokens: bad row parameters");
    }
  }
  LLAISYS_RETURN_IF_ERROR(
      cuda_status(launch::argmax_rows(ctx.stream, logits, logits_stride, num_rows, vocab, tokens), "argmax kernel"));
  const bool any_sampled = std::any_of(params.begin(), params.end(), [](const RowSampling& p) { return p.temperature > 0.0f; });
  if (!any_sampled) return {};

  const auto rows = static_cast<std::size_t>(num_rows);
  const auto items = static_cast<std::size_t>(num_rows * logits_stride);
  SamplingWorkspace& ws = workspace;
  // The pinned staging buffers are rewritten below: wait for the previous call's copies.
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(ctx.stream));
  if (ws.params_host.size() < rows) {
    LLAISYS_ASSIGN_OR_RETURN(ws.params_host, PinnedBuffer<RowSampling>::allocate(rows));
  }
  if (ws.offsets_host.size() < 2 * rows) {
    LLAISYS_ASSIGN_OR_RETURN(ws.offsets_host, PinnedBuffer<int32_t>::allocate(2 * rows));
  }
  std::size_t temp_bytes = 0;
  LLAISYS_CUDA_RETURN_IF_ERROR(launch::sort_temp_bytes(&temp_bytes, num_rows, logits_stride));
  LLAISYS_RETURN_IF_ERROR(ws.sorted_logits.reserve(items));
  LLAISYS_RETURN_IF_ERROR(ws.ids.reserve(items));
  LLAISYS_RETURN_IF_ERROR(ws.sorted_ids.reserve(items));
  LLAISYS_RETURN_IF_ERROR(ws.offsets.reserve(2 * rows));
  LLAISYS_RETURN_IF_ERROR(ws.params.reserve(rows));
  LLAISYS_RETURN_IF_ERROR(ws.sort_temp.reserve(std::max<std::size_t>(temp_bytes, 1)));
  for (std::size_t r = 0; r < rows; ++r) {
    ws.params_host[r] = params[r];
    ws.offsets_host[r] = static_cast<int32_t>(static_cast<int64_t>(r) * logits_stride);
    ws.offsets_host[rows + r] = static_cast<int32_t>(static_cast<int64_t>(r) * logits_stride + vocab);
  }
  LLAISYS_RETURN_IF_ERROR(ws.params.upload(ws.params_host.data(), rows, ctx.stream));
  LLAISYS_RETURN_IF_ERROR(ws.offsets.upload(ws.offsets_host.data(), 2 * rows, ctx.stream));
  return cuda_status(launch::sample_rows(ctx.stream, logits, logits_stride, num_rows, vocab, ws.params.data(),
                                         ws.ids.data(), ws.sorted_logits.data(), ws.sorted_ids.data(),
                                         ws.offsets.data(), ws.sort_temp.data(), ws.sort_temp.bytes(), tokens),
                     "sampling kernels");
}

}  // namespace llaisys::cuda
