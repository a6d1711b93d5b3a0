#include "llaisys/core/tensor.hpp"

#include <algorithm>
#include <stdexcept>

namespace llaisys {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxTensorRank)) {
    throw std::invalid_argument(fmt::format("tensor rank {} exceeds {}", dims.size(), kMaxTensorRank));
  }
  std::copy(dims.begin(), dims.end(), dims_.begin());
  rank_ = static_cast<int>(dims.size());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  return rank_ == other.rank_ && std::equal(dims().begin(), dims().end(), other.dims().begin());
}

std::string Shape::to_string() const { return fmt::format("[{}]", fmt::join(dims(), ", ")); }

namespace {
Shape contiguous_strides(const Shape& shape) {
  Shape strides = shape;
  int64_t stride = 1;
  for (int axis = shape.rank() - 1; axis >= 0; --axis) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  return strides;
}
}  // namespace

TensorView::TensorView(void* data, DType dtype, Shape shape, Device device)
    : data_(data), dtype_(dtype), shape_(shape), strides_(contiguous_strides(shape)), device_(device) {}

TensorView::TensorView(void* data, DType dtype, Shape shape, Shape strides, Device device)
    : data_(data), dtype_(dtype), shape_(shape), strides_(strides), device_(device) {
  if (strides.rank() != shape.rank()) throw std::invalid_argument("strides rank != shape rank");
}

bool TensorView::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

TensorView TensorView::slice(int axis, int64_t start, int64_t length) const {
  if (axis < 0 || axis >= rank() || start < 0 || length < 0 || start + length > shape_[axis]) {
    throw std::out_of_range(fmt::format("slice({}, {}, {}) of {}", axis, start, length, to_string()));
  }
  if (start * strides_[axis] % dtype_block_elements(dtype_) != 0) {
    throw std::out_of_range(fmt::format("slice({}, {}, {}) of {} splits a quantized block", axis, start, length,
                                        to_string()));
  }
  Shape shape = shape_;
  shape[axis] = length;
  auto* base = static_cast<std::byte*>(data_) + static_cast<std::ptrdiff_t>(dtype_bytes(dtype_, start * strides_[axis]));
  return TensorView(base, dtype_, shape, strides_, device_);
}

TensorView TensorView::row(int64_t index) const {
  if (rank() < 1 || index < 0 || index >= shape_[0]) {
    throw std::out_of_range(fmt::format("row({}) of {}", index, to_string()));
  }
  auto* base = static_cast<std::byte*>(data_) + static_cast<std::ptrdiff_t>(dtype_bytes(dtype_, index * strides_[0]));
  return TensorView(base, dtype_, Shape(shape_.dims().subspan(1)), Shape(strides_.dims().subspan(1)),
                    device_);
}

Result<TensorView> TensorView::reshape(Shape shape) const {
  if (!is_contiguous()) {
    return make_error(ErrorCode::invalid_argument, "reshape of a non-contiguous view {}", to_string());
  }
  if (shape.numel() != numel()) {
    return make_error(ErrorCode::invalid_argument, "cannot reshape {} to {}", to_string(),
                      shape.to_string());
  }
  return TensorView(data_, dtype_, shape, device_);
}

std::string TensorView::to_string() const {
  return fmt::format("{}{} {}", llaisys::to_string(dtype_), shape_.to_string(), device_.to_string());
}

}  // namespace llaisys
