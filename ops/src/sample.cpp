#include "llaisys/ops/sample.hpp"

#include "check.hpp"
#include "cpu_device.hpp"
#include "llaisys/sampling/step_sampler.hpp"

namespace llaisys::ops {

#ifdef LLAISYS_HAVE_CUDA
// cuda_sampler.cpp: slots and sampling on the device.
Result<std::unique_ptr<Sampler>> make_cuda_sampler(DeviceContext& ctx, int32_t vocab_size);
#endif

namespace {

// Rows run in parallel on the context's thread pool; a row's result never depends on the thread.
class CpuSampler final : public Sampler {
 public:
  CpuSampler(CpuDevice& device, int32_t vocab_size) : device_(device), sampler_(vocab_size) {}

  Status init_slots(int32_t num_slots) override {
    if (num_slots < 0) return make_error(ErrorCode::invalid_argument, "sampler: {} sequence slots", num_slots);
    sampler_.init_slots(num_slots);
    return Status();
  }

  Status sample(const TensorView& logits, std::span<const SampleRow> rows, const StepOutput& out) override {
    const auto num_rows = static_cast<int64_t>(rows.size());
    LLAISYS_RETURN_IF_ERROR(detail::check_rows(device_, "sample", "logits", logits, DType::f32, num_rows,
                                               sampler_.vocab_size()));
    if (num_rows > 0 && detail::row_stride(logits) != sampler_.vocab_size()) {
      return Status(ErrorCode::invalid_argument, "sample: logits rows must be contiguous");
    }
    std::span<float> values(logits.data_as<float>(), static_cast<std::size_t>(num_rows * sampler_.vocab_size()));
    cpu::ThreadPool& pool = *device_.kernels().pool;
    // A row costs a few passes over the vocabulary: small vocabularies stay on the calling thread.
    const int64_t work_per_row = int64_t{4} * sampler_.vocab_size();
    const ParallelFor parallel = [&pool, work_per_row](int64_t count, const std::function<void(int64_t)>& body) {
      pool.parallel_for(
          count, 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) body(i);
          },
          work_per_row);
    };
    sampler_.sample(values, rows, out, parallel);
    return Status();
  }

 private:
  CpuDevice& device_;
  StepSampler sampler_;
};

}  // namespace

Result<std::unique_ptr<Sampler>> make_sampler(DeviceContext& ctx, int32_t vocab_size) {
  if (vocab_size <= 0) return make_error(ErrorCode::invalid_argument, "sampler: vocabulary of {}", vocab_size);
  switch (ctx.device().kind) {
    case Device::Kind::cpu: return std::unique_ptr<Sampler>(std::make_unique<CpuSampler>(as_cpu(ctx), vocab_size));
#ifdef LLAISYS_HAVE_CUDA
    case Device::Kind::cuda: return make_cuda_sampler(ctx, vocab_size);
#endif
    default: return detail::unsupported_device(ctx, "sample");
  }
}

}  // namespace llaisys::ops
