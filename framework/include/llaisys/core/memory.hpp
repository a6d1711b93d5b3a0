#pragma once
// Aligned host memory. 64-byte alignment suits every vector ISA we dispatch to (AVX-512, AMX tiles
// load rows of 64 bytes) and keeps rows of separate threads off each other's cache lines.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace llaisys {

inline constexpr std::size_t kHostAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Throws std::bad_alloc when the allocation fails. Contents are zeroed when `zero` is true.
  explicit AlignedBuffer(std::size_t bytes, bool zero = false);

  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_.get());
  }
  template <class T>
  std::span<T> span() {
    return {as<T>(), size_ / sizeof(T)};
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace llaisys
