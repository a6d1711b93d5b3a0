#pragma once
// The fuzz targets' view of libFuzzer's bytes as typed values: take<T>() copies the next sizeof(T)
// bytes (zeros past the end, so every input is a valid one), small(n) is one byte mod n, unit() two
// bytes as a double in [0, 1).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace llaisys::fuzz {

class Bytes {
 public:
  Bytes(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T value{};
    const std::size_t n = std::min(sizeof(T), size_ - pos_);
    std::memcpy(&value, data_ + pos_, n);
    pos_ += n;
    return value;
  }
  uint32_t small(uint32_t bound) { return bound == 0 ? 0 : take<uint8_t>() % bound; }
  double unit() { return static_cast<double>(take<uint16_t>()) / 65536.0; }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace llaisys::fuzz
