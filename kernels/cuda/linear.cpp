#include "linear.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <type_traits>

#include "cublaslt.hpp"
#include "cuda_status.hpp"

namespace llaisys::cuda {
namespace {

Result<Layout> make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t raw = nullptr;
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                                            static_cast<uint64_t>(cols), ld));
  return Layout(raw);
}

template <class T>
Status set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  return cublas_status(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
                       "cublasLtMatmulDescSetAttribute");
}

// The largest power of two (at most 256) dividing the address: cuBLASLt's heuristics assume
// 256-byte aligned operands unless told otherwise, and an algorithm chosen for aligned pointers can
// refuse (or need) alignment a later call's pointers lack.
uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// Row-major y[M, N] = x[M, K] W[N, K]^T is, in cuBLAS's column-major terms, the [N, M] matrix
// y' = W'^T x' where W' is W read as a column-major [K, N] (ld K) and x' is x as [K, M] (ld x_stride).
Result<GemmPlan> make_plan(const CublasLt& lt, int64_t M, int64_t N, int64_t K, int64_t x_stride, int64_t y_stride,
                           bool has_bias, uint32_t align_a, uint32_t align_b, uint32_t align_c) {
  GemmPlan plan;
  cublasLtMatmulDesc_t raw_desc = nullptr;
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  plan.desc = MatmulDesc(raw_desc);
  LLAISYS_RETURN_IF_ERROR(set_attribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T));
  LLAISYS_RETURN_IF_ERROR(set_attribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  if (has_bias) {
    // D = alpha A B + beta C + bias, bias broadcast along the rows of D' (one value per feature n); the
    // pointer is set per call.
    LLAISYS_RETURN_IF_ERROR(set_attribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS));
    LLAISYS_RETURN_IF_ERROR(set_attribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_32F));
  }
  LLAISYS_ASSIGN_OR_RETURN(plan.a, make_layout(CUDA_R_16BF, K, N, K));
  LLAISYS_ASSIGN_OR_RETURN(plan.b, make_layout(CUDA_R_16BF, K, M, x_stride));
  LLAISYS_ASSIGN_OR_RETURN(plan.c, make_layout(CUDA_R_32F, N, M, y_stride));

  cublasLtMatmulPreference_t raw_pref = nullptr;
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&raw_pref));
  const Preference pref(raw_pref);
  const uint64_t workspace = lt.workspace_bytes();
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  for (const auto& [attribute, value] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
                                         std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
                                         std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
                                         std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}}) {
    LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref.get(), attribute, &value, sizeof(value)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(lt.handle(), plan.desc.get(), plan.a.get(),
                                                                plan.b.get(), plan.c.get(), plan.c.get(), pref.get(),
                                                                1, &result, &count));
  if (count == 0) {
    return make_error(ErrorCode::unsupported, "linear: cuBLASLt has no algorithm for M {} N {} K {}", M, N, K);
  }
  plan.algo = result.algo;
  return plan;
}

}  // namespace

Status linear(const CudaContext& ctx, const bf16_t* x, int64_t x_stride, int64_t M, int64_t K,
              const DeviceMatrix& weight, const float* bias, float* y, int64_t y_stride, bool accumulate) {
  const int64_t N = weight.rows;
  if (ctx.blas == nullptr) return make_error(ErrorCode::invalid_argument, "linear: no cuBLASLt handle");
  if (M < 0 || K <= 0 || N <= 0 || weight.cols != K || x_stride < K || y_stride < N || weight.data == nullptr) {
    return make_error(ErrorCode::invalid_argument, "linear: bad shape (M {}, K {}, W [{}, {}], x_stride {}, y_stride {})",
                      M, K, weight.rows, weight.cols, x_stride, y_stride);
  }
  if (M == 0) return {};

  CublasLt& lt = *ctx.blas;
  const uint32_t align_a = alignment_of(weight.data), align_b = alignment_of(x), align_c = alignment_of(y);
  const CublasLt::ShapeKey key{M, N, K, x_stride, y_stride, bias != nullptr, accumulate,
                               (align_a << 16) | (align_b << 8) | std::min<uint32_t>(align_c, 255)};
  auto found = lt.plans().find(key);
  if (found == lt.plans().end()) {
    LLAISYS_ASSIGN_OR_RETURN(GemmPlan plan, make_plan(lt, M, N, K, x_stride, y_stride, bias != nullptr,
                                                      align_a, align_b, align_c));
    found = lt.plans().emplace(key, std::move(plan)).first;
  }
  const GemmPlan& plan = found->second;
  if (bias != nullptr) {
    LLAISYS_RETURN_IF_ERROR(set_attribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
  }
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  return cublas_status(cublasLtMatmul(lt.handle(), plan.desc.get(), &alpha, weight.data, plan.a.get(), x,
                                      plan.b.get(), &beta, y, plan.c.get(), y, plan.c.get(), &plan.algo,
                                      lt.workspace(), lt.workspace_bytes(), ctx.stream),
                       "cublasLtMatmul");
}

}  // namespace llaisys::cuda
