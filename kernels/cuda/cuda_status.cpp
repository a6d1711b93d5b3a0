#include "cuda_status.hpp"

namespace llaisys::cuda {

Status cuda_status(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return {};
  ErrorCode code = ErrorCode::internal;
  switch (error) {
    case cudaErrorMemoryAllocation: code = ErrorCode::out_of_memory; break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidDevice: code = ErrorCode::unsupported; break;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidDevicePointer: code = ErrorCode::invalid_argument; break;
    default: break;
  }
  return make_error(code, "{}: {}: {}", what, cudaGetErrorName(error), cudaGetErrorString(error));
}

Status cublas_status(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  ErrorCode code = ErrorCode::internal;
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED: code = ErrorCode::out_of_memory; break;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_INITIALIZED: code = ErrorCode::unsupported; break;
    case CUBLAS_STATUS_INVALID_VALUE: code = ErrorCode::invalid_argument; break;
    default: break;
  }
  return make_error(code, "{}: cuBLAS status {}", what, static_cast<int>(status));
}

Status launch_status(std::string_view kernel) { return cuda_status(cudaGetLastError(), kernel); }

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device / no driver" error
    return 0;
  }
  return count;
}

}  // namespace llaisys::cuda
