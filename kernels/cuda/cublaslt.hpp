#pragma once
// A cuBLASLt handle with its workspace and a cache of GEMM plans.
//
// One CublasLt per stream (the workspace is used by every GEMM enqueued through it). The plan of a
// GEMM shape (its operation descriptor, the three matrix layouts and the algorithm asked of
// cublasLtMatmulAlgoGetHeuristic) is made once and kept, so the steady state (decode steps, CUDA
// graph capture) creates no descriptor and calls no heuristic: only the bias pointer is set per call.

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "cuda_status.hpp"
#include "device_memory.hpp"

namespace llaisys::cuda {

// unique_ptr deleters for the cuBLASLt descriptors.
struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { (void)cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { (void)cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// What a GEMM shape needs at every call: y' = W'^T x' (linear.cpp), A = the weight, B = x, C = D = y.
struct GemmPlan {
  MatmulDesc desc;
  Layout a, b, c;
  cublasLtMatmulAlgo_t algo{};
};

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

  // (M, N, K, ldx, ldy, has_bias, accumulate, operand alignments) -> plan.
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, uint32_t>;
  std::map<ShapeKey, GemmPlan>& plans() noexcept { return plans_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<std::byte> workspace_;
  std::map<ShapeKey, GemmPlan> plans_;
};

}  // namespace llaisys::cuda
