#pragma once
// A cuBLASLt handle with its workspace and a cache of chosen algorithms.
//
// One CublasLt per stream (the workspace is used by every GEMM enqueued through it). The algorithm
// for a GEMM shape is asked of cublasLtMatmulAlgoGetHeuristic once and remembered, so the steady
// state (decode steps, CUDA graph capture) calls no heuristic.

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "cuda_status.hpp"
#include "device_memory.hpp"

namespace llaisys::cuda {

class CublasLt {
 public:
  CublasLt() = default;
  ~CublasLt();
  CublasLt(CublasLt&& other) noexcept;
  CublasLt& operator=(CublasLt&& other) noexcept;
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  // 32 MiB of workspace is what cuBLAS recommends for Hopper.
  static Result<CublasLt> create(std::size_t workspace_bytes = std::size_t{32} << 20);

  cublasLtHandle_t handle() const noexcept { return handle_; }
  void* workspace() const noexcept { return workspace_.data(); }
  std::size_t workspace_bytes() const noexcept { return workspace_.bytes(); }

  // (M, N, K, ldx, ldy, has_bias, accumulate, operand alignments) -> algorithm.
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, uint32_t>;
  std::map<ShapeKey, cublasLtMatmulAlgo_t>& algorithms() noexcept { return algorithms_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<std::byte> workspace_;
  std::map<ShapeKey, cublasLtMatmulAlgo_t> algorithms_;
};

}  // namespace llaisys::cuda
