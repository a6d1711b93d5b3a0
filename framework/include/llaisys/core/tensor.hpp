#pragma once
// TensorView: a non-owning, typed, strided window onto memory on some device.
//
// Shapes are row-major and written outermost first, as in the comments throughout the code base:
// `// [num_tokens, hidden]`. Strides count elements, not bytes. A view never owns or frees memory;
// owners are AlignedBuffer (host), mmapped safetensors files, or a backend's device allocator.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "llaisys/core/device.hpp"
#include "llaisys/core/dtype.hpp"

namespace llaisys {

inline constexpr int kMaxTensorRank = 6;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
  int64_t numel() const;
  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[2, 3]"

 private:
  std::array<int64_t, kMaxTensorRank> dims_{};
  int rank_ = 0;
};

class TensorView {
 public:
  TensorView() = default;
  // A contiguous (row-major) view.
  TensorView(void* data, DType dtype, Shape shape, Device device = Device::cpu());
  TensorView(void* data, DType dtype, Shape shape, Shape strides, Device device);

  void* data() const { return data_; }
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  Device device() const { return device_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int axis) const { return shape_[axis]; }
  int64_t numel() const { return shape_.numel(); }
  // 0 for a quantized dtype (whose offsets and sizes come from dtype_bytes()).
  std::size_t element_size() const { return dtype_size(dtype_); }
  bool is_contiguous() const;
  // Bytes spanned by a contiguous view.
  std::size_t nbytes() const { return static_cast<std::size_t>(dtype_bytes(dtype_, numel())); }

  // The sub-view [start, start + length) along `axis` (no copy; never inside a quantized block).
  TensorView slice(int axis, int64_t start, int64_t length) const;
  // Drops the leading axis: row `index` of a [n, ...] view is a [...] view.
  TensorView row(int64_t index) const;
  // Same elements, new contiguous shape; the view must be contiguous and the counts must agree.
  Result<TensorView> reshape(Shape shape) const;

  std::string to_string() const;  // "bf16[896, 4864] cpu"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
  Shape strides_;
  Device device_;
};

}  // namespace llaisys
