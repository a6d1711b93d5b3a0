// The CUDA ops::Sampler (sample.hpp): sequence slots and sampling on the device, compiled only with
// the CUDA backend. One step, all on the context's stream:
//
//   raw rows asked for (logprobs, logits_row) -> pinned host memory, before anything touches them
//   one upload of the step's instructions (slot resets, penalties, bias lists, masks), packed on the host
//   reset_slots -> prepare_rows (in place) -> sample_tokens -> finish_rows (mask fix-up, slot counts)
//   tokens -> pinned host memory; synchronise
//
// Logprobs are computed on the host from the downloaded raw rows (llaisys::compute_logprobs, after the
// token is known): only rows that ask pay for a row's download and a pass over it on the CPU; every
// other row returns just its token id. Slots (sampling_prep.hpp): [num_slots, vocab] int32 output
// counts and [num_slots, ceil(vocab / 32)] prompt bits, allocated by init_slots.
//
// Same tokens as the CPU sampler: greedy rows exactly (bit-identical preprocessing, argmax with ties
// to the lower id); sampled rows with top_k set for the same (seed, counter); other sampled rows
// within sample_tokens' documented difference (the order in which top-p candidates are walked).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "cuda/cuda_status.hpp"
#include "cuda/sampling.hpp"
#include "cuda/sampling_prep.hpp"
#include "cuda_device.hpp"
#include "llaisys/ops/sample.hpp"
#include "llaisys/sampling/philox.hpp"
#include "llaisys/sampling/sampler.hpp"

namespace llaisys::ops {
namespace {

// Byte offsets of one step's instructions inside the staging buffer (16-byte aligned sections).
struct StepLayout {
  std::size_t resets = 0, history = 0, preps = 0, bias_ids = 0, bias_values = 0, masks = 0, finish = 0;
  std::size_t bytes = 0;
};

template <class T>
std::size_t place(std::size_t& bytes, const std::vector<T>& section) {
  const std::size_t offset = (bytes + 15) / 16 * 16;
  bytes = offset + section.size() * sizeof(T);
  return offset;
}

template <class T>
void pack(std::byte* staging, std::size_t offset, const std::vector<T>& section) {
  if (!section.empty()) std::memcpy(staging + offset, section.data(), section.size() * sizeof(T));
}

class CudaSampler final : public Sampler {
 public:
  CudaSampler(CudaDevice& device, int32_t vocab_size)
      : device_(device), vocab_(vocab_size), words_(cuda::mask_words(vocab_size)) {}

