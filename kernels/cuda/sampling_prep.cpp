#include "sampling_prep.hpp"

#include "cuda_status.hpp"
#include "launch.hpp"

namespace llaisys::cuda {
namespace {

constexpr int64_t kMaxBlocks = 0x7fffffff;  // one block per row or reset (grid x)

bool bad_slots(const SlotArrays& slots) {
  return slots.vocab <= 0 || slots.num_slots < 0 ||
         (slots.num_slots > 0 && (slots.output_counts == nullptr || slots.prompt_bits == nullptr));
}

}  // namespace

Status reset_slots(const CudaContext& ctx, const SlotArrays& slots, const SlotReset* resets, int64_t num_resets,
                   const int32_t* history) {
  if (bad_slots(slots) || num_resets < 0 || num_resets > slots.num_slots ||
      (num_resets > 0 && (resets == nullptr || history == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "reset_slots: bad arguments ({} resets, {} slots)", num_resets,
                      slots.num_slots);
  }
  if (num_resets == 0) return {};
  return cuda_status(launch::reset_slots(ctx.stream, slots, resets, num_resets, history), "reset_slots kernel");
}

Status prepare_rows(const CudaContext& ctx, float* logits, int64_t stride, const SlotArrays& slots,
                    const RowPrep* preps, int64_t num_preps, const int32_t* bias_ids, const float* bias_values,
                    const uint32_t* masks) {
  if (bad_slots(slots) || stride < slots.vocab || num_preps < 0 || num_preps > kMaxBlocks ||
      (num_preps > 0 && (logits == nullptr || preps == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "prepare_rows: bad arguments ({} rows of {}, stride {})",
                      num_preps, slots.vocab, stride);
  }
  if (num_preps == 0) return {};
  return cuda_status(
      launch::prepare_rows(ctx.stream, logits, stride, slots, preps, num_preps, bias_ids, bias_values, masks),
      "prepare_rows kernel");
}

Status finish_rows(const CudaContext& ctx, const SlotArrays& slots, const RowFinish* finish, int64_t num_rows,
                   const uint32_t* masks, int32_t* tokens) {
  if (bad_slots(slots) || num_rows < 0 || num_rows > kMaxBlocks ||
      (num_rows > 0 && (finish == nullptr || tokens == nullptr))) {
    return make_error(ErrorCode::invalid_argument, "finish_rows: bad arguments ({} rows)", num_rows);
  }
  if (num_rows == 0) return {};
  return cuda_status(launch::finish_rows(ctx.stream, slots, finish, num_rows, masks, tokens), "finish_rows kernel");
}

}  // namespace llaisys::cuda
