#pragma once
// The model-side sampler of a step (plugin ABI v2): the sequence slots live on the model's device
// and a step's logits rows are sampled there, so only token ids (and the logprobs or raw rows a row
// asks for) come back to the host. Semantics: llaisys_sample_row (plugin_abi.h), bit-identical to
// LogitsSampler on the CPU.
//
//   LLAISYS_ASSIGN_OR_RETURN(auto sampler, ops::make_sampler(ctx, vocab_size));
//   sampler->init_slots(num_seq_slots);
//   sampler->sample(logits, rows, out);  // logits: [rows, vocab] f32 on ctx's device

#include <memory>
#include <span>

#include "llaisys/model/step.hpp"
#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Drops every slot's state and makes room for num_slots.
  virtual Status init_slots(int32_t num_slots) = 0;
  // logits: [rows.size(), vocab] f32 on the device, contiguous, modified in place. rows have passed
  // validate_step(); out is host memory, written when this returns.
  virtual Status sample(const TensorView& logits, std::span<const SampleRow> rows, const StepOutput& out) = 0;
};

// The CPU sampler runs rows in parallel on the context's thread pool; the CUDA one samples on the
// device.
Result<std::unique_ptr<Sampler>> make_sampler(DeviceContext& ctx, int32_t vocab_size);

}  // namespace llaisys::ops
