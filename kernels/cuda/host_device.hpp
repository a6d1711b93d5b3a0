#pragma once
// LLAISYS_CUDA_HOST_DEVICE: functions shared by host code and device code (the kernels' launch
// arguments and the sampling rows), empty outside nvcc.

#if defined(__CUDACC__)
#define LLAISYS_CUDA_HOST_DEVICE __host__ __device__
#else
#define LLAISYS_CUDA_HOST_DEVICE
#endif
