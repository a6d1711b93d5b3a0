// CudaDecoderLM in a build without the CUDA backend (nvcc not found, or LLAISYS_ENABLE_CUDA=OFF):
// open() explains; nothing else is reachable.

#include "cuda_decoder.hpp"

namespace llaisys::decoder {

struct CudaDecoderLM::Impl {
  ModelInfo info;
};

Result<std::unique_ptr<CudaDecoderLM>> CudaDecoderLM::open(const ModelCreateParams&, const DecoderVariant& variant,
                                                           int device) {
  return make_error(ErrorCode::unsupported,
                    "{}: device cuda:{} requested, but this build of llaisys has no CUDA backend (configure where "
                    "nvcc is found, without -DLLAISYS_ENABLE_CUDA=OFF; see docs/CUDA.md)",
                    variant.architecture, device);
}

CudaDecoderLM::CudaDecoderLM(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaDecoderLM::~CudaDecoderLM() = default;
const ModelInfo& CudaDecoderLM::info() const { return impl_->info; }
Status CudaDecoderLM::init_kv_cache(const KvCacheConfig&) { return Status(ErrorCode::unsupported, "no CUDA backend"); }
Status CudaDecoderLM::forward(const ForwardBatch&, std::span<float>) {
  return Status(ErrorCode::unsupported, "no CUDA backend");
}
Status CudaDecoderLM::copy_blocks(std::span<const BlockCopy>) { return Status(ErrorCode::unsupported, "no CUDA backend"); }

int32_t cuda_kv_blocks_that_fit(const ModelInfo&, int32_t, double) { return 0; }

}  // namespace llaisys::decoder
