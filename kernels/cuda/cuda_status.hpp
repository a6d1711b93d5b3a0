#pragma once
// CUDA and cuBLAS(Lt) errors as llaisys Status values.
//
// Every host function of kernels/cuda returns Status (or Result<T>) and never throws: these
// functions end up inside dlopen()ed plugins, where an exception must not cross the ABI boundary
// (model/plugin_export.hpp). Launch errors are picked up with cudaGetLastError() right after each
// launch (launch_status); errors of the kernels themselves surface at the next synchronising call.

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string_view>

#include "llaisys/core/status.hpp"

namespace llaisys::cuda {

// ok for cudaSuccess; otherwise out_of_memory, unsupported (no device / driver too old / no kernel
// image for this GPU), invalid_argument or internal, with "<what>: <cuda error name>: <text>".
Status cuda_status(cudaError_t error, std::string_view what);
Status cublas_status(cublasStatus_t status, std::string_view what);

// The error of the last kernel launch on this thread (cudaGetLastError), if any.
Status launch_status(std::string_view kernel);

// Number of usable CUDA devices; 0 when there is none or no driver (never an error).
int device_count() noexcept;

}  // namespace llaisys::cuda

#define LLAISYS_CUDA_RETURN_IF_ERROR(expr) \
  LLAISYS_RETURN_IF_ERROR(::llaisys::cuda::cuda_status((expr), #expr))
#define LLAISYS_CUBLAS_RETURN_IF_ERROR(expr) \
  LLAISYS_RETURN_IF_ERROR(::llaisys::cuda::cublas_status((expr), #expr))
