#include "cublaslt.hpp"

namespace llaisys::cuda {

CublasLt::~CublasLt() {
  if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
}

CublasLt::CublasLt(CublasLt&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      workspace_(std::move(other.workspace_)),
      plans_(std::move(other.plans_)) {}

CublasLt& CublasLt::operator=(CublasLt&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    workspace_ = std::move(other.workspace_);
    plans_ = std::move(other.plans_);
  }
  return *this;
}

Result<CublasLt> CublasLt::create(std::size_t workspace_bytes) {
  CublasLt lt;
  LLAISYS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt.handle_));
  LLAISYS_ASSIGN_OR_RETURN(lt.workspace_, DeviceBuffer<std::byte>::allocate(workspace_bytes));
  return lt;
}

}  // namespace llaisys::cuda