  Status init_slots(int32_t num_slots) override {
    if (num_slots < 0) return make_error(ErrorCode::invalid_argument, "sampler: {} sequence slots", num_slots);
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.device_index()));
    const cudaStream_t stream = device_.kernels().stream;
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // no kernel may still read the old slots
    output_counts_.reset();
    prompt_bits_.reset();
    num_slots_ = 0;
    const auto slots = static_cast<std::size_t>(num_slots);
    LLAISYS_ASSIGN_OR_RETURN(output_counts_,
                             cuda::DeviceBuffer<int32_t>::allocate(slots * static_cast<std::size_t>(vocab_)));
    LLAISYS_ASSIGN_OR_RETURN(prompt_bits_,
                             cuda::DeviceBuffer<uint32_t>::allocate(slots * static_cast<std::size_t>(words_)));
    if (num_slots > 0) {
      LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(output_counts_.data(), 0, output_counts_.bytes(), stream));
      LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(prompt_bits_.data(), 0, prompt_bits_.bytes(), stream));
      LLAISYS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    }
    num_slots_ = num_slots;
    return Status();
  }

  Status sample(const TensorView& logits, std::span<const SampleRow> rows, const StepOutput& out) override {
    const auto num_rows = static_cast<int64_t>(rows.size());
    LLAISYS_RETURN_IF_ERROR(detail::check_rows(device_, "sample", "logits", logits, DType::f32, num_rows, vocab_));
    if (num_rows == 0) return Status();
    if (detail::row_stride(logits) != vocab_) {
      return Status(ErrorCode::invalid_argument, "sample: logits rows must be contiguous");
    }
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.device_index()));
    Status status = run(logits.data_as<float>(), rows, out);
    // Copies from the pinned staging buffers may still be queued: drain them before they are reused.
    if (!status.ok()) (void)cudaStreamSynchronize(device_.kernels().stream);
    return status;
  }

 private:
  cuda::SlotArrays slots() {
    return {.output_counts = output_counts_.data(),
            .prompt_bits = prompt_bits_.data(),
            .num_slots = num_slots_,
            .vocab = vocab_};
  }

  // Fills the step's host-side instructions from `rows`.
  Status plan(std::span<const SampleRow> rows);
  Status run(float* logits, std::span<const SampleRow> rows, const StepOutput& out);
  void write_host_outputs(std::span<const SampleRow> rows, const StepOutput& out) const;

  CudaDevice& device_;
  int64_t vocab_;
  int64_t words_;  // of an allowed mask / a slot's prompt bits
  int32_t num_slots_ = 0;
  cuda::DeviceBuffer<int32_t> output_counts_;  // [num_slots, vocab]
  cuda::DeviceBuffer<uint32_t> prompt_bits_;   // [num_slots, words]

  // One step's instructions (kept to reuse their capacity).
  std::vector<cuda::SlotReset> resets_;
  std::vector<int32_t> history_;
  std::vector<cuda::RowPrep> preps_;
  std::vector<int32_t> bias_ids_;
  std::vector<float> bias_values_;
  std::vector<uint32_t> masks_;
  std::vector<cuda::RowFinish> finish_;
  bool any_finish_ = false;  // some row has a slot or a mask
  std::vector<cuda::RowSampling> params_;
  std::vector<int32_t> raw_rows_;  // rows whose raw logits come back, in row order

  cuda::PinnedBuffer<std::byte> staging_;
  cuda::DeviceBuffer<std::byte> instructions_;
  cuda::DeviceBuffer<int32_t> tokens_;        // [rows]
  cuda::PinnedBuffer<int32_t> tokens_host_;   // [rows]
  cuda::PinnedBuffer<float> raw_host_;        // [raw rows, vocab]
  cuda::SamplingWorkspace workspace_;
};

Status CudaSampler::plan(std::span<const SampleRow> rows) {
  resets_.clear();
  history_.clear();
  preps_.clear();
  bias_ids_.clear();
  bias_values_.clear();
  masks_.clear();
  finish_.clear();
  params_.clear();
  raw_rows_.clear();
  any_finish_ = false;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const SampleRow& row = rows[r];
    // validate_step checks slots against the KV config; a sampler sized differently must not write
    // past its slots.
    if (row.seq_slot >= num_slots_) {
      return make_error(ErrorCode::invalid_argument, "sample: seq_slot {} of {} slots", row.seq_slot, num_slots_);
    }
    if (row.reset_slot && row.seq_slot >= 0) {
      resets_.push_back({.slot = row.seq_slot,
                         .history_begin = static_cast<int32_t>(history_.size()),
                         .num_history = static_cast<int32_t>(row.history.size()),
                         .num_prompt = row.num_history_prompt});
      history_.insert(history_.end(), row.history.begin(), row.history.end());
    }
    const int64_t mask_begin = row.allowed.empty() ? -1 : static_cast<int64_t>(masks_.size());
    if (!row.allowed.empty()) masks_.insert(masks_.end(), row.allowed.begin(), row.allowed.end());
    const bool penalised = row.seq_slot >= 0 && row.has_penalties();
    if (penalised || !row.logit_bias_ids.empty() || !row.allowed.empty()) {
      preps_.push_back({.row = static_cast<int32_t>(r),
                        .slot = penalised ? row.seq_slot : -1,
                        .repetition_penalty = row.repetition_penalty,
                        .presence_penalty = row.presence_penalty,
                        .frequency_penalty = row.frequency_penalty,
                        .bias_begin = static_cast<int32_t>(bias_ids_.size()),
                        .num_bias = static_cast<int32_t>(row.logit_bias_ids.size()),
                        .mask_begin = mask_begin});
      bias_ids_.insert(bias_ids_.end(), row.logit_bias_ids.begin(), row.logit_bias_ids.end());
      bias_values_.insert(bias_values_.end(), row.logit_bias_values.begin(), row.logit_bias_values.end());
    }
    finish_.push_back({.slot = row.seq_slot, .mask_begin = mask_begin});
    any_finish_ = any_finish_ || row.seq_slot >= 0 || mask_begin >= 0;
    params_.push_back({.temperature = row.temperature,
                       .top_k = row.top_k,
                       .top_p = row.top_p,
                       .min_p = row.min_p,
                       .uniform = row.greedy() ? 0.0 : counter_uniform01(row.seed, row.counter)});
    if (row.num_top_logprobs >= 0 || row.logits_row >= 0) raw_rows_.push_back(static_cast<int32_t>(r));
  }
  return Status();
}

