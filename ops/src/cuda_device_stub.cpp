// The CUDA device context in a build without the CUDA backend (nvcc not found, or
// -DLLAISYS_ENABLE_CUDA=OFF): make_cuda_context explains; nothing else is reachable.

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

Result<std::unique_ptr<DeviceContext>> make_cuda_context(const CudaOptions& options) {
  return make_error(ErrorCode::unsupported,
                    "device cuda:{} requested, but this build of llaisys has no CUDA backend (configure where nvcc is "
                    "found, without -DLLAISYS_ENABLE_CUDA=OFF; see docs/CUDA.md)",
                    options.device);
}

}  // namespace llaisys::ops
