#pragma once
// What every CUDA kernel call receives: the stream to enqueue on and, for GEMMs, the cuBLASLt
// handle with its workspace. Kernels only enqueue work; nothing here synchronises.

#include <cuda_runtime_api.h>

namespace llaisys::cuda {

class CublasLt;

struct CudaContext {
  cudaStream_t stream = nullptr;
  CublasLt* blas = nullptr;  // needed by linear() only
};

}  // namespace llaisys::cuda