Status CudaSampler::run(float* logits, std::span<const SampleRow> rows, const StepOutput& out) {
  LLAISYS_RETURN_IF_ERROR(plan(rows));
  const cuda::CudaContext& ctx = device_.kernels();
  const cudaStream_t stream = ctx.stream;
  const auto num_rows = rows.size();
  const auto row_bytes = static_cast<std::size_t>(vocab_) * sizeof(float);

  // Every pinned buffer is free here: the previous call synchronised (or drained on failure).
  if (tokens_host_.size() < num_rows) {
    tokens_host_.reset();
    LLAISYS_ASSIGN_OR_RETURN(tokens_host_, cuda::PinnedBuffer<int32_t>::allocate(std::max<std::size_t>(num_rows, 256)));
  }
  LLAISYS_RETURN_IF_ERROR(tokens_.reserve(std::max<std::size_t>(num_rows, 256)));
  const std::size_t raw_floats = raw_rows_.size() * static_cast<std::size_t>(vocab_);
  if (raw_host_.size() < raw_floats) {
    raw_host_.reset();
    LLAISYS_ASSIGN_OR_RETURN(raw_host_, cuda::PinnedBuffer<float>::allocate(raw_floats));
  }

  // 1. The raw rows, before prepare_rows rewrites them (stream order keeps the copies first).
  for (std::size_t i = 0; i < raw_rows_.size(); ++i) {
    const float* src = logits + static_cast<std::size_t>(raw_rows_[i]) * static_cast<std::size_t>(vocab_);
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(raw_host_.data() + i * static_cast<std::size_t>(vocab_), src,
                                                 row_bytes, cudaMemcpyDeviceToHost, stream));
  }

  // 2. One upload of the step's instructions.
  StepLayout layout;
  layout.resets = place(layout.bytes, resets_);
  layout.history = place(layout.bytes, history_);
  layout.preps = place(layout.bytes, preps_);
  layout.bias_ids = place(layout.bytes, bias_ids_);
  layout.bias_values = place(layout.bytes, bias_values_);
  layout.masks = place(layout.bytes, masks_);
  layout.finish = place(layout.bytes, finish_);
  if (staging_.size() < layout.bytes) {
    staging_.reset();
    LLAISYS_ASSIGN_OR_RETURN(staging_,
                             cuda::PinnedBuffer<std::byte>::allocate(std::max<std::size_t>(layout.bytes, 1 << 16)));
  }
  LLAISYS_RETURN_IF_ERROR(instructions_.reserve(std::max<std::size_t>(layout.bytes, 1 << 16)));
  pack(staging_.data(), layout.resets, resets_);
  pack(staging_.data(), layout.history, history_);
  pack(staging_.data(), layout.preps, preps_);
  pack(staging_.data(), layout.bias_ids, bias_ids_);
  pack(staging_.data(), layout.bias_values, bias_values_);
  pack(staging_.data(), layout.masks, masks_);
  pack(staging_.data(), layout.finish, finish_);
  LLAISYS_RETURN_IF_ERROR(instructions_.upload(staging_.data(), layout.bytes, stream));
  std::byte* base = instructions_.data();
  auto at = [base]<class T>(std::size_t offset, const std::vector<T>& section) {
    return section.empty() ? nullptr : reinterpret_cast<const T*>(base + offset);
  };

  // 3. Slots, preprocessing, the pick, the fix-up and the counts.
  const cuda::SlotArrays slot_arrays = slots();
  LLAISYS_RETURN_IF_ERROR(cuda::reset_slots(ctx, slot_arrays, at(layout.resets, resets_),
                                            static_cast<int64_t>(resets_.size()), at(layout.history, history_)));
  LLAISYS_RETURN_IF_ERROR(cuda::prepare_rows(ctx, logits, vocab_, slot_arrays, at(layout.preps, preps_),
                                             static_cast<int64_t>(preps_.size()), at(layout.bias_ids, bias_ids_),
                                             at(layout.bias_values, bias_values_), at(layout.masks, masks_)));
  LLAISYS_RETURN_IF_ERROR(cuda::sample_tokens(ctx, logits, vocab_, static_cast<int64_t>(num_rows), vocab_, params_,
                                              workspace_, tokens_.data()));
  if (any_finish_) {
    LLAISYS_RETURN_IF_ERROR(cuda::finish_rows(ctx, slot_arrays, at(layout.finish, finish_),
                                              static_cast<int64_t>(num_rows), at(layout.masks, masks_),
                                              tokens_.data()));
  }

  // 4. Tokens back; then what the host computes from the raw rows.
  LLAISYS_RETURN_IF_ERROR(tokens_.download(tokens_host_.data(), num_rows, stream));
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  write_host_outputs(rows, out);
  return Status();
}

void CudaSampler::write_host_outputs(std::span<const SampleRow> rows, const StepOutput& out) const {
  std::copy(tokens_host_.data(), tokens_host_.data() + rows.size(), out.tokens.begin());
  const auto width = static_cast<std::size_t>(std::max(out.top_width, 0));
  const auto vocab = static_cast<std::size_t>(vocab_);
  // Unused top entries read -1 (rows without logprobs have none used).
  std::fill(out.top_ids.begin(), out.top_ids.end(), -1);
  std::fill(out.top_logprobs.begin(), out.top_logprobs.end(), 0.0f);
  for (std::size_t i = 0; i < raw_rows_.size(); ++i) {
    const auto r = static_cast<std::size_t>(raw_rows_[i]);
    const SampleRow& row = rows[r];
    const std::span<const float> raw(raw_host_.data() + i * vocab, vocab);
    if (row.logits_row >= 0) {
      const auto first = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(row.logits_row) * vocab);
      std::copy(raw.begin(), raw.end(), out.rows.begin() + first);
    }
    if (row.num_top_logprobs < 0) continue;
    const TokenLogprob lp = compute_logprobs(raw, out.tokens[r], row.num_top_logprobs);
    out.logprobs[r] = lp.logprob;
    for (std::size_t k = 0; k < lp.top.size() && k < width; ++k) {
      out.top_ids[r * width + k] = lp.top[k].first;
      out.top_logprobs[r * width + k] = lp.top[k].second;
    }
  }
}

}  // namespace

Result<std::unique_ptr<Sampler>> make_cuda_sampler(DeviceContext& ctx, int32_t vocab_size) {
  if (vocab_size <= 0) return make_error(ErrorCode::invalid_argument, "sampler: vocabulary of {}", vocab_size);
  return std::unique_ptr<Sampler>(std::make_unique<CudaSampler>(as_cuda(ctx), vocab_size));
}

}  // namespace llaisys::ops
